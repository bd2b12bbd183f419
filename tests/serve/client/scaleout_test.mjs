// Scale-out: two servers on loopback ports behind a small round-robin client (what an nginx
// upstream or a KServe service does in front of several boards); both answer, with the
// same bytes as `tessera run` and the same text as each other.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  MODELS, requireFixtures, timeCap, startServer, stopServer, tessera, seededBytes, tmpFile, metric,
} from './lib.mjs';

requireFixtures(MODELS.mobilenet, MODELS.aidreams);
timeCap(90);
const size = 128 * 128 * 3;
const images = [11, 12, 13].map((seed) => seededBytes(size, seed));
const refs = images.map((img, i) => {
  const prefix = tmpFile(`rr-ref-${i}`);
  tessera(['run', MODELS.mobilenet, '-i', tmpFile(`rr-in-${i}.bin`, img), '-o', prefix]);
  return readFileSync(`${prefix}.0.bin`);
});
const args = ['--model', `mb=${MODELS.mobilenet}`, '--model', `llm=${MODELS.aidreams}`, '--parallel', '1', '--threads', '1'];
const backends = await Promise.all([startServer(args), startServer(args)]);
assert.notEqual(backends[0].port, backends[1].port);

// The round-robin client: request k goes to backend k mod 2.
let next = 0;
const pick = () => backends[next++ % backends.length];
const answeredBy = new Map();
const texts = new Set();
for (let k = 0; k < 12; ++k) {
  const b = pick();
  answeredBy.set(b.port, (answeredBy.get(b.port) ?? 0) + 1);
  if (((k >> 1) & 1) === 0) {  // each backend gets both kinds of request
    const img = k % images.length;
    const r = await fetch(`${b.url}/v2/models/mb/infer`, {
      method: 'POST',
      body: JSON.stringify({ inputs: [{ name: 'input', datatype: 'UINT8', shape: [1, 128, 128, 3], data: [...images[img]] }] }),
    });
    assert.equal(r.status, 200);
    assert.ok(Buffer.from((await r.json()).outputs[0].data).equals(refs[img]), `backend ${b.port}: output equals tessera run`);
  } else {
    const r = await fetch(`${b.url}/v1/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'llm', prompt: 'A bird', max_tokens: 12, temperature: 0 }),
    });
    assert.equal(r.status, 200);
    texts.add((await r.json()).choices[0].text);
  }
}
assert.equal(texts.size, 1, 'both backends give the same greedy text');
for (const b of backends) {
  const m = await (await fetch(`${b.url}/metrics`)).text();
  const served = metric(m, 'tessera_requests_total{model="mb",endpoint="v2_infer",code="200"}') +
    metric(m, 'tessera_requests_total{model="llm",endpoint="completions",code="200"}');
  assert.equal(served, 6, `backend ${b.port} answered its half:\n${m}`);
}
console.log(`round robin over ports ${backends.map((b) => b.port).join(', ')}: ${[...answeredBy.values()].join(' + ')} requests, identical answers`);
for (const b of backends) assert.deepEqual(await stopServer(b), { code: 0, signal: null });
console.log('PASS scale-out');
