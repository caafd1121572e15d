// logprobs on /v1/chat/completions (logprobs + top_logprobs) and /v1/completions (logprobs N),
// through the openai SDK and plain requests: one entry per generated token whose texts make the
// reply, log probabilities <= 0 with the chosen token first among the alternatives under greedy
// decoding, the same entries streamed and whole, and the same text as without logprobs. The values
// themselves are the engine's logits (tests/engine_model_test.cpp checks the tap against them).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer } from './harness.mjs';
import { postJSON, assertOpenAIError, readSSE } from './util.mjs';

const USER = [{ role: 'user', content: 'And God said, Let there be light' }];
const PROMPT = 'In the beginning God created';

describe('logprobs', () => {
  let server, ai;
  before(async () => {
    server = await startServer();
    ai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
  });
  after(async () => { await server?.stop(); });

  it('chat: an entry a token, top alternatives sorted, the pick first under greedy', async () => {
    const r = await ai.chat.completions.create({ model: 'm', messages: USER, max_tokens: 10, temperature: 0, logprobs: true, top_logprobs: 3 });
    const lp = r.choices[0].logprobs.content;
    assert.equal(lp.length, r.usage.completion_tokens);
    assert.equal(lp.map((e) => e.token).join(''), r.choices[0].message.content);
    for (const e of lp) {
      assert.ok(e.logprob <= 0, `logprob ${e.logprob}`);
      assert.deepEqual(e.bytes, [...Buffer.from(e.token, 'utf8')]);
      assert.equal(e.top_logprobs.length, 3);
      assert.equal(e.top_logprobs[0].token, e.token);
      assert.ok(Math.abs(e.top_logprobs[0].logprob - e.logprob) < 1e-6);
      for (let i = 1; i < 3; i++) assert.ok(e.top_logprobs[i].logprob <= e.top_logprobs[i - 1].logprob);
      assert.ok(e.top_logprobs.reduce((s, t) => s + Math.exp(t.logprob), 0) <= 1 + 1e-5);
    }
    const plain = await ai.chat.completions.create({ model: 'm', messages: USER, max_tokens: 10, temperature: 0 });
    assert.equal(plain.choices[0].message.content, r.choices[0].message.content, 'the host path picks as the GPU does');
    assert.equal(plain.choices[0].logprobs, null);
  });

  it('chat streamed: the same entries, spread over the chunks', async () => {
    const whole = await ai.chat.completions.create({ model: 'm', messages: USER, max_tokens: 10, temperature: 0, logprobs: true, top_logprobs: 2 });
    const stream = await ai.chat.completions.create({ model: 'm', messages: USER, max_tokens: 10, temperature: 0, logprobs: true, top_logprobs: 2, stream: true });
    const got = [];
    for await (const c of stream) got.push(...(c.choices[0]?.logprobs?.content ?? []));
    assert.deepEqual(got, whole.choices[0].logprobs.content);
  });

  it('completions: tokens, token_logprobs, top_logprobs and text_offset', async () => {
    const r = await postJSON(`${server.url}/v1/completions`, { prompt: PROMPT, max_tokens: 8, temperature: 0, logprobs: 2 });
    assert.equal(r.status, 200, r.text);
    const c = r.json.choices[0], lp = c.logprobs;
    assert.equal(lp.tokens.join(''), c.text);
    assert.equal(lp.token_logprobs.length, 8);
    assert.equal(lp.text_offset[0], 0);
    for (let i = 1; i < 8; i++) assert.equal(lp.text_offset[i], lp.text_offset[i - 1] + Buffer.byteLength(lp.tokens[i - 1]));
    for (let i = 0; i < 8; i++) {
      const alts = Object.entries(lp.top_logprobs[i]);
      assert.ok(alts.length >= 1 && alts.length <= 2);
      assert.ok(Math.abs(lp.top_logprobs[i][lp.tokens[i]] - lp.token_logprobs[i]) < 1e-6);
    }
    // Streamed, the pieces concatenate to the same arrays.
    const res = await fetch(`${server.url}/v1/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt: PROMPT, max_tokens: 8, temperature: 0, logprobs: 2, stream: true }) });
    const tokens = [], offsets = [];
    await readSSE(res, (e) => {
      const l = e.choices?.[0]?.logprobs;
      if (l) { tokens.push(...l.tokens); offsets.push(...l.text_offset); }
    });
    assert.deepEqual(tokens, lp.tokens);
    assert.deepEqual(offsets, lp.text_offset);
  });

  it('echo: the prompt scored, then the reply; the reply scores as it was generated', async () => {
    const only = await postJSON(`${server.url}/v1/completions`, { prompt: PROMPT, max_tokens: 0, echo: true, logprobs: 1 });
    assert.equal(only.status, 200, only.text);
    const p = only.json.choices[0];
    assert.equal(p.text, PROMPT);
    assert.equal(p.logprobs.tokens.join('').trim(), PROMPT);  // BOS is not text: left out
    assert.ok(p.logprobs.token_logprobs.every((x) => x <= 0), JSON.stringify(p.logprobs.token_logprobs));
    const gen = await postJSON(`${server.url}/v1/completions`, { prompt: PROMPT, max_tokens: 6, temperature: 0, logprobs: 1 });
    const both = await postJSON(`${server.url}/v1/completions`, { prompt: PROMPT, max_tokens: 6, temperature: 0, logprobs: 1, echo: true });
    const g = gen.json.choices[0], b = both.json.choices[0];
    assert.equal(b.text, PROMPT + g.text);
    assert.deepEqual(b.logprobs.tokens, [...p.logprobs.tokens, ...g.logprobs.tokens]);
    // The prompt and its reply echoed as one prompt: the reply's tokens get the logprobs they were
    // generated with (one pass over all positions against one-token passes: equal to 1e-3).
    const again = await postJSON(`${server.url}/v1/completions`, { prompt: PROMPT + g.text, max_tokens: 0, echo: true, logprobs: 1 });
    const a = again.json.choices[0].logprobs;
    const n = g.logprobs.tokens.length;
    assert.deepEqual(a.tokens.slice(-n), g.logprobs.tokens);
    for (let i = 0; i < n; i++) {
      const want = g.logprobs.token_logprobs[i], got = a.token_logprobs[a.token_logprobs.length - n + i];
      assert.ok(Math.abs(got - want) < 1e-3, `token ${i}: ${got} vs ${want}`);
    }
    const bad1 = await postJSON(`${server.url}/v1/completions`, { prompt: PROMPT, echo: true, stream: true });
    assertOpenAIError(bad1, 400);
    const bad2 = await postJSON(`${server.url}/v1/chat/completions`, { messages: USER, echo: true });
    assertOpenAIError(bad2, 400);
  });

  it('bad values are 400s naming the field', async () => {
    const bad = async (body, param) => {
      const r = await postJSON(`${server.url}/v1/chat/completions`, { messages: USER, max_tokens: 2, ...body });
      assertOpenAIError(r, 400);
      assert.equal(r.json.error.param, param, r.text);
    };
    await bad({ logprobs: true, top_logprobs: 21 }, 'top_logprobs');
    await bad({ top_logprobs: 2 }, 'top_logprobs');
    await bad({ logprobs: false, top_logprobs: 2 }, 'top_logprobs');
    await bad({ logprobs: 'yes' }, 'logprobs');
  });
});
