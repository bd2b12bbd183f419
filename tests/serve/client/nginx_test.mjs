// Scale-out as docs/serving.md documents it: two `tessera serve` behind Debian's nginx, with
// the configuration taken out of docs/serving.md itself (its ```nginx block; only the
// addresses are changed: the boards become two loopback ports, `listen 80` a free loopback
// port). Concurrent OpenAI (the openai npm client, no client-side retries) and v2 requests
// go through nginx; one server is killed (SIGKILL) in the middle of the run, while it runs a
// completion of a slow model, and every request must still be answered, with the same bytes
// as `tessera run` and the same greedy text as `tessera generate`: nginx passes what the dead
// server did not answer to the other (proxy_next_upstream error ... non_idempotent). Only a
// stream already under way on the dead server may be cut (nginx cannot pass on an answer it
// has begun). nginx runs in the foreground (daemon off), with its files in a temporary
// folder; the test stops everything it started (bounded request count, a time cap).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  MODELS, requireFixtures, timeCap, startServer, stopServer, tessera, seededBytes, tmpFile, generateText, metric,
  openaiClass,
} from './lib.mjs';

requireFixtures(MODELS.mobilenet, MODELS.aidreams, MODELS.llama3);
const NGINX = process.env.NGINX_BIN || ['/usr/sbin/nginx', '/usr/local/sbin/nginx'].find((p) => existsSync(p));
if (!NGINX) {
  const required = process.env.TESSERA_REQUIRE_FIXTURES === '1';
  console.log(`${required ? 'FAIL' : 'SKIP'}: nginx is not installed (scripts/setup.sh installs it)`);
  process.exit(required ? 1 : 77);
}
const OpenAI = openaiClass();
timeCap(150);

// nginx's files: a folder of its own that its workers (user nobody when the master is root) can enter.
const NGX = mkdtempSync(join(tmpdir(), 'tessera-nginx-'));
chmodSync(NGX, 0o755);
let nginx = null;
process.on('exit', () => {
  if (nginx && nginx.exitCode === null && nginx.signalCode === null) nginx.kill('SIGTERM');  // the master stops its workers
  rmSync(NGX, { recursive: true, force: true });
});

// References.
const size = 128 * 128 * 3;
const images = [31, 32, 33].map((seed) => seededBytes(size, seed));
const imageRefs = images.map((img, i) => {
  const prefix = tmpFile(`ngx-ref-${i}`);
  tessera(['run', MODELS.mobilenet, '-i', tmpFile(`ngx-in-${i}.bin`, img), '-o', prefix]);
  return readFileSync(`${prefix}.0.bin`);
});
const prompts = ['Once upon a time', 'A bird', 'The little dog'];
const TOKENS = 16;
const textRefs = prompts.map((p) => generateText(MODELS.aidreams, p, TOKENS));
const SLOW_PROMPT = 'Once upon a time', SLOW_TOKENS = 16;
const slowRef = generateText(MODELS.llama3, SLOW_PROMPT, SLOW_TOKENS);

const args = ['--model', `mb=${MODELS.mobilenet}`, '--model', `llm=${MODELS.aidreams}`, '--model', `slow=${MODELS.llama3}`,
  '--chat-template', 'llm=chatml',
  '--parallel', '1', '--threads', '1'];
const backends = await Promise.all([startServer(args), startServer(args)]);

// The configuration of docs/serving.md, with loopback addresses.
const doc = readFileSync(join(process.env.TESSERA_SOURCE_DIR, 'docs', 'serving.md'), 'utf8');
const block = /```nginx\n([\s\S]*?)```/.exec(doc);
assert.ok(block, 'docs/serving.md has an ```nginx block');
const serverLines = block[1].match(/^\s*server\s+\S+:\d+[^;\n]*;.*$/gm);
assert.ok(serverLines && serverLines.length >= 2, 'the upstream lists its servers');
let site = block[1].replace(serverLines.slice(1).map((l) => l + '\n').join(''), '');
site = site.replace(serverLines[0],
  backends.map((b) => serverLines[0].replace(/(server\s+)\S+:\d+/, `$1127.0.0.1:${b.port}`)).join('\n'));
assert.match(site, /^\s*listen 80;/m, 'the server block listens on port 80');

async function freePort() {
  const s = createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}
