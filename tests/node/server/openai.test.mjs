// `ztvm serve` driven by the official openai npm SDK: if the SDK can parse what we send, real
// applications can too. The default model writes King James Bible text and cannot follow
// instructions, so the tests check shapes, token accounting and determinism, never meaning.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { startServer } from './harness.mjs';
import { postJSON, healthStatus, manyWords } from './util.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const QWEN3_TEMPLATE = path.join(process.env.ZTVM_TESTDATA ?? path.resolve(here, '../../../testdata'),
  'chat-templates/Qwen-Qwen3-0.6B.jinja');

// No retries: a retried 5xx would hide a server bug.
const client = (url, apiKey = 'unused') => new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0, timeout: 120000 });

const USER = [{ role: 'user', content: 'And God said, Let there be light' }];
const PROMPT = 'In the beginning God created';

const WEATHER_TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
// A finished tool round: the assistant asked for the tool, the tool answered.
const TOOL_ROUND = [
  { role: 'user', content: 'What is the weather in Jerusalem?' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Jerusalem"}' } }],
  },
  { role: 'tool', tool_call_id: 'call_1', content: 'Sunny and 23 degrees' },
];

function assertUsage(usage) {
  assert.ok(usage, 'usage is missing');
  assert.ok(usage.prompt_tokens > 0, `prompt_tokens ${usage.prompt_tokens}`);
  assert.ok(usage.completion_tokens >= 0);
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
}

// Every chat completion must have this shape, whatever the model wrote.
function assertChatShape(r) {
  assert.equal(r.object, 'chat.completion');
  assert.match(r.id, /^chatcmpl-/);
  assert.equal(typeof r.created, 'number');
  assert.equal(typeof r.model, 'string');
  assert.equal(r.choices.length, 1);
  const c = r.choices[0];
  assert.equal(c.index, 0);
  assert.equal(c.message.role, 'assistant');
  assert.ok(c.message.content === null || typeof c.message.content === 'string');
  assert.ok(['stop', 'length', 'tool_calls'].includes(c.finish_reason), `finish_reason ${c.finish_reason}`);
  for (const tc of c.message.tool_calls ?? []) {
    assert.equal(tc.type, 'function');
    assert.equal(typeof tc.id, 'string');
    assert.equal(typeof tc.function.name, 'string');
    assert.equal(typeof tc.function.arguments, 'string');
  }
  assertUsage(r.usage);
}

