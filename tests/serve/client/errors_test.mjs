// Every bad request of docs/serving.md "Errors": a clear HTTP status with a JSON message,
// and the server keeps serving after each.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  MODELS, requireFixtures, timeCap, startServer, stopServer, curl, curlJson, seededBytes, tmpFile, metric,
} from './lib.mjs';

requireFixtures(MODELS.mobilenet, MODELS.aidreams, MODELS.llama3);
timeCap(100);
const MAX_BODY = 120000;  // the mobilenet input (49152 bytes) fits as binary, not as JSON text
// The 'slow' model decodes on the rknpu device model (about 5 tokens/s of host time here):
// slow enough, whatever the cpu kernels' speed, that the queue below stays full while a
// request runs and that a stream is still going when its client disconnects (its 256-token
// context would let the cpu finish a whole generation within curl's 2 s).
const server = await startServer([
  '--model', `mb=${MODELS.mobilenet}`, '--model', `llm=${MODELS.aidreams}`, '--model', `slow=${MODELS.llama3}:rknpu`,
  '--parallel', '1', '--max-queue', '1', '--max-body', String(MAX_BODY),
]);
const U = server.url;

function expectError(args, status, pattern, input) {
  const r = curl(args, input);
  assert.equal(r.status, status, `${args.join(' ')}: ${r.body}`);
  const j = JSON.parse(r.body.toString());
  assert.equal(j.error.code, status);
  assert.match(j.error.message, pattern);
  // Still serving.
  assert.equal(curl([`${U}/v2/health/live`]).status, 200);
  console.log(`${status} ${j.error.message}`);
  return r;
}
const post = (path, body) => ['-X', 'POST', '-H', 'Content-Type: application/json', '--data-binary', body, `${U}${path}`];
const good = { name: 'input', datatype: 'UINT8', shape: [1, 128, 128, 3] };
const meta = curlJson([`${U}/v2/models/mb`]).json;
good.name = meta.inputs[0].name;
const data = [...seededBytes(128 * 128 * 3, 5)];

// Malformed JSON (400), on both protocols.
expectError(post('/v1/completions', '{"model": "llm", "prompt": '), 400, /malformed JSON \(\d+ bytes\): parse error at line 1/);
expectError(post('/v2/models/mb/infer', '{"inputs": [}'), 400, /malformed JSON/);
expectError(post('/v1/completions', '[1,2]'), 400, /must be a JSON object/);
expectError(post('/v1/completions', JSON.stringify({ model: 'llm', prompt: 'x', max_tokens: 'ten' })), 400, /'max_tokens'/);
expectError(post('/v1/completions', JSON.stringify({ model: 'llm', prompt: 'x', temperature: 5 })), 400, /'temperature'/);
// Unknown model (404), unknown route (404).
expectError(post('/v1/completions', JSON.stringify({ model: 'gpt-4', prompt: 'x' })), 404, /unknown model 'gpt-4'/);
expectError(post('/v2/models/gpt-4/infer', JSON.stringify({ inputs: [] })), 404, /unknown model 'gpt-4'/);
expectError([`${U}/v2/models/gpt-4`], 404, /unknown model/);
expectError([`${U}/v3/nothing`], 404, /no endpoint GET \/v3\/nothing/);
// A tensor model asked for text.
expectError(post('/v1/completions', JSON.stringify({ model: 'mb', prompt: 'x' })), 400, /tensor model/);
// Wrong tensor shape, datatype, element count (422).
const shapeBody = tmpFile('shape.json', JSON.stringify({ inputs: [{ ...good, shape: [1, 64, 64, 3], data: data.slice(0, 64 * 64 * 3) }] }));
expectError(post('/v2/models/mb/infer', `@${shapeBody}`), 422, /shape \[1,64,64,3\] but the model takes \[1,128,128,3\]/);
expectError(post('/v2/models/mb/infer', JSON.stringify({ inputs: [{ ...good, datatype: 'FP32', data: [1] }] })), 422, /datatype FP32 but the model takes UINT8/);
const countBody = tmpFile('count.json', JSON.stringify({ inputs: [{ ...good, data: data.slice(0, 100) }] }));
expectError(post('/v2/models/mb/infer', `@${countBody}`), 422, /data elements but shape/);
expectError(post('/v2/models/mb/infer', JSON.stringify({ inputs: [{ ...good, name: 'nope', data: [1] }] })), 422, /no such input/);
// Oversized bodies (413): the limit is --max-body.
const big = tmpFile('big.json', JSON.stringify({ inputs: [{ ...good, data }] }));
expectError(post('/v2/models/mb/infer', `@${big}`), 413, new RegExp(`limit of ${MAX_BODY} bytes`));
expectError(post('/v1/completions', `@${tmpFile('big2.json', JSON.stringify({ model: 'llm', prompt: 'a'.repeat(MAX_BODY) }))}`), 413, /limit/);
// A large body without a JSON content type (curl -d sends form-urlencoded): a 413 that says so.
expectError(['-X', 'POST', '--data-binary', `@${tmpFile('form.txt', JSON.stringify({ model: 'llm', prompt: 'a'.repeat(9000) }))}`,
  `${U}/v1/completions`], 413, /form-urlencoded body is limited to 8192 bytes/);
