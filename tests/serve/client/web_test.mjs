// The web page of `tessera serve` (GET /) in a real browser: Debian's chromium, headless,
// driven by playwright-core (scripts/web_client_setup.sh). A chat reply streams in and equals
// the API's greedy answer; a photo sent to the SSD detector gets boxes whose numbers equal
// the v2 API's answer for the same request, and the screenshot shows them where the API
// says; a classifier's top label equals the API's. The screenshot is kept in WEB_ARTIFACT_DIR.
import { createRequire } from 'node:module';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { inflateSync } from 'node:zlib';
import assert from 'node:assert/strict';
import { MODELS, SHARED, requireFixtures, timeCap, startServer, stopServer, curl, curlJson, tmpFile } from './lib.mjs';

const SSD = `${SHARED}/models/tflite/ssd_mobilenet_v1_coco_quant.tflite`;
const PHOTO = `${SHARED}/images/table.jpg`;
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
requireFixtures(MODELS.aidreams, MODELS.mobilenet, SSD, PHOTO, CHROMIUM);
timeCap(150);

const clientDir = process.env.WEB_CLIENT_DIR;
if (!clientDir || !existsSync(join(clientDir, 'node_modules', 'playwright-core'))) {
  console.log(`SKIP: playwright-core is not installed in ${clientDir} (scripts/web_client_setup.sh)`);
  process.exit(77);
}
const { chromium } = createRequire(resolve(clientDir, 'package.json'))('playwright-core');
const artifacts = process.env.WEB_ARTIFACT_DIR || tmpFile('web');
mkdirSync(artifacts, { recursive: true });

// The RGB(A) pixels of an 8-bit, non-interlaced PNG (what chromium's screenshots are).
function decodePng(buf) {
  let pos = 8, width = 0, height = 0, channels = 0;
  const idat = [];
  while (pos < buf.length) {
    const len = buf.readUInt32BE(pos), type = buf.toString('latin1', pos + 4, pos + 8);
    const data = buf.subarray(pos + 8, pos + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0); height = data.readUInt32BE(4);
      assert.equal(data[8], 8, 'PNG bit depth 8');
      assert.equal(data[12], 0, 'PNG not interlaced');
      channels = { 2: 3, 6: 4 }[data[9]];
      assert.ok(channels, `PNG colour type ${data[9]}`);
    } else if (type === 'IDAT') idat.push(data);
    pos += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels, px = Buffer.alloc(height * stride);
  for (let y = 0; y < height; ++y) {
    const f = raw[y * (stride + 1)], row = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; ++x) {
      const a = x >= channels ? px[y * stride + x - channels] : 0, b = y ? px[(y - 1) * stride + x] : 0;
      const c = x >= channels && y ? px[(y - 1) * stride + x - channels] : 0;
      const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
      const pred = [0, a, b, (a + b) >> 1, pa <= pb && pa <= pc ? a : pb <= pc ? b : c][f];
      px[y * stride + x] = (row[x] + pred) & 0xff;
    }
  }
  return { width, height, at: (x, y) => [...px.subarray(y * stride + x * channels, y * stride + x * channels + 3)] };
}

