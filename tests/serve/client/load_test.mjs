// A bounded load test on loopback: 8 concurrent clients, 200 requests (half v2 tensor
// inferences, half greedy completions), cut off at a time limit so it always ends; every
// answer is checked against `tessera run` / `tessera generate`; reports throughput and
// p50/p99 latency.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  MODELS, requireFixtures, timeCap, startServer, stopServer, tessera, seededBytes, tmpFile, generateText, percentile,
  metric,
} from './lib.mjs';

requireFixtures(MODELS.mobilenet, MODELS.aidreams);
const CLIENTS = 8, REQUESTS = 200, TIME_LIMIT_S = 45;
timeCap(TIME_LIMIT_S + 40);

// References.
const size = 128 * 128 * 3;
const images = [21, 22, 23, 24].map((seed) => seededBytes(size, seed));
const imageRefs = images.map((img, i) => {
  const prefix = tmpFile(`load-ref-${i}`);
  tessera(['run', MODELS.mobilenet, '-i', tmpFile(`load-in-${i}.bin`, img), '-o', prefix]);
  return readFileSync(`${prefix}.0.bin`);
});
const prompts = ['Once upon a time', 'The little dog', 'In the garden', 'She looked at'];
const TOKENS = 16;
const textRefs = prompts.map((p) => generateText(MODELS.aidreams, p, TOKENS));

const server = await startServer([
  '--model', `mb=${MODELS.mobilenet}`, '--model', `llm=${MODELS.aidreams}`, '--parallel', '2', '--threads', '2',
  '--max-queue', '16',
]);
const binaryBodies = images.map((img) => {
  const header = JSON.stringify({
    inputs: [{ name: 'input', datatype: 'UINT8', shape: [1, 128, 128, 3], parameters: { binary_data_size: size } }],
    outputs: [{ name: 'MobilenetV1/Predictions/Reshape_1', parameters: { binary_data: true } }],
  });
  return { header: Buffer.byteLength(header), body: Buffer.concat([Buffer.from(header), img]) };
});

async function one(k) {
  if (k % 2 === 0) {
    const i = (k >> 1) % images.length;
    const r = await fetch(`${server.url}/v2/models/mb/infer`, {
      method: 'POST',
      headers: { 'Inference-Header-Content-Length': String(binaryBodies[i].header), 'Content-Type': 'application/octet-stream' },
      body: binaryBodies[i].body,
    });
    if (r.status !== 200) return `v2 status ${r.status}: ${await r.text()}`;
    const body = Buffer.from(await r.arrayBuffer());
    const hl = Number(r.headers.get('inference-header-content-length'));
    return body.subarray(hl).equals(imageRefs[i]) ? null : `v2 request ${k}: output differs from tessera run`;
  }
  const i = (k >> 1) % prompts.length;
  const r = await fetch(`${server.url}/v1/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'llm', prompt: prompts[i], max_tokens: TOKENS, temperature: 0 }),
  });
  if (r.status !== 200) return `completion status ${r.status}: ${await r.text()}`;
  const j = await r.json();
  return j.choices[0].text === textRefs[i] ? null : `completion ${k}: ${JSON.stringify(j.choices[0].text)} != ${JSON.stringify(textRefs[i])}`;
}

const latencies = [], failures = [];
let issued = 0;
const t0 = performance.now();
const deadline = t0 + TIME_LIMIT_S * 1000;
await Promise.all(Array.from({ length: CLIENTS }, async () => {
  while (issued < REQUESTS && performance.now() < deadline) {
    const k = issued++;
    const start = performance.now();
    let err;
    try {
      err = await one(k);
    } catch (e) {
      err = `request ${k}: ${e}`;
    }
    latencies.push(performance.now() - start);
    if (err) failures.push(err);
  }
}));
const seconds = (performance.now() - t0) / 1000;
latencies.sort((a, b) => a - b);
const metrics = await (await fetch(`${server.url}/metrics`)).text();
console.log(`load: ${latencies.length} requests (${CLIENTS} clients) in ${seconds.toFixed(2)} s: ` +
  `${(latencies.length / seconds).toFixed(1)} requests/s, latency p50 ${percentile(latencies, 50).toFixed(1)} ms, ` +
  `p99 ${percentile(latencies, 99).toFixed(1)} ms, max ${latencies.at(-1).toFixed(1)} ms; ${failures.length} failed or wrong; ` +
  `generation ${metric(metrics, 'tessera_generated_tokens_total{model="llm"}')} tokens`);
assert.deepEqual(failures, [], 'every answer right');
assert.ok(latencies.length === REQUESTS || performance.now() >= deadline);
assert.ok(latencies.length >= 50, `at least 50 requests within ${TIME_LIMIT_S} s`);
assert.deepEqual(await stopServer(server), { code: 0, signal: null });
console.log('PASS load');