const port = await freePort();
site = site.replace(/^(\s*)listen 80;/m, `$1listen 127.0.0.1:${port};`);
for (const b of backends) assert.ok(site.includes(`server 127.0.0.1:${b.port} max_fails=3 fail_timeout=10s;`), site);
writeFileSync(join(NGX, 'nginx.conf'), `# written by tests/serve/client/nginx_test.mjs
worker_processes 1;
pid ${NGX}/nginx.pid;
error_log ${NGX}/error.log notice;
events { worker_connections 256; }
http {
    log_format upstreams '$status $request_method $uri upstream=[$upstream_addr] statuses=[$upstream_status] test=$http_x_test';
    access_log ${NGX}/access.log upstreams;
    client_body_temp_path ${NGX}/client_body;
    proxy_temp_path ${NGX}/proxy;
    fastcgi_temp_path ${NGX}/fastcgi;
    uwsgi_temp_path ${NGX}/uwsgi;
    scgi_temp_path ${NGX}/scgi;
# ---- docs/serving.md ----
${site}
}
`);
const ngxArgs = ['-p', NGX, '-e', `${NGX}/error.log`, '-c', join(NGX, 'nginx.conf'), '-g', 'daemon off;'];
const check = spawnSync(NGINX, ['-t', ...ngxArgs], { encoding: 'utf8' });
assert.equal(check.status, 0, `nginx -t:\n${check.stdout}${check.stderr}\n${readFileSync(join(NGX, 'nginx.conf'), 'utf8')}`);
nginx = spawn(NGINX, ngxArgs, { stdio: ['ignore', 'inherit', 'inherit'] });
const nginxExited = new Promise((resolve) => nginx.on('exit', (code, signal) => resolve({ code, signal })));
const URL = `http://127.0.0.1:${port}`;
for (let i = 0; ; ++i) {
  assert.equal(nginx.exitCode, null, 'nginx is running');
  try {
    if ((await fetch(`${URL}/v2/health/ready`)).status === 200) break;
  } catch {}
  assert.ok(i < 100, 'nginx answers within 10 s');
  await new Promise((r) => setTimeout(r, 100));
}
console.log(`nginx ${port} -> tessera serve ${backends.map((b) => b.port).join(', ')}`);

// No client-side retries: whatever is retried, nginx retries.
const client = new OpenAI({ baseURL: `${URL}/v1`, apiKey: 'none', maxRetries: 0, timeout: 60000 });

// One request of kind k % 4: v2 JSON, OpenAI completion, v2 binary, OpenAI streamed chat.
// Returns null when the answer is right, else what is wrong.
async function one(k) {
  const i = k % 3;
  switch (k % 4) {
    case 0: {
      const r = await fetch(`${URL}/v2/models/mb/infer`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ inputs: [{ name: 'input', datatype: 'UINT8', shape: [1, 128, 128, 3], data: [...images[i]] }] }),
      });
      if (r.status !== 200) return `v2 JSON: status ${r.status}: ${await r.text()}`;
      return Buffer.from((await r.json()).outputs[0].data).equals(imageRefs[i]) ? null : 'v2 JSON: output differs from tessera run';
    }
    case 1: {
      const r = await client.completions.create({ model: 'llm', prompt: prompts[i], max_tokens: TOKENS, temperature: 0 });
      return r.choices[0].text === textRefs[i] ? null : `completion: ${JSON.stringify(r.choices[0].text)} != ${JSON.stringify(textRefs[i])}`;
    }
    case 2: {
      const header = JSON.stringify({
        inputs: [{ name: 'input', datatype: 'UINT8', shape: [1, 128, 128, 3], parameters: { binary_data_size: size } }],
        outputs: [{ name: 'MobilenetV1/Predictions/Reshape_1', parameters: { binary_data: true } }],
      });
      const r = await fetch(`${URL}/v2/models/mb/infer`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': String(Buffer.byteLength(header)) },
        body: Buffer.concat([Buffer.from(header), images[i]]),
      });
      if (r.status !== 200) return `v2 binary: status ${r.status}: ${await r.text()}`;
      const body = Buffer.from(await r.arrayBuffer());
      const hl = Number(r.headers.get('inference-header-content-length'));
      return body.subarray(hl).equals(imageRefs[i]) ? null : 'v2 binary: output differs from tessera run';
    }
    default: {
      // A stream whose answer has begun cannot be passed on: when the kill cuts one that
      // started before it, that is 'cut' (allowed, counted), not a failure.
      const startedBeforeKill = !killed;
      const messages = [{ role: 'user', content: prompts[i] }];
      const whole = await client.chat.completions.create({ model: 'llm', messages, max_tokens: TOKENS, temperature: 0 });
      let streamed = '', opened = false;
      try {
        const stream = await client.chat.completions.create({ model: 'llm', messages, max_tokens: TOKENS, temperature: 0, stream: true });
        opened = true;
        for await (const c of stream) streamed += c.choices[0]?.delta?.content ?? '';
      } catch (e) {
        if (opened && startedBeforeKill) return 'cut';
        throw e;
      }
      return streamed === whole.choices[0].message.content ? null : `chat: streamed ${JSON.stringify(streamed)} != ${JSON.stringify(whole.choices[0].message.content)}`;
    }
  }
}

