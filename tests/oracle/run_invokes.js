#!/usr/bin/env node
// Several Invoke calls on one TFLite interpreter, for operators with state (SVDF's variable
// activation_state persists from one Invoke to the next). The same interpreter as the
// oracle's run_tflite.js (builtin kernels only: its patched wasm, loaded from ORACLE_DIR),
// which invokes once per model.
//
//   node run_invokes.js ORACLE_DIR CASES.tsv
//     lines: PREFIX<TAB>MODEL<TAB>INVOKES<TAB>IN files, invoke-major (INVOKES x model inputs)
// Writes PREFIX.<invoke>.<k>.bin for every invoke and output k (raw, the model's dtypes).
'use strict';
const fs = require('fs');
const path = require('path');

const [oracleDir, casesFile] = process.argv.slice(2);
const WASM_DIR = path.join(oracleDir, 'node_modules/@tensorflow/tfjs-tflite/wasm');

function vec(v) { const a = []; for (let i = 0; i < v.size(); i++) a.push(v.get(i)); v.delete && v.delete(); return a; }

function runOne(M, out, model, invokes, ins) {
  const buf = fs.readFileSync(model);
  const ptr = M._malloc(buf.length); M.HEAPU8.set(buf, ptr);
  const r = M.TFLiteWebModelRunner.CreateFromBufferAndOptions(ptr, buf.length, { numThreads: 1, enableProfiling: false, maxProfilingBufferEntries: 0 });
  if (!r.ok()) throw new Error('create: ' + r.errorMessage());
  const runner = r.value();
  try {
    const I = vec(runner.GetInputs());
    if (I.length * invokes !== ins.length) throw new Error(`model has ${I.length} inputs, ${invokes} invokes, got ${ins.length} files`);
    for (let n = 0; n < invokes; n++) {
      I.forEach((t, k) => {
        const dst = t.data(); const src = fs.readFileSync(ins[n * I.length + k]);
        if (src.length !== dst.byteLength) throw new Error(`input ${k}: needs ${dst.byteLength} bytes, file has ${src.length}`);
        new Uint8Array(dst.buffer, dst.byteOffset, dst.byteLength).set(src);
      });
      if (!runner.Infer()) throw new Error(`Infer ${n} failed`);
      vec(runner.GetOutputs()).forEach((t, k) => {
        const o = t.data();
        fs.writeFileSync(`${out}.${n}.${k}.bin`, Buffer.from(new Uint8Array(o.buffer, o.byteOffset, o.byteLength)));
      });
    }
  } finally {
    runner.delete();
    M._free(ptr);
  }
}

async function main() {
  const factory = require(path.join(WASM_DIR, 'tflite_web_api_cc.js'));
  const M = await factory({ wasmBinary: fs.readFileSync(path.join(oracleDir, 'patch/tflite_web_api_cc_noxnn.wasm')),
                            print: s => console.log(s), printErr: s => console.error(s) });
  let failures = 0;
  for (const line of fs.readFileSync(casesFile, 'utf8').split('\n').filter(l => l.trim())) {
    const [out, model, invokes, ...ins] = line.split('\t');
    try { runOne(M, out, model, Number(invokes), ins); } catch (e) { failures++; console.error(`FAIL ${out}: ${e.message}`); }
  }
  process.exit(failures ? 1 : 0);
}
main().catch(e => { console.error(e); process.exit(2); });
