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
console.log('PASS shutdown');