async function streamChat(ai, params) {
  const stream = await ai.chat.completions.create({ ...params, stream: true });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

describe('default model through the openai SDK', () => {
  let server;
  let ai;
  let modelId;
  before(async () => {
    server = await startServer();
    ai = client(server.url);
  });
  after(async () => { await server?.stop(); });

  it('lists the served model', async () => {
    const page = await ai.models.list();
    assert.equal(page.data.length, 1);
    const m = page.data[0];
    assert.equal(m.object, 'model');
    assert.equal(typeof m.id, 'string');
    assert.ok(m.id.length > 0);
    assert.equal(typeof m.created, 'number');
    assert.equal(m.owned_by, 'ztvm');
    modelId = m.id;
  });

  it('chat, non-streaming: stops at max_tokens with exact usage', async () => {
    const r = await ai.chat.completions.create({ model: modelId, messages: USER, max_tokens: 8, temperature: 0 });
    assertChatShape(r);
    assert.equal(r.model, modelId, 'response model is the served model');
    assert.equal(typeof r.choices[0].message.content, 'string');
    assert.ok(r.choices[0].message.content.length > 0, 'content is empty');
    assert.equal(r.choices[0].finish_reason, 'length');
    assert.equal(r.usage.completion_tokens, 8);
    // llama-server's timings: prompt_n may be below prompt_tokens when a cached prefix was reused.
    assert.equal(r.timings?.predicted_n, 8, `timings ${JSON.stringify(r.timings)}`);
    assert.ok(r.timings.prompt_n >= 0 && r.timings.prompt_n <= r.usage.prompt_tokens);
    assert.ok(r.timings.predicted_ms > 0 && r.timings.predicted_per_second > 0);
  });

  it('the routes without /v1 answer the same', async () => {
    const bare = new OpenAI({ baseURL: server.url, apiKey: 'unused', maxRetries: 0 });
    assert.equal((await bare.models.list()).data[0].id, modelId);
    const params = { model: modelId, messages: USER, max_tokens: 4, temperature: 0 };
    const [a, b] = [await bare.chat.completions.create(params), await ai.chat.completions.create(params)];
    assert.equal(a.choices[0].message.content, b.choices[0].message.content);
    const c = await bare.completions.create({ model: modelId, prompt: PROMPT, max_tokens: 2 });
    assert.equal(c.object, 'text_completion');
  });

  it('max_completion_tokens is honoured like max_tokens', async () => {
    const r = await ai.chat.completions.create({ model: modelId, messages: USER, max_completion_tokens: 5, temperature: 0 });
    assert.equal(r.choices[0].finish_reason, 'length');
    assert.equal(r.usage.completion_tokens, 5);
  });

  it('chat streaming joins to the greedy non-streaming text, with a usage chunk', async () => {
    const params = { model: modelId, messages: USER, max_tokens: 12, temperature: 0 };
    const whole = await ai.chat.completions.create(params);
    const chunks = await streamChat(ai, { ...params, stream_options: { include_usage: true } });
    assert.ok(chunks.length >= 3, `only ${chunks.length} chunks`);
    for (const ch of chunks) {
      assert.equal(ch.object, 'chat.completion.chunk');
      assert.equal(ch.id, chunks[0].id, 'all chunks share one id');
    }
    assert.equal(chunks[0].choices[0].delta.role, 'assistant');
    const text = chunks.map((ch) => ch.choices[0]?.delta?.content ?? '').join('');
    assert.equal(text, whole.choices[0].message.content, 'greedy streaming and non-streaming differ');

    const finishes = chunks.filter((ch) => ch.choices[0]?.finish_reason);
    assert.equal(finishes.length, 1, 'exactly one chunk carries finish_reason');
    assert.equal(finishes[0].choices[0].finish_reason, 'length');
    assert.ok(!finishes[0].choices[0].delta?.content, 'the finish chunk carries no text');
    const usage = chunks.at(-1);
    assert.deepEqual(usage.choices, [], 'the usage chunk comes last with choices: []');
    assertUsage(usage.usage);
    assert.equal(usage.usage.completion_tokens, 12);
    assert.equal(usage.usage.prompt_tokens, whole.usage.prompt_tokens);
  });

  it('streaming without include_usage sends no usage chunk', async () => {
    const chunks = await streamChat(ai, { model: modelId, messages: USER, max_tokens: 4, temperature: 0 });
    assert.ok(chunks.every((ch) => ch.choices.length === 1), 'a chunk without a choice appeared');
  });

  it('legacy completions, non-streaming and streaming agree', async () => {
    const params = { model: modelId, prompt: PROMPT, max_tokens: 10, temperature: 0 };
    const r = await ai.completions.create(params);
    assert.equal(r.object, 'text_completion');
    assert.equal(r.choices.length, 1);
    assert.equal(typeof r.choices[0].text, 'string');
    assert.ok(r.choices[0].text.length > 0);
    assert.equal(r.choices[0].finish_reason, 'length');
    assert.equal(r.choices[0].logprobs, null);
    assertUsage(r.usage);
    assert.equal(r.usage.completion_tokens, 10);

    const stream = await ai.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let finish = null;
    let usage = null;
    for await (const ch of stream) {
      assert.equal(ch.object, 'text_completion');
      for (const c of ch.choices) { text += c.text ?? ''; finish = c.finish_reason ?? finish; }
      if (ch.usage) usage = ch.usage;
    }
    assert.equal(text, r.choices[0].text);
    assert.equal(finish, 'length');
    assert.equal(usage?.completion_tokens, 10);
  });

  it('stop strings end the text before the first match, streaming or not', async () => {
    const base = { model: modelId, messages: USER, max_tokens: 24, temperature: 0 };
    const full = (await ai.chat.completions.create(base)).choices[0].message.content;
    // A word from the second half of the greedy text: it is certainly produced.
    const words = full.slice(Math.floor(full.length / 2)).split(/\s+/).filter((w) => w.length >= 2);
    assert.ok(words.length > 0, `no word to stop at in ${JSON.stringify(full)}`);
    const stop = words[0];
    const want = full.slice(0, full.indexOf(stop));

    const r = await ai.chat.completions.create({ ...base, stop: [stop, '@@never@@'] });
    assert.equal(r.choices[0].message.content, want, `stop ${JSON.stringify(stop)} in ${JSON.stringify(full)}`);
    assert.equal(r.choices[0].finish_reason, 'stop');
    assert.ok(r.usage.completion_tokens < 24);

    const chunks = await streamChat(ai, { ...base, stop });
    const text = chunks.map((ch) => ch.choices[0]?.delta?.content ?? '').join('');
    assert.equal(text, want, 'streamed text must not leak the stop string');
    assert.equal(chunks.find((ch) => ch.choices[0]?.finish_reason)?.choices[0].finish_reason, 'stop');

    const c = await ai.completions.create({ model: modelId, prompt: PROMPT, max_tokens: 16, temperature: 0 });
    const ctext = c.choices[0].text;
    const cstop = ctext.trim().split(/\s+/).at(-1);
    const cr = await ai.completions.create({ model: modelId, prompt: PROMPT, max_tokens: 16, temperature: 0, stop: cstop });
    assert.equal(cr.choices[0].text, ctext.slice(0, ctext.indexOf(cstop)));
    assert.equal(cr.choices[0].finish_reason, 'stop');
  });

  it('a seed makes sampling at temperature 0.8 repeatable', async () => {
    const params = { model: modelId, messages: USER, max_tokens: 16, temperature: 0.8 };
    const text = async (seed) => (await ai.chat.completions.create({ ...params, seed })).choices[0].message.content;
    const a = await text(1234);
    const b = await text(1234);
    assert.equal(a, b, 'same seed, different text');
    // Several other seeds cannot all land on the very same 16 sampled tokens.
    const others = [await text(1), await text(2), await text(3)];
    assert.ok(others.some((t) => t !== a), 'the seed has no effect on sampling');
  });

  it('tools with tool_choice auto give a valid response', async () => {
    const r = await ai.chat.completions.create({
      model: modelId, messages: [{ role: 'user', content: 'What is the weather in Jerusalem?' }],
      tools: [WEATHER_TOOL], tool_choice: 'auto', max_tokens: 8, temperature: 0,
    });
    assertChatShape(r);
    if (r.choices[0].finish_reason === 'tool_calls') assert.ok(r.choices[0].message.tool_calls.length > 0);
  });

  it('a conversation with an assistant tool call and a tool reply gives a valid response', async () => {
    const r = await ai.chat.completions.create({ model: modelId, messages: TOOL_ROUND, tools: [WEATHER_TOOL], max_tokens: 8, temperature: 0 });
    assertChatShape(r);
    // Content given as an array of text parts is accepted the same way.
    const parts = await ai.chat.completions.create({
      model: modelId, max_tokens: 4, temperature: 0,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'And God said,' }, { type: 'text', text: ' Let there be light' }] }],
    });
    assertChatShape(parts);
  });

  it('every tool_choice and response_format gives a valid response, streaming too', async () => {
    const ask = { model: modelId, messages: [{ role: 'user', content: 'What is the weather in Jerusalem?' }], max_tokens: 6, temperature: 0 };
    for (const tool_choice of ['none', 'required', { type: 'function', function: { name: 'get_weather' } }]) {
      assertChatShape(await ai.chat.completions.create({ ...ask, tools: [WEATHER_TOOL], tool_choice }));
    }
    for (const response_format of [{ type: 'text' }, { type: 'json_object' },
      { type: 'json_schema', json_schema: { name: 'weather', schema: { type: 'object', properties: { city: { type: 'string' } } } } }]) {
      assertChatShape(await ai.chat.completions.create({ ...ask, response_format }));
    }
    const chunks = await streamChat(ai, { ...ask, tools: [WEATHER_TOOL], tool_choice: 'auto' });
    const finish = chunks.find((ch) => ch.choices[0]?.finish_reason)?.choices[0].finish_reason;
    assert.ok(['stop', 'length', 'tool_calls'].includes(finish), `finish_reason ${finish}`);
    for (const ch of chunks) {
      for (const tc of ch.choices[0]?.delta?.tool_calls ?? []) assert.equal(typeof tc.index, 'number');
    }
  });

  it('response_format json_object and json_schema keep the reply to JSON the schema allows', async () => {
    // The model writes Bible verses; held to JSON token by token, it still writes JSON.
    const ask = { model: modelId, messages: [{ role: 'user', content: 'A person as JSON' }], temperature: 1 };
    for (const seed of [1, 2, 3]) {
      const r = await ai.chat.completions.create({ ...ask, seed, max_tokens: 40, response_format: { type: 'json_object' } });
      const { content } = r.choices[0].message;
      assert.match(content, /^\s{0,2}\{/, `seed ${seed}: ${content}`);
      if (r.choices[0].finish_reason === 'stop') assert.equal(typeof JSON.parse(content), 'object', content);
    }
    // A schema whose values are {"ok": true} and {"ok": false}: whitespace is bounded, so it must close.
    const schema = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'], additionalProperties: false };
    for (const seed of [1, 2]) {
      const r = await ai.chat.completions.create({
        ...ask, seed, max_tokens: 200, response_format: { type: 'json_schema', json_schema: { name: 'ok', strict: true, schema } } });
      const { content } = r.choices[0].message;
      assert.equal(r.choices[0].finish_reason, 'stop', content);
      const value = JSON.parse(content);
      assert.deepEqual(Object.keys(value), ['ok'], content);
      assert.equal(typeof value.ok, 'boolean', content);
    }
    const legacy = await ai.completions.create({ model: modelId, prompt: 'JSON:', max_tokens: 200, temperature: 1, seed: 5,
      response_format: { type: 'json_schema', json_schema: { name: 'ok', schema } } });
    assert.equal(legacy.choices[0].finish_reason, 'stop', legacy.choices[0].text);
    assert.equal(typeof JSON.parse(legacy.choices[0].text).ok, 'boolean', legacy.choices[0].text);
    // A schema the server cannot use is the client's error.
    await assert.rejects(ai.chat.completions.create({
      ...ask, max_tokens: 2, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'foo' } } } }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'response_format.json_schema.schema');
  });

  it('an invalid tool_choice or response_format is a BadRequestError', async () => {
    const ask = { model: modelId, messages: USER, max_tokens: 2 };
    for (const extra of [
      { tools: [WEATHER_TOOL], tool_choice: 'sometimes' },
      { tools: [WEATHER_TOOL], tool_choice: { type: 'function', function: { name: 'no_such_tool' } } },
      { tool_choice: 'required' },  // nothing to call
      { tools: [{ type: 'function', function: { description: 'no name' } }] },
      { response_format: { type: 'xml' } },
    ]) {
      await assert.rejects(ai.chat.completions.create({ ...ask, ...extra }),
        (e) => e instanceof OpenAI.BadRequestError && e.type === 'invalid_request_error', JSON.stringify(extra));
    }
  });

  it('n=2 is a BadRequestError', async () => {
    await assert.rejects(
      ai.chat.completions.create({ model: modelId, messages: USER, max_tokens: 4, n: 2 }),
      (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.type === 'invalid_request_error');
  });

  it('a prompt longer than the context is a 400 context_length_exceeded', async () => {
    const long = [{ role: 'user', content: manyWords(3000) }];
    await assert.rejects(
      ai.chat.completions.create({ model: modelId, messages: long, max_tokens: 4 }),
      (e) => e instanceof OpenAI.BadRequestError && e.code === 'context_length_exceeded');
    await assert.rejects(
      ai.completions.create({ model: modelId, prompt: manyWords(3000), max_tokens: 4, stream: true }),
      (e) => e instanceof OpenAI.BadRequestError && e.code === 'context_length_exceeded');
    // The server still serves normal requests afterwards.
    const r = await ai.chat.completions.create({ model: modelId, messages: USER, max_tokens: 2 });
    assert.equal(r.usage.completion_tokens, 2);
  });
});