// Concurrent clients, a bounded number of requests. Once KILL_AFTER are answered, a
// completion of the slow model (llama3, tens of ms a token) goes through nginx; the server
// found running it (its /metrics) is killed with SIGKILL while it does: nginx has sent that
// request and the server has read it, so nginx must pass it on (non_idempotent) and the
// other server answers it, with the same text.
const CLIENTS = 6, REQUESTS = 72, KILL_AFTER = 16;
const failures = [];
let issued = 0, answered = 0, cut = 0, killed = null, killing = null;
async function kill() {
  const held = client.completions.create({ model: 'slow', prompt: SLOW_PROMPT, max_tokens: SLOW_TOKENS, temperature: 0 },
    { headers: { 'X-Test': 'slow' } });
  held.catch(() => {});
  for (let poll = 0; !killed; ++poll) {
    for (const b of backends) {
      const running = metric(await (await fetch(`${b.url}/metrics`)).text(), 'tessera_active_requests{model="slow"}');
      if (running >= 1 || poll >= 2000) {
        b.proc.kill('SIGKILL');
        killed = b;
        console.log(`killed tessera serve ${b.port} (SIGKILL) running ${running} slow completion, ${issued - answered} other requests in flight`);
        break;
      }
    }
  }
  try {
    const text = (await held).choices[0].text;
    if (text !== slowRef) failures.push(`the slow completion: ${JSON.stringify(text)} != ${JSON.stringify(slowRef)}`);
  } catch (e) {
    failures.push(`the slow completion: ${e}`);
  }
}
await Promise.all(Array.from({ length: CLIENTS }, async () => {
  while (issued < REQUESTS) {
    const k = issued++;
    let err;
    try {
      err = await one(k);
    } catch (e) {
      err = `${e}`;
    }
    if (err === 'cut') ++cut;
    else if (err) failures.push(`request ${k}${killed ? ' (after the kill)' : ''}: ${err}`);
    if (++answered === KILL_AFTER) killing = kill();
  }
}));
await killing;
assert.deepEqual(failures, [], 'every request answered right');
assert.equal(answered, REQUESTS);
assert.ok(cut <= 1, `${cut} streams cut (at most one is in progress on a server, --parallel 1)`);
assert.deepEqual(await killed.exited, { code: null, signal: 'SIGKILL' });
const survivor = backends.find((b) => b !== killed);

// nginx stopped gracefully (SIGQUIT), so that its logs are complete.
nginx.kill('SIGQUIT');
assert.deepEqual(await nginxExited, { code: 0, signal: null });

// nginx's access log: every request 200, and some were passed on from the dead server.
const log = readFileSync(join(NGX, 'access.log'), 'utf8').trim().split('\n').filter((l) => !l.includes('/health/'));
assert.ok(log.length >= REQUESTS + 1, `nginx logged ${log.length} requests`);
const bad = log.filter((l) => !l.startsWith('200 '));
assert.deepEqual(bad, [], 'nginx answered every request with 200');
const passedOn = log.filter((l) => /upstream=\[[^\]]*, /.test(l));
assert.ok(passedOn.length >= 1, `nginx passed requests from the dead server to the other:\n${log.join('\n')}`);
assert.ok(passedOn.every((l) => l.includes(`127.0.0.1:${killed.port}, 127.0.0.1:${survivor.port}`)), passedOn.join('\n'));
// Among them the slow completion, which the dead server was running (a POST it had read:
// passed on only with non_idempotent).
const errors = readFileSync(join(NGX, 'error.log'), 'utf8');
const slowLine = log.filter((l) => l.endsWith(' test=slow'));
assert.equal(slowLine.length, 1, log.join('\n'));
assert.ok(slowLine[0].includes(`upstream=[127.0.0.1:${killed.port}, 127.0.0.1:${survivor.port}]`),
  `the slow completion was passed on from the dead server: ${slowLine[0]}\n${errors}`);
const byBackend = backends.map((b) => log.filter((l) => new RegExp(`127\\.0\\.0\\.1:${b.port}\\]`).test(l)).length);
assert.ok(byBackend[0] >= 1 && byBackend[1] >= 1, `both backends answered: ${byBackend}`);

// The survivor answered what nginx says it did.
const m = await (await fetch(`${survivor.url}/metrics`)).text();
const served = [['mb', 'v2_infer'], ['llm', 'completions'], ['llm', 'chat_completions'], ['slow', 'completions']].reduce((s, [model, e]) =>
  s + (metric(m, `tessera_requests_total{model="${model}",endpoint="${e}",code="200"}`) || 0), 0);
assert.equal(served, byBackend[backends.indexOf(survivor)], `the survivor's metrics count what nginx sent it:\n${m}`);
console.log(`${REQUESTS + 1} requests (${log.length} HTTP requests; a chat is two) through nginx from ${CLIENTS + 1} clients: ` +
  `${byBackend[backends.indexOf(killed)]} answered by ${killed.port} (killed), ${served} by ${survivor.port}, ` +
  `${passedOn.length} of them passed on by nginx from the dead one; ${cut} stream in progress cut; all else right`);
if (process.env.NGINX_TEST_LOG) console.log(errors, log.join('\n'));

assert.deepEqual(await stopServer(survivor), { code: 0, signal: null });
console.log('PASS nginx scale-out');
