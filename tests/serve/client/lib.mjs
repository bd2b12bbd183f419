// Shared pieces of the `tessera serve` integration tests: start the real server on a free
// loopback port, call curl and the tessera CLI, load the openai npm client, cap the time.
// Environment (set by tests/CMakeLists.txt): TESSERA_BIN, TESSERA_SHARED, SERVE_CLIENT_DIR; optional
// TESSERA_SERVE_BIN, the server to test when not TESSERA_BIN (e.g. a ThreadSanitizer build).
import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, writeFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';

export const BIN = process.env.TESSERA_BIN;
// The server binary, when it differs from the one making references (a sanitizer build).
export const SERVE_BIN = process.env.TESSERA_SERVE_BIN || BIN;
export const SHARED = process.env.TESSERA_SHARED;
export const MODELS = {
  aidreams: `${SHARED}/models/gguf/aidreams260K-Q8_0.gguf`,
  llama3: `${SHARED}/models/gguf/llama3-256d-2L-Q4_K_M-embQ3_K.gguf`,
  mobilenet: `${SHARED}/models/tflite/mobilenet_v1_0.25_128_quant.tflite`,
};
export const TMP = mkdtempSync(join(tmpdir(), 'tessera-serve-'));
process.on('exit', () => rmSync(TMP, { recursive: true, force: true }));

// Skips (CTest SKIP_RETURN_CODE 77) when a fixture or tool is absent; fails instead with
// TESSERA_REQUIRE_FIXTURES=1 (as CI runs the tests).
export function requireFixtures(...paths) {
  for (const p of [BIN, ...paths])
    if (!p || !existsSync(p)) {
      const required = process.env.TESSERA_REQUIRE_FIXTURES === '1';
      console.log(`${required ? 'FAIL' : 'SKIP'}: ${p} absent`);
      process.exit(required ? 1 : 77);
    }
}

// Fails the test (and kills the servers) when it runs longer than `seconds`.
const servers = [];
export function timeCap(seconds) {
  setTimeout(() => {
    console.error(`FAIL: time cap of ${seconds} s reached`);
    for (const s of servers) s.proc.kill('SIGKILL');
    process.exit(1);
  }, seconds * 1000).unref();
}
process.on('uncaughtException', (e) => {
  console.error('FAIL:', e);
  for (const s of servers) s.proc.kill('SIGKILL');
  process.exit(1);
});
process.on('unhandledRejection', (e) => {
  console.error('FAIL:', e);
  for (const s of servers) s.proc.kill('SIGKILL');
  process.exit(1);
});

// Starts `tessera serve ARGS --port 0` and resolves once it listens and (unless
// `waitReady` is false) has loaded its models, /v2/health/ready answering 200:
// {url, port, proc, log(), exited}.
export async function startServer(args, { waitReady = true } = {}) {
  const portFile = join(TMP, `port-${servers.length}-${Date.now()}`);
  const proc = spawn(SERVE_BIN, ['serve', '--host', '127.0.0.1', '--port', '0', '--port-file', portFile, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  proc.stdout.on('data', (d) => (log += d));
  proc.stderr.on('data', (d) => (log += d));
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const server = { proc, exited, log: () => log };
  servers.push(server);
  for (let i = 0; i < 600; ++i) {
    if (proc.exitCode !== null) throw new Error(`tessera serve exited ${proc.exitCode} before listening:\n${log}`);
    if (existsSync(portFile)) {
      const text = readFileSync(portFile, 'utf8');
      if (text.endsWith('\n')) {
        server.port = Number(text.trim());
        server.url = `http://127.0.0.1:${server.port}`;
        if (waitReady) await waitForReady(server);
        return server;
      }
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`tessera serve did not listen within 30 s:\n${log}`);
}

// Resolves once /v2/health/ready answers 200 (the models are loaded).
export async function waitForReady(server, seconds = 60) {
  for (let i = 0; i < seconds * 20; ++i) {
    if (server.proc.exitCode !== null) throw new Error(`tessera serve exited ${server.proc.exitCode} while loading:\n${server.log()}`);
    try {
      if ((await fetch(`${server.url}/v2/health/ready`)).status === 200) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`tessera serve did not load its models within ${seconds} s:\n${server.log()}`);
}

// Sends SIGTERM (or `signal`) and resolves with the exit {code, signal}.
export async function stopServer(server, signal = 'SIGTERM') {
  server.proc.kill(signal);
  return server.exited;
}

// curl ARGS: {status (HTTP), body (Buffer), headers (string)}.
export function curl(args, input) {
  const hfile = join(TMP, `headers-${Date.now()}-${Math.random()}`);
  const r = spawnSync('curl', ['-sS', '-D', hfile, '-w', '\n%{http_code}', ...args], {
    input,
    maxBuffer: 64 << 20,
  });
  if (r.status !== 0) throw new Error(`curl ${args.join(' ')} failed: ${r.stderr}`);
  const out = r.stdout;
  const nl = out.lastIndexOf(0x0a);
  const headers = existsSync(hfile) ? readFileSync(hfile, 'utf8') : '';
  return { status: Number(out.subarray(nl + 1).toString()), body: out.subarray(0, nl), headers };
}
export function curlJson(args, input) {
  const r = curl(args, input);
  return { ...r, json: JSON.parse(r.body.toString()) };
}

// Runs the tessera CLI; throws with its output when it fails.
export function tessera(args) {
  const r = spawnSync(BIN, args, { maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`tessera ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return r;
}

// The text `tessera generate` writes after the prompt (greedy unless `extra` says otherwise).
export function generateText(model, prompt, n, extra = []) {
  const out = tessera(['generate', model, '-p', prompt, '-n', String(n), ...extra]).stdout.toString();
  assert.ok(out.startsWith(prompt), `generate echoes the prompt: ${JSON.stringify(out.slice(0, 80))}`);
  assert.ok(out.endsWith('\n'));
  return out.slice(prompt.length, -1);
}

// The openai npm package installed into SERVE_CLIENT_DIR (scripts/serve_client_setup.sh).
export function openaiClass() {
  const dir = process.env.SERVE_CLIENT_DIR;
  if (!dir || !existsSync(join(dir, 'node_modules', 'openai'))) {
    console.log(`SKIP: the openai npm package is not installed in ${dir} (scripts/serve_client_setup.sh)`);
    process.exit(77);
  }
  const require = createRequire(join(dir, 'package.json'));
  return require('openai').OpenAI;
}

// Seeded bytes (xorshift32), never all zeros.
export function seededBytes(n, seed) {
  const out = Buffer.alloc(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; ++i) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

// A value of the Prometheus text for the sample line starting with `prefix`.
export function metric(text, prefix) {
  for (const line of text.split('\n')) if (line.startsWith(prefix + ' ')) return Number(line.slice(prefix.length + 1));
  return NaN;
}

export function tmpFile(name, data) {
  const p = join(TMP, name);
  if (data !== undefined) writeFileSync(p, data);
  return p;
}

export function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}
