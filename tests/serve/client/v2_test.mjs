// The Open Inference Protocol (v2) driven by curl: health, metadata, and outputs
// byte-identical to `tessera run` on the same input, as JSON and as binary tensor data, on
// the cpu and the tile device; text generation through v2; /metrics.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  MODELS, requireFixtures, timeCap, startServer, stopServer, curl, curlJson, tessera, seededBytes, tmpFile, metric,
  generateText,
} from './lib.mjs';

requireFixtures(MODELS.mobilenet, MODELS.aidreams);
timeCap(100);
const server = await startServer([
  '--model', `mb=${MODELS.mobilenet}`, '--model', `mbtile=${MODELS.mobilenet}:tile`, '--model', `mbrk=${MODELS.mobilenet}:rknpu`,
  '--model', `llm=${MODELS.aidreams}`, '--parallel', '3',
]);
const U = server.url;

assert.deepEqual(curlJson([`${U}/v2/health/live`]).json, { live: true });
assert.deepEqual(curlJson([`${U}/v2/health/ready`]).json, { ready: true });
assert.equal(curlJson([`${U}/v2/models/mb/ready`]).status, 200);
assert.equal(curlJson([`${U}/v2/models/mb/versions/1`]).json.name, 'mb');
assert.ok(curlJson([`${U}/v2`]).json.extensions.includes('binary_tensor_data'));
const meta = curlJson([`${U}/v2/models/mb`]).json;
assert.equal(meta.name, 'mb');
assert.equal(meta.inputs.length, 1);
assert.equal(meta.inputs[0].datatype, 'UINT8');
assert.deepEqual(meta.inputs[0].shape, [1, 128, 128, 3]);
assert.equal(meta.outputs[0].datatype, 'UINT8');
// No --labels: the ImageNet labels the model file carries (1001 for its 1001 classes).
assert.equal(meta.parameters.labels.length, 1001);
assert.equal(meta.parameters.labels[653], 'military uniform');
assert.equal(curlJson([`${U}/v2/models/llm`]).json.parameters?.labels, undefined);
const input = meta.inputs[0], output = meta.outputs[0];
const size = input.shape.reduce((a, b) => a * b, 1);

for (const [model, device] of [['mb', 'cpu'], ['mbtile', 'tile'], ['mbrk', 'rknpu']]) {
  for (const seed of [1, 2]) {
    // The reference: `tessera run` on the same bytes.
    const bytes = seededBytes(size, seed * 7919 + device.length);
    const inFile = tmpFile(`in-${model}-${seed}.bin`, bytes);
    const prefix = tmpFile(`ref-${model}-${seed}`);
    tessera(['run', MODELS.mobilenet, '-d', device, '-i', inFile, '-o', prefix]);
    const want = readFileSync(`${prefix}.0.bin`);

    // JSON tensors.
    const body = tmpFile(`req-${model}-${seed}.json`, JSON.stringify({
      id: `r${seed}`, inputs: [{ name: input.name, datatype: 'UINT8', shape: input.shape, data: [...bytes] }],
    }));
    const r = curlJson(['-X', 'POST', '-H', 'Content-Type: application/json', '--data-binary', `@${body}`, `${U}/v2/models/${model}/infer`]);
    assert.equal(r.status, 200, r.body.toString());
    assert.equal(r.json.id, `r${seed}`);
    assert.equal(r.json.outputs[0].name, output.name);
    assert.deepEqual(r.json.outputs[0].shape, output.shape);
    assert.ok(Buffer.from(r.json.outputs[0].data).equals(want), `${model}: JSON output equals tessera run`);

    // Binary tensor data extension, both ways.
    const header = JSON.stringify({
      inputs: [{ name: input.name, datatype: 'UINT8', shape: input.shape, parameters: { binary_data_size: size } }],
      outputs: [{ name: output.name, parameters: { binary_data: true } }],
    });
    const binFile = tmpFile(`req-${model}-${seed}.bin`, Buffer.concat([Buffer.from(header), bytes]));
    const b = curl(['-X', 'POST', '-H', 'Content-Type: application/octet-stream', '-H',
      `Inference-Header-Content-Length: ${Buffer.byteLength(header)}`, '--data-binary', `@${binFile}`,
      `${U}/v2/models/${model}/infer`]);
    assert.equal(b.status, 200, b.body.toString());
    const hl = Number(/inference-header-content-length: (\d+)/i.exec(b.headers)[1]);
    const rh = JSON.parse(b.body.subarray(0, hl).toString());
    assert.equal(rh.outputs[0].parameters.binary_data_size, want.length);
    assert.ok(b.body.subarray(hl).equals(want), `${model}: binary output byte-identical to tessera run`);
  }
  console.log(`${model} (${device}): JSON and binary outputs byte-identical to tessera run`);
}

