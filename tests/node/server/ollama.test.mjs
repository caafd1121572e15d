// Ollama's API on `ztvm serve`, driven by the official `ollama` npm client: model listing and
// details, chat and generate (streamed NDJSON and whole, the same greedy text either way and the same
// as the OpenAI endpoints give), JSON format, embeddings, and errors in Ollama's {"error"} shape that
// the client turns into a ResponseError with the server's message.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Ollama } from 'ollama';
import { startServer } from './harness.mjs';
import { postJSON, assertHealthy } from './util.mjs';

const USER = [{ role: 'user', content: 'And God said, Let there be light' }];
const GREEDY = { temperature: 0, num_predict: 12 };

describe('Ollama API on the default model', () => {
  let server, ollama, name;
  before(async () => {
    server = await startServer();
    ollama = new Ollama({ host: server.url });
  });
  after(async () => { await server?.stop(); });

  it('lists, shows and reports the served model', async () => {
    const { models } = await ollama.list();
    assert.equal(models.length, 1);
    name = models[0].name;
    assert.ok(name.length > 0);
    assert.equal(models[0].details.format, 'gguf');
    assert.equal(models[0].details.family, 'llama');
    assert.match(models[0].details.parameter_size, /^[\d.]+[MB]$/);
    assert.ok(models[0].size > 1000);
    const show = await ollama.show({ model: name });
    assert.ok(show.template.length > 0);
    assert.ok(show.model_info['llama.context_length'] > 0);
    assert.ok(show.capabilities.includes('completion'));
    assert.equal(typeof (await ollama.version()).version, 'string');
    assert.equal((await ollama.ps()).models[0].name, name);
  });

  it('chat: whole and streamed give the same greedy reply, with counts', async () => {
    const whole = await ollama.chat({ model: name, messages: USER, stream: false, options: GREEDY });
    assert.equal(whole.message.role, 'assistant');
    assert.ok(whole.message.content.length > 0);
    assert.equal(whole.done, true);
    assert.equal(whole.done_reason, 'length');
    assert.equal(whole.eval_count, 12);
    assert.ok(whole.prompt_eval_count > 5);
    assert.ok(whole.total_duration > 0);
    let text = '', parts = 0, last;
    for await (const part of await ollama.chat({ model: name, messages: USER, stream: true, options: GREEDY })) {
      text += part.message.content;
      parts++;
      last = part;
    }
    assert.ok(parts > 2, `${parts} parts`);
    assert.equal(text, whole.message.content);
    assert.equal(last.done, true);
    assert.equal(last.eval_count, 12);
    // The OpenAI endpoint with the same request: the same text.
    const oa = await postJSON(`${server.url}/v1/chat/completions`, { messages: USER, temperature: 0, max_tokens: 12 });
    assert.equal(oa.json.choices[0].message.content, whole.message.content);
  });

  it('generate: templated and raw, whole and streamed', async () => {
    const whole = await ollama.generate({ model: name, prompt: 'In the beginning', stream: false, options: GREEDY });
    assert.ok(whole.response.length > 0);
    assert.equal(whole.eval_count, 12);
    let text = '';
    for await (const part of await ollama.generate({ model: name, prompt: 'In the beginning', stream: true, options: GREEDY }))
      text += part.response;
    assert.equal(text, whole.response);
    const raw = await ollama.generate({ model: name, prompt: 'In the beginning', raw: true, stream: false, options: GREEDY });
    const oa = await postJSON(`${server.url}/v1/completions`, { prompt: 'In the beginning', temperature: 0, max_tokens: 12 });
    assert.equal(raw.response, oa.json.choices[0].text);
  });

  it("format 'json' holds the reply to a JSON object", async () => {
    const r = await ollama.chat({ model: name, messages: USER, stream: false, format: 'json', options: { temperature: 0, num_predict: 300 } });
    assert.match(r.message.content, /^\s*\{/);
    if (r.done_reason === 'stop') assert.equal(typeof JSON.parse(r.message.content), 'object');
  });

  it('embed and embeddings give the vectors /v1/embeddings gives', async () => {
    const e = await ollama.embed({ model: name, input: ['Jesus wept.', 'In the beginning'] });
    assert.equal(e.embeddings.length, 2);
    const oa = await postJSON(`${server.url}/v1/embeddings`, { input: ['Jesus wept.', 'In the beginning'], encoding_format: 'float' });
    for (let i = 0; i < 2; i++) assert.deepEqual(e.embeddings[i], oa.json.data[i].embedding);
    const old = await ollama.embeddings({ model: name, prompt: 'Jesus wept.' });
    assert.deepEqual(old.embedding, e.embeddings[0]);
  });

  it('errors come back as ResponseErrors with the message, and the server carries on', async () => {
    await assert.rejects(ollama.chat({ model: name, messages: [{ role: 'user', content: 'x', images: ['aGk='] }], stream: false }),
      (e) => e.name === 'ResponseError' && e.status_code === 400 && /images/.test(e.error));
    await assert.rejects(ollama.chat({ model: name, messages: [], stream: false }),
      (e) => e.status_code === 400 && /messages/.test(e.error));
    await assert.rejects(ollama.chat({ model: name, messages: USER, stream: false, options: { temperature: 'hot' } }),
      (e) => e.status_code === 400 && /temperature/.test(e.error));
    for (const body of [{ model: name, messages: USER, stream: 'no' }, { model: name, prompt: 'x', raw: 1 }]) {
      const r = await postJSON(`${server.url}/api/${body.messages ? 'chat' : 'generate'}`, body);
      assert.equal(r.status, 400, r.text);
      assert.match(r.json.error, /must be true or false/);
    }
    const bad = await postJSON(`${server.url}/api/generate`, { model: name });
    assert.equal(bad.status, 400);
    assert.equal(typeof bad.json.error, 'string');
    const unknown = await fetch(`${server.url}/api/pull`, { method: 'POST', body: '{}' });
    assert.equal(unknown.status, 404);
    assert.equal(typeof (await unknown.json()).error, 'string');
    await assertHealthy(server.url);
  });
});