// Prompt longer than the context (422).
expectError(post('/v1/completions', JSON.stringify({ model: 'llm', prompt: 'the cat sat on the mat '.repeat(100) })), 422, /the prompt has \d+ tokens but the context holds 128/);

// Queue full (503 + Retry-After): one session, one queue place. A first request runs (the
// metrics say so: it has left the queue), then three more at once on the slow model: the
// first of them to arrive takes the queue place and the others get 503 while it waits.
// (Sending all four at once left it to the session thread whether the first had left the
// queue before the second arrived: on a busy machine all three others got 503.)
{
  const request = (maxTokens) => fetch(`${U}/v1/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'slow', prompt: 'Once', max_tokens: maxTokens, temperature: 0 }),
  }).then(async (r) => ({ status: r.status, retry: r.headers.get('retry-after'), json: await r.json() }));
  const first = request(24);
  const t0 = Date.now();
  let running = 0;
  while (Date.now() - t0 < 10000) {
    running = metric((await (await fetch(`${U}/metrics`)).text()), 'tessera_active_requests{model="slow"}');
    if (running === 1) break;
    await new Promise((res) => setTimeout(res, 10));
  }
  assert.equal(running, 1, 'the first request is running');
  const results = await Promise.all([0, 1, 2].map(() => request(6)));
  const head = await first;
  assert.equal(head.status, 200);
  assert.equal(head.json.usage.completion_tokens, 24);
  const statuses = results.map((r) => r.status).sort();
  assert.ok(statuses.filter((s) => s === 200).length >= 1, `the queued request is served: ${statuses}`);
  const busy = results.filter((r) => r.status === 503);
  assert.ok(busy.length >= 1, `a full queue answers 503: ${statuses}`);
  for (const r of busy) {
    assert.equal(r.retry, '1');
    assert.match(r.json.error.message, /queue limit/);
  }
  for (const r of results.filter((x) => x.status === 200)) assert.equal(r.json.usage.completion_tokens, 6);
  console.log(`queue full: statuses ${statuses} behind a running request, Retry-After ${busy[0].retry}`);
}

// A client that disconnects in the middle of a stream (curl cut off by --max-time): the
// generation stops, the session is freed, the next request is served.
{
  const r = spawnSync('curl', ['-sN', '--max-time', '2', '-X', 'POST', '-H', 'Content-Type: application/json', '-d',
    JSON.stringify({ model: 'slow', prompt: 'Once', max_tokens: 2000, temperature: 0, stream: true }), `${U}/v1/completions`]);
  assert.equal(r.status, 28, 'curl gave up by its time limit');
  assert.match(r.stdout.toString(), /^data: \{/, 'the stream had started');
  const t0 = Date.now();
  let active = 1, text = '';
  while (Date.now() - t0 < 10000) {
    text = curl([`${U}/metrics`]).body.toString();
    active = metric(text, 'tessera_active_requests{model="slow"}');
    if (active === 0) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  assert.equal(active, 0, 'the session was freed');
  const tokens = metric(text, 'tessera_generated_tokens_total{model="slow"}');
  assert.ok(tokens < 100, `the generation stopped early (${tokens} tokens in all)`);
  const ok = curlJson(post('/v1/completions', JSON.stringify({ model: 'slow', prompt: 'Once', max_tokens: 2, temperature: 0 })));
  assert.equal(ok.status, 200);
  console.log(`disconnect: session freed ${Date.now() - t0} ms after curl left; ${tokens} tokens generated in all`);
}

const exit = await stopServer(server);
assert.deepEqual(exit, { code: 0, signal: null });
console.log('PASS bad requests');