describe('--chat-template-file with tools (Qwen3 template)', () => {
  let server;
  before(async () => { server = await startServer(['--chat-template-file', QWEN3_TEMPLATE]); });
  after(async () => { await server?.stop(); });

  // The assistant turn with content "" (what the template expects) and null (what the SDK and most
  // clients send with tool_calls; llama-server renders it like "").
  for (const content of ['', null]) {
    it(`POST /apply-template renders the tool list and the tool reply (assistant content ${JSON.stringify(content)})`, async () => {
      const messages = TOOL_ROUND.map((m) => (m.role === 'assistant' ? { ...m, content } : m));
      const res = await postJSON(`${server.url}/apply-template`, { messages, tools: [WEATHER_TOOL] });
      assert.equal(res.status, 200, res.text);
      const prompt = res.json.prompt;
      assert.equal(typeof prompt, 'string');
      assert.ok(prompt.includes('<tools>') && prompt.includes('"get_weather"'), 'tool definition missing');
      assert.ok(prompt.includes('"name": "get_weather"'), 'the assistant tool call is missing');
      assert.ok(prompt.includes('<tool_response>\nSunny and 23 degrees\n</tool_response>'), 'tool reply missing');
      assert.ok(prompt.lastIndexOf('<|im_start|>assistant\n') > prompt.indexOf('</tool_response>'), 'generation prompt missing');
    });
  }

  it('chat with tools through the SDK uses the same template', async () => {
    const ai = client(server.url);
    const r = await ai.chat.completions.create({ model: 'any', messages: TOOL_ROUND, tools: [WEATHER_TOOL], max_tokens: 4, temperature: 0 });
    assertChatShape(r);
    // The tool definitions are in the prompt, so it is longer than without them.
    const plain = await ai.chat.completions.create({ model: 'any', messages: TOOL_ROUND, max_tokens: 1, temperature: 0 });
    assert.ok(r.usage.prompt_tokens > plain.usage.prompt_tokens + 20, `${r.usage.prompt_tokens} vs ${plain.usage.prompt_tokens}`);
  });
});

