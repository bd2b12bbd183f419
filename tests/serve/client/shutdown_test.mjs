// Graceful shutdown: SIGTERM while a stream is in flight stops accepting, lets the stream
// finish to its last token and [DONE], then exits 0.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { MODELS, requireFixtures, timeCap, startServer, curl } from './lib.mjs';

requireFixtures(MODELS.llama3);
timeCap(60);
const server = await startServer(['--model', `slow=${MODELS.llama3}`]);
const N = 12;
const body = JSON.stringify({ model: 'slow', prompt: 'Once upon a time', max_tokens: N, temperature: 0, stream: true });
let sent = false;
const stream = new Promise((resolve, reject) => {
  const req = request(`${server.url}/v1/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' } }, (res) => {
    let text = '';
    res.on('data', (d) => {
      text += d;
      if (!sent && text.includes('data: {')) {
        sent = true;
        server.proc.kill('SIGTERM');  // in the middle of the stream
      }
    });
    res.on('end', () => resolve(text));
    res.on('error', reject);
  });
  req.on('error', reject);
  req.end(body);
});
const text = await stream;
assert.ok(sent, 'SIGTERM was sent during the stream');
const events = text.split('\n\n').filter((e) => e.startsWith('data: '));
assert.equal(events.at(-1), 'data: [DONE]', 'the stream ran to its end');
const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)));
assert.equal(chunks.at(-1).choices[0].finish_reason, 'length', `all ${N} tokens were generated`);
const exit = await server.exited;
assert.deepEqual(exit, { code: 0, signal: null }, server.log());
assert.match(server.log(), /SIGTERM, finishing the requests in flight/);
// Nothing listens any more.
let refused = false;
try {
  curl([`${server.url}/v2/health/live`]);
} catch {
  refused = true;
}
assert.ok(refused, 'the port is closed after shutdown');
console.log(`SIGTERM during a stream: ${chunks.length} chunks and [DONE] delivered, exit 0`);

// A second signal does not wait: exit status 1 while a long generation still runs.
{
  const s2 = await startServer(['--model', `slow=${MODELS.llama3}`]);
  const long = fetch(`${s2.url}/v1/completions`, {
    method: 'POST',
    body: JSON.stringify({ model: 'slow', prompt: 'Once', max_tokens: 200, temperature: 0, stream: true }),
    headers: { 'Content-Type': 'application/json' },
  }).then(async (r) => { for await (const _ of r.body); }).catch(() => {});
  await new Promise((r) => setTimeout(r, 500));
  const t0 = Date.now();
  s2.proc.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 200));
  s2.proc.kill('SIGINT');
  assert.deepEqual(await s2.exited, { code: 1, signal: null }, s2.log());
  assert.ok(Date.now() - t0 < 5000, 'exited without finishing the 200 tokens');
  assert.match(s2.log(), /second signal/);
  await long;
  console.log(`second signal: exit 1 after ${Date.now() - t0} ms`);
}
console.log('PASS shutdown');