// Three sessions sharing the rknpu device model (its three cores), six requests at once.
{
  const jobs = [0, 1, 2, 3, 4, 5].map(async (i) => {
    const bytes = seededBytes(size, 1000 + i);
    const prefix = tmpFile(`rk-ref-${i}`);
    tessera(['run', MODELS.mobilenet, '-d', 'rknpu', '-i', tmpFile(`rk-in-${i}.bin`, bytes), '-o', prefix]);
    const want = readFileSync(`${prefix}.0.bin`);
    const r = await fetch(`${U}/v2/models/mbrk/infer`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ inputs: [{ name: input.name, datatype: 'UINT8', shape: input.shape, data: [...bytes] }] }),
    });
    assert.equal(r.status, 200);
    assert.ok(Buffer.from((await r.json()).outputs[0].data).equals(want), `concurrent rknpu request ${i}`);
  });
  await Promise.all(jobs);
  console.log('mbrk: 6 concurrent requests over 3 rknpu sessions, each equal to tessera run -d rknpu');
}

// v2 on a GGUF model: text in, text out, equal to the greedy completion and `tessera generate`.
{
  const prompt = 'The little dog';
  const want = generateText(MODELS.aidreams, prompt, 24);
  const r = curlJson(['-X', 'POST', '-d', JSON.stringify({
    inputs: [{ name: 'text_input', datatype: 'BYTES', shape: [1], data: [prompt] }],
    parameters: { max_tokens: 24, temperature: 0 },
  }), `${U}/v2/models/llm/infer`]);
  assert.equal(r.status, 200, r.body.toString());
  assert.equal(r.json.outputs[0].name, 'text_output');
  assert.equal(r.json.outputs[0].data[0], want);
  assert.equal(curlJson([`${U}/v2/models/llm`]).json.inputs[0].datatype, 'BYTES');
  console.log(`llm via v2: ${JSON.stringify(want)}`);
}

// Metrics: the requests above are counted; latency histogram, busy time, queue gauges.
const m = curl([`${U}/metrics`]);
assert.equal(m.status, 200);
const text = m.body.toString();
assert.equal(metric(text, 'tessera_requests_total{model="mb",endpoint="v2_infer",code="200"}'), 4);
assert.equal(metric(text, 'tessera_requests_total{model="mbtile",endpoint="v2_infer",code="200"}'), 4);
assert.equal(metric(text, 'tessera_requests_total{model="mbrk",endpoint="v2_infer",code="200"}'), 10);
assert.ok(metric(text, 'tessera_device_busy_seconds_total{model="mbrk",device="rknpu"}') > 0);
assert.ok(metric(text, 'tessera_request_duration_seconds_count{endpoint="v2_infer"}') >= 9);
assert.ok(metric(text, 'tessera_device_busy_seconds_total{model="mbtile",device="tile"}') > 0);
assert.equal(metric(text, 'tessera_generated_tokens_total{model="llm"}'), 24);
assert.equal(metric(text, 'tessera_queue_depth{model="mb"}'), 0);
assert.match(text, /# TYPE tessera_request_duration_seconds histogram/);

const exit = await stopServer(server, 'SIGINT');
assert.deepEqual(exit, { code: 0, signal: null });
console.log('PASS v2 with curl');