describe('--api-key', () => {
  const KEY = 'sk-ztvm-test-key';
  let server;
  before(async () => { server = await startServer(['--api-key', KEY]); });
  after(async () => { await server?.stop(); });

  it('rejects a missing or wrong key with AuthenticationError', async () => {
    const isAuth = (e) => e instanceof OpenAI.AuthenticationError && e.status === 401 && e.code === 'invalid_api_key';
    // `Authorization: null` makes the SDK send no header at all.
    const noKey = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'x', maxRetries: 0, defaultHeaders: { Authorization: null } });
    await assert.rejects(noKey.chat.completions.create({ model: 'm', messages: USER, max_tokens: 2 }), isAuth);
    await assert.rejects(client(server.url, 'sk-wrong').chat.completions.create({ model: 'm', messages: USER, max_tokens: 2 }), isAuth);
    await assert.rejects(client(server.url, 'sk-wrong').completions.create({ model: 'm', prompt: PROMPT, max_tokens: 2 }), isAuth);
    const raw = await postJSON(`${server.url}/v1/chat/completions`, { messages: USER, max_tokens: 2 });
    assert.equal(raw.status, 401);
    assert.equal(raw.json?.error?.type, 'authentication_error');
  });

  it('accepts the right key', async () => {
    const ai = client(server.url, KEY);
    assert.equal((await ai.models.list()).data.length, 1);
    const r = await ai.chat.completions.create({ model: 'm', messages: USER, max_tokens: 3 });
    assert.equal(r.usage.completion_tokens, 3);
  });

  it('/health needs no key', async () => {
    assert.equal(await healthStatus(server.url), 200);
  });
});
