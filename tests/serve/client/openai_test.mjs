// The OpenAI-compatible API driven by the `openai` npm client: greedy and seeded outputs equal
// `tessera generate`, streaming equals the whole answer, stop strings, usage, chat, and a
// stream cancelled by the client frees its session.
import assert from 'node:assert/strict';
import {
  MODELS, requireFixtures, timeCap, startServer, stopServer, generateText, openaiClass, metric, curl,
} from './lib.mjs';

requireFixtures(MODELS.aidreams, MODELS.llama3);
timeCap(100);
const OpenAI = openaiClass();
const CTX = 1024;
const prompt = 'Once upon a time';
// References first: `tessera generate` blocks this process, and a keep-alive connection
// left idle meanwhile may be closed by the server under the client's feet.
const greedy = {
  llm: generateText(MODELS.aidreams, prompt, 40, ['-c', String(CTX)]),
  llama3: generateText(MODELS.llama3, prompt, 12, ['-c', String(CTX)]),
};
const seeded = generateText(MODELS.aidreams, prompt, 30, ['-c', String(CTX), '--temp', '0.9', '-s', '1234', '--top-k', '40', '--top-p', '0.95']);
const server = await startServer([
  '--model', `llm=${MODELS.aidreams}`, '--model', `llama3=${MODELS.llama3}`,
  '--parallel', '2', '--ctx-size', String(CTX), '--chat-template', 'llm=chatml',
]);
const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });

// Models.
const list = await client.models.list();
assert.deepEqual(list.data.map((m) => m.id).sort(), ['llama3', 'llm']);

// Greedy completions equal `tessera generate` with the same context size.
for (const [model, n] of [['llm', 40], ['llama3', 12]]) {
  const want = greedy[model];
  const r = await client.completions.create({ model, prompt, max_tokens: n, temperature: 0 });
  assert.equal(r.object, 'text_completion');
  assert.equal(r.choices[0].text, want, `${model}: greedy text equals tessera generate`);
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, n);
  assert.ok(r.usage.prompt_tokens > 0);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + n);
  // Streamed: the deltas add up to the same text; the last chunk says why it finished.
  const stream = await client.completions.create({
    model, prompt, max_tokens: n, temperature: 0, stream: true, stream_options: { include_usage: true },
  });
  let text = '', finish = null, usage = null, chunks = 0;
  for await (const c of stream) {
    ++chunks;
    if (c.usage) usage = c.usage;
    if (c.choices.length) {
      text += c.choices[0].text;
      if (c.choices[0].finish_reason) finish = c.choices[0].finish_reason;
    }
  }
  assert.equal(text, want, `${model}: streamed text`);
  assert.equal(finish, 'length');
  assert.equal(usage.completion_tokens, n);
  assert.ok(chunks > 3, `streamed in pieces (${chunks} chunks)`);
  console.log(`${model}: greedy ${n} tokens equal tessera generate, streamed in ${chunks} chunks: ${JSON.stringify(want.slice(0, 60))}`);
}

// Sampling with a seed equals `tessera generate --temp --seed` (same top-k, top-p), twice.
{
  const want = seeded;
  for (let i = 0; i < 2; ++i) {
    const r = await client.completions.create({
      model: 'llm', prompt, max_tokens: 30, temperature: 0.9, seed: 1234, top_p: 0.95, top_k: 40,
    });
    assert.equal(r.choices[0].text, want, 'seeded sampling equals tessera generate');
  }
  console.log('seeded sampling equals tessera generate --temp 0.9 -s 1234');
}

// Stop strings: the text ends before the first stop string, finish_reason "stop".
{
  const full = (await client.completions.create({ model: 'llm', prompt, max_tokens: 40, temperature: 0 })).choices[0].text;
  const words = full.split(' ').filter((w) => w.length > 3);
  const stop = words[Math.floor(words.length / 2)];
  const cut = full.slice(0, full.indexOf(stop));
  const r = await client.completions.create({ model: 'llm', prompt, max_tokens: 40, temperature: 0, stop: [stop, 'zzzz'] });
  assert.equal(r.choices[0].text, cut);
  assert.equal(r.choices[0].finish_reason, 'stop');
  let streamed = '';
  for await (const c of await client.completions.create({ model: 'llm', prompt, max_tokens: 40, temperature: 0, stop, stream: true }))
    streamed += c.choices[0].text;
  assert.equal(streamed, cut);
  console.log(`stop ${JSON.stringify(stop)}: ${JSON.stringify(cut)}`);
}

