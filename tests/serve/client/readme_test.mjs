// The README's serving examples, run as written: the server command's arguments, the curl
// block (with bash) and the openai block (with node) against a server on a free port.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { MODELS, SHARED, TMP, requireFixtures, timeCap, startServer, stopServer, openaiClass } from './lib.mjs';

requireFixtures(MODELS.mobilenet, MODELS.aidreams);
timeCap(60);
openaiClass();  // skips when the client is not installed
const readme = readFileSync(join(process.env.TESSERA_SOURCE_DIR, 'README.md'), 'utf8');
function block(name) {
  const m = new RegExp(`<!-- serve-example: ${name}[^>]*-->\\n\`\`\`\\w*\\n([\\s\\S]*?)\`\`\``).exec(readme);
  assert.ok(m, `README has the serve-example block '${name}'`);
  return m[1];
}

// The start command: its arguments, with the fixtures' path and a free port.
const words = block('start').replace(/\\\n/g, ' ').split(/\s+/).filter((w) => w && w !== '&');
assert.deepEqual(words.slice(0, 2), ['./build/tessera', 'serve']);
const args = [];
for (let i = 2; i < words.length; ++i) {
  if (words[i] === '--port') {
    ++i;
    continue;
  }
  args.push(words[i].replace('../shared', SHARED));
}
const server = await startServer(args);
const env = { ...process.env, TESSERA_URL: server.url };

const curl = spawnSync('bash', ['-euo', 'pipefail', '-c', block('curl')], { cwd: TMP, env });
assert.equal(curl.status, 0, `curl block: ${curl.stderr}`);
const out = curl.stdout.toString();
assert.match(out, /"object":"text_completion"/);
assert.match(out, /"name":"mobilenet"/);
const scores = statSync(join(TMP, 'scores.bin')).size;
assert.ok(scores > 1001, `scores.bin holds the JSON header and 1001 scores (${scores} bytes)`);
console.log(`README curl block: ok (${scores} bytes of binary answer)`);

// The openai block runs from the client's folder so that `import 'openai'` resolves.
const script = join(process.env.SERVE_CLIENT_DIR, 'readme-example.mjs');
writeFileSync(script, block('openai'));
const js = spawnSync(process.execPath, [script], { env });
assert.equal(js.status, 0, `openai block: ${js.stderr}`);
assert.ok(js.stdout.toString().length > 0);
console.log(`README openai block: ${JSON.stringify(js.stdout.toString().slice(0, 80))}`);
assert.deepEqual(await stopServer(server), { code: 0, signal: null });
console.log('PASS README examples');