const server = await startServer([
  '-m', `llm=${MODELS.aidreams}`, '-m', `ssd=${SSD}`, '-m', `cls=${MODELS.mobilenet}`,
  '--chat-template', 'llm=llama2', '--labels', `ssd=${SHARED}/labels/coco_labels.txt`,
  '--labels', `cls=${SHARED}/labels/imagenet_labels.txt`, '--parallel', '1',
]);
const page_ = curl([`${server.url}/`]);
assert.equal(page_.status, 200);
assert.match(page_.headers, /content-type: text\/html/i);
assert.doesNotMatch(page_.body.toString(), /https?:\/\//, 'the page loads nothing from elsewhere');

const browser = await chromium.launch({
  executablePath: CHROMIUM, headless: true,
  args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const external = [];
  page.on('request', (r) => { if (!r.url().startsWith(server.url)) external.push(r.url()); });
  const consoleErrors = [];
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  // Load progress: the first answers of /v1/models are the server's own with the models
  // turned back to "loading" (as a server still loading answers, tests/serve/client/
  // loading_test.mjs); the page shows a bar per loading model and starts once none is left.
  const fakeProgress = [0.25, 0.5, 0.75];
  const shownProgress = [];
  await page.route('**/v1/models', async (route) => {
    const response = await route.fetch();
    const list = await response.json();
    const p = fakeProgress.shift();
    if (p !== undefined)
      for (const m of list.data) Object.assign(m.tessera, { state: m.id === 'ssd' ? 'ready' : 'loading', progress: m.id === 'ssd' ? 1 : p });
    await route.fulfill({ response, json: list });
  });
  await page.goto(`${server.url}/`);
  for (const p of [0.25, 0.5, 0.75]) {
    await page.waitForFunction((v) => document.querySelector('#loading progress')?.value === v, p, { timeout: 5000 });
    shownProgress.push(await page.evaluate(() => [...document.querySelectorAll('#loading progress')].map(
      (e) => `${e.dataset.model}=${e.value}`).join(',')));
  }
  assert.deepEqual(shownProgress, ['llm=0.25,cls=0.25', 'llm=0.5,cls=0.5', 'llm=0.75,cls=0.75']);
  assert.match(await page.textContent('#loading'), /loading llm: 75%/);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
  assert.equal(await page.isHidden('#loading'), true, 'the progress bars go once every model is loaded');
  await page.unroute('**/v1/models');
  assert.match(await page.textContent('#status'), /3 models/);

  // Chat, streamed, greedy: the reply equals the API's non-streamed answer.
  await page.fill('#max-tokens', '24');
  await page.fill('#temperature', '0');
  await page.fill('#prompt', 'Tell me a story.');
  await page.click('#send');
  await page.waitForSelector('.msg.assistant[data-done="1"]', { timeout: 30000 });
  const reply = await page.textContent('.msg.assistant');
  const api = curlJson(['-H', 'Content-Type: application/json', `${server.url}/v1/chat/completions`, '-d', JSON.stringify({
    model: 'llm', messages: [{ role: 'user', content: 'Tell me a story.' }], max_tokens: 24, temperature: 0,
  })]);
  assert.equal(api.status, 200);
  assert.ok(reply.trim().length > 0, 'a visible chat reply appears');
  assert.equal(reply, api.json.choices[0].message.content);
  console.log(`chat: ${JSON.stringify(reply.slice(0, 60))}`);

  // The detector: the page's request, replayed to the API, gives the boxes the page lists.
  await page.selectOption('#vision-model', 'ssd');
  await page.fill('#threshold', '0.3');
  const [inferReq] = await Promise.all([
    page.waitForRequest((r) => r.url().endsWith('/v2/models/ssd/infer')),
    page.setInputFiles('#image', PHOTO),
  ]);
  await page.waitForSelector('#view[data-done="1"]', { timeout: 30000 });
  const v2 = curlJson(['-H', 'Content-Type: application/json', `${server.url}/v2/models/ssd/infer`, '--data-binary', '@-'],
                      inferReq.postData());
  assert.equal(v2.status, 200);
  const [boxes, classes, scores, count] = v2.json.outputs.map((o) => o.data);
  const expected = [];
  for (let i = 0; i < count[0]; ++i)
    if (scores[i] >= 0.3) expected.push({ i, cls: classes[i], score: scores[i], box: boxes.slice(4 * i, 4 * i + 4) });
  assert.ok(expected.length > 0, 'the API finds boxes of score >= 0.3 in table.jpg');
  const listed = await page.$$eval('#detections tr[data-index]', (rows) => rows.map((r) => ({
    i: Number(r.dataset.index), cls: Number(r.dataset.cls), score: Number(r.dataset.score), box: JSON.parse(r.dataset.box),
  })));
  assert.deepEqual(listed, expected);
  const labels = await page.$$eval('#detections tr[data-index] td:first-child', (tds) => tds.map((t) => t.textContent));
  console.log(`boxes: ${expected.length} (${labels.join(', ')})`);

  // The screenshot: the page's magenta outline lies on each box's left edge where the API puts it.
  const shotPath = join(artifacts, 'web_detect.png');
  await page.screenshot({ path: join(artifacts, 'web_page.png'), fullPage: true });
  const shot = decodePng(await page.locator('#view').screenshot({ path: shotPath }));
  const canvas = await page.$eval('#view', (c) => ({ w: c.width, h: c.height }));
  let onEdge = 0;
  for (const e of expected) {
    const [y0, x0, y1] = e.box;
    const sx = shot.width / canvas.w, sy = shot.height / canvas.h;
    const cx = Math.round(x0 * canvas.w * sx), cy = Math.round(((y0 + y1) / 2) * canvas.h * sy);
    let hit = false;
    for (let dy = -2; dy <= 2 && !hit; ++dy)
      for (let dx = -3; dx <= 3 && !hit; ++dx) {
        const x = Math.min(shot.width - 1, Math.max(0, cx + dx)), y = Math.min(shot.height - 1, Math.max(0, cy + dy));
        const [r, g, b] = shot.at(x, y);
        hit = r > 200 && g < 90 && b > 200;
      }
    if (hit) ++onEdge;
    else console.log(`box ${e.i} (${e.box}): no magenta at its left edge (${cx}, ${cy}) of the screenshot`);
  }
  assert.equal(onEdge, expected.length, 'every box is drawn where the API says');
  console.log(`screenshot: ${shotPath} (${shot.width}x${shot.height}), ${onEdge} boxes on their edges`);

  // The classifier, same photo: the page's top five equal the API's.
  const [clsReq] = await Promise.all([
    page.waitForRequest((r) => r.url().endsWith('/v2/models/cls/infer')),
    page.selectOption('#vision-model', 'cls'),
  ]);
  await page.waitForSelector('#view[data-done="1"]', { timeout: 30000 });
  const c = curlJson(['-H', 'Content-Type: application/json', `${server.url}/v2/models/cls/infer`, '--data-binary', '@-'],
                     clsReq.postData());
  const values = c.json.outputs[0].data;
  const top = await page.$$eval('#classes tr[data-cls]', (rows) => rows.map((r) => [Number(r.dataset.cls), Number(r.dataset.value)]));
  assert.equal(top.length, 5);
  assert.equal(top[0][1], Math.max(...values));
  for (const [i, v] of top) assert.equal(values[i], v);
  console.log(`classifier: top ${await page.textContent('#classes tr[data-cls] td')}`);

  assert.deepEqual(external, [], 'no request leaves the server');
  assert.deepEqual(consoleErrors, []);
} finally {
  await browser.close();
}
const exit = await stopServer(server);
assert.equal(exit.code, 0, server.log());
console.log('PASS');