// Chat completions (chatml template given per model): streamed equals whole.
{
  const messages = [{ role: 'system', content: 'You tell stories.' }, { role: 'user', content: 'Tell me about a cat.' }];
  const r = await client.chat.completions.create({ model: 'llm', messages, max_tokens: 20, temperature: 0 });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.ok(r.usage.prompt_tokens > 10, 'the template wrapped the messages');
  let text = '', role = null;
  for await (const c of await client.chat.completions.create({ model: 'llm', messages, max_tokens: 20, temperature: 0, stream: true })) {
    if (c.choices[0]?.delta?.role) role = c.choices[0].delta.role;
    text += c.choices[0]?.delta?.content ?? '';
  }
  assert.equal(role, 'assistant');
  assert.equal(text, r.choices[0].message.content);
  // llama3's file has no template and none is given: ChatML, llama.cpp's fallback.
  const fallback = await client.chat.completions.create({ model: 'llama3', messages, max_tokens: 2, temperature: 0 });
  assert.equal(fallback.choices[0].message.role, 'assistant');
  assert.ok(fallback.usage.prompt_tokens > 10, 'the ChatML template wrapped the messages');
  console.log(`chat: ${JSON.stringify(text.slice(0, 60))}`);
}

// Errors through the client: unknown model 404, prompt longer than the context 422.
await assert.rejects(client.completions.create({ model: 'nope', prompt: 'x' }), (e) => e.status === 404 && /unknown model 'nope'/.test(e.message));
await assert.rejects(client.completions.create({ model: 'llm', prompt: 'the cat sat '.repeat(CTX) }), (e) => e.status === 422 && /context/.test(e.message));

// A stream cancelled by the client stops its generation and frees the session.
{
  const before = await (await fetch(`${server.url}/metrics`)).text();
  const generatedBefore = metric(before, 'tessera_generated_tokens_total{model="llama3"}');
  const controller = new AbortController();
  const stream = await client.completions.create(
    { model: 'llama3', prompt, max_tokens: 1000, temperature: 0, stream: true }, { signal: controller.signal });
  let chunks = 0, shortDone = false;
  try {
    for await (const c of stream) {
      if (++chunks !== 3) continue;
      // Fairness: with --parallel 2 a short request is answered while the long one streams.
      const r = await client.completions.create({ model: 'llama3', prompt: 'Hi', max_tokens: 2, temperature: 0 });
      assert.equal(r.usage.completion_tokens, 2);
      shortDone = true;
      controller.abort();
    }
  } catch (e) {
    assert.ok(/abort/i.test(String(e.name) + String(e.message)), `aborted: ${e}`);
  }
  assert.ok(shortDone, 'a short request finished during the long stream');
  const t0 = Date.now();
  let active = 1, text = '';
  while (Date.now() - t0 < 10000) {
    text = await (await fetch(`${server.url}/metrics`)).text();
    active = metric(text, 'tessera_active_requests{model="llama3"}');
    if (active === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(active, 0, 'the cancelled generation left its session');
  const generated = metric(text, 'tessera_generated_tokens_total{model="llama3"}') - generatedBefore;
  assert.ok(generated < 200, `stopped early: ${generated} of 1000 tokens`);
  // The server still answers, and the freed session serves the next request.
  const r = await client.completions.create({ model: 'llama3', prompt, max_tokens: 2, temperature: 0 });
  assert.equal(r.usage.completion_tokens, 2);
  console.log(`cancelled stream: session freed after ${Date.now() - t0} ms, ${generated} of 1000 tokens generated`);
}

assert.equal(curl([`${server.url}/v2/health/live`]).status, 200);
const exit = await stopServer(server);
assert.deepEqual(exit, { code: 0, signal: null });
console.log('PASS openai client');
