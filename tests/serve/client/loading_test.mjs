// A model that takes a while to load: `tessera serve` listens first and loads after. While
// it loads, GET /v1/models lists it with state "loading" and a progress that only rises,
// /v2/health/ready, /v2/models/{name}/ready and /health answer 503, and a request for it
// gets 503 naming its progress; then everything answers 200 and a completion works. The
// log says "listening" before the progress lines and "ready" after them. A second server
// whose model cannot be loaded exits non-zero with the loader's error.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { requireFixtures, timeCap, startServer, stopServer, waitForReady, tessera, TMP, curl } from './lib.mjs';

requireFixtures();
timeCap(150);

// 166 MB of q8_0 weights, 4 sessions: about a second to load on a development machine.
const big = join(TMP, 'big-q8_0.gguf');
tessera(['gguf-synth', '--dim', '1024', '--layers', '8', '--heads', '16', '--kv-heads', '4', '--ffn', '2816',
         '--vocab', '32000', '--ctx', '256', '--type', 'q8_0', big]);

const server = await startServer(['-m', `big=${big}`, '--parallel', '4', '--chat-template', 'chatml'],
                                  { waitReady: false });
const U = server.url;
let loadingSeen = 0, last = -1;
const chat = JSON.stringify({ model: 'big', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
for (let i = 0; i < 3000; ++i) {
  const list = await (await fetch(`${U}/v1/models`)).json();
  assert.equal(list.data.length, 1);
  const m = list.data[0];
  assert.equal(m.id, 'big');
  assert.equal(m.tessera.kind, 'llm');
  assert.ok(m.tessera.progress >= last, `progress went from ${last} to ${m.tessera.progress}`);
  last = m.tessera.progress;
  if (m.tessera.state === 'ready') {
    assert.equal(m.tessera.progress, 1);
    break;
  }
  assert.equal(m.tessera.state, 'loading');
  // 1 is possible for a moment: the load has reported its end, the server not yet swapped it in.
  assert.ok(m.tessera.progress >= 0 && m.tessera.progress <= 1, `${m.tessera.progress}`);
  // Requests while it loads (it may finish in between: then they are answered as usual).
  const ready = await fetch(`${U}/v2/health/ready`);
  const health = await fetch(`${U}/health`);
  const modelReady = await fetch(`${U}/v2/models/big/ready`);
  const r = await fetch(`${U}/v1/chat/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: chat });
  const body = await r.json();
  if (r.status === 503) {
    ++loadingSeen;
    assert.match(body.error.message, /model 'big' is loading \(\d+%\)/);
    assert.ok(r.headers.get('retry-after'), 'a 503 says when to retry');
    assert.equal(ready.status, 503);
    assert.equal(health.status, 503);
    assert.equal(modelReady.status, 503);
    assert.deepEqual(await modelReady.json(), { name: 'big', ready: false });
  } else {
    assert.equal(r.status, 200, JSON.stringify(body));
  }
  await new Promise((res) => setTimeout(res, 10));
}
assert.ok(loadingSeen > 0, 'the loading state was never seen: the model loaded before the first request');
await waitForReady(server);
assert.equal(curl([`${U}/health`]).status, 200);
assert.equal(curl([`${U}/v2/models/big/ready`]).status, 200);
const done = curl(['-X', 'POST', '-H', 'Content-Type: application/json', '-d', chat, `${U}/v1/chat/completions`]);
assert.equal(done.status, 200, done.body.toString());
const log = server.log();
const at = (s) => {
  const p = log.indexOf(s);
  assert.ok(p >= 0, `no '${s}' in the log:\n${log}`);
  return p;
};
assert.ok(at('listening on') < at('loading big-q8_0.gguf: 0%'));
assert.ok(at('loading big-q8_0.gguf: 0%') < at('loading big-q8_0.gguf: 100% ('));
assert.ok(at('loading big-q8_0.gguf: 100% (') < at('ready: 1 model loaded'));
assert.equal((await stopServer(server)).code, 0);
console.log(`loading seen in ${loadingSeen} polls; ready after progress ${last}`);

// A model that fails to load stops the server with the loader's error.
const bad = join(TMP, 'bad.gguf');
(await import('node:fs')).writeFileSync(bad, Buffer.from('GGUF\x03\x00\x00\x00not a real file'));
const failing = await startServer(['-m', `bad=${bad}`], { waitReady: false });
const exit = await failing.exited;
assert.equal(exit.code, 1);
assert.match(failing.log(), /tessera: error: .*bad\.gguf/);
console.log('PASS');
