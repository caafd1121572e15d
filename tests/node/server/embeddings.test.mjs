// POST /v1/embeddings driven by the official openai SDK (which asks for base64 unless told
// otherwise) and by plain requests: shapes, unit length, batches that give what single requests give,
// token-id input, `dimensions`, the same vectors as `ztvm embed`, and clear 400s for bad input. The
// numbers themselves are checked against the CPU reference in tests/engine_embedding_test.cpp.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import OpenAI from 'openai';
import { startServer } from './harness.mjs';
import { postJSON, assertOpenAIError, assertHealthy, manyWords } from './util.mjs';

const client = (url) => new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });

const TEXTS = ['In the beginning God created the heaven and the earth.', 'And God said, Let there be light', 'Jesus wept.'];

const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const maxDiff = (a, b) => Math.max(...a.map((x, i) => Math.abs(x - b[i])));

describe('/v1/embeddings on the default model', () => {
  let server, ai, nEmbd;
  before(async () => {
    server = await startServer();
    ai = client(server.url);
    const models = await (await fetch(`${server.url}/v1/models`)).json();
    nEmbd = models.data[0].meta.n_embd;
  });
  after(async () => { await server?.stop(); });

  it('the SDK gets one unit vector of n_embd floats, with usage', async () => {
    const r = await ai.embeddings.create({ model: 'any', input: TEXTS[0] });
    assert.equal(r.object, 'list');
    assert.equal(r.data.length, 1);
    assert.equal(r.data[0].object, 'embedding');
    assert.equal(r.data[0].index, 0);
    const v = r.data[0].embedding;
    assert.equal(v.length, nEmbd);
    assert.ok(v.every(Number.isFinite));
    assert.ok(Math.abs(norm(v) - 1) < 1e-5, `norm ${norm(v)}`);
    assert.ok(r.usage.prompt_tokens > 5);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens);
  });

  it('base64 (the SDK default) and float carry the same numbers', async () => {
    const sdk = (await ai.embeddings.create({ model: 'any', input: TEXTS[1] })).data[0].embedding;
    const raw = await postJSON(`${server.url}/v1/embeddings`, { input: TEXTS[1], encoding_format: 'float' });
    assert.equal(raw.status, 200, raw.text);
    assert.deepEqual(sdk, raw.json.data[0].embedding.map((x) => Math.fround(x)));
    const b64 = await postJSON(`${server.url}/v1/embeddings`, { input: TEXTS[1], encoding_format: 'base64' });
    assert.equal(typeof b64.json.data[0].embedding, 'string');
    const buf = Buffer.from(b64.json.data[0].embedding, 'base64');
    assert.equal(buf.length, 4 * nEmbd);
    assert.deepEqual(Array.from(new Float32Array(buf.buffer, buf.byteOffset, nEmbd)), sdk);
  });

  it('a batch gives, in order, what the texts give one by one; different texts differ', async () => {
    const batch = await ai.embeddings.create({ model: 'any', input: TEXTS, encoding_format: 'float' });
    assert.deepEqual(batch.data.map((d) => d.index), [0, 1, 2]);
    for (let i = 0; i < TEXTS.length; i++) {
      const one = (await ai.embeddings.create({ model: 'any', input: TEXTS[i], encoding_format: 'float' })).data[0].embedding;
      assert.ok(maxDiff(one, batch.data[i].embedding) < 1e-6, `text ${i}`);
    }
    assert.ok(maxDiff(batch.data[0].embedding, batch.data[2].embedding) > 1e-3);
  });

  it('token ids give what their text gives', async () => {
    const tok = await postJSON(`${server.url}/tokenize`, { content: TEXTS[2], add_special: true });
    const ids = tok.json.tokens;
    const byIds = await postJSON(`${server.url}/v1/embeddings`, { input: ids, encoding_format: 'float' });
    const byLists = await postJSON(`${server.url}/v1/embeddings`, { input: [ids, ids], encoding_format: 'float' });
    const byText = await postJSON(`${server.url}/v1/embeddings`, { input: TEXTS[2], encoding_format: 'float' });
    assert.equal(byIds.status, 200, byIds.text);
    assert.ok(maxDiff(byIds.json.data[0].embedding, byText.json.data[0].embedding) < 1e-6);
    assert.equal(byLists.json.data.length, 2);
    assert.equal(byIds.json.usage.prompt_tokens, ids.length);
  });

  it('dimensions keeps the first N components, scaled to unit length', async () => {
    const full = (await ai.embeddings.create({ model: 'any', input: TEXTS[0], encoding_format: 'float' })).data[0].embedding;
    const short = (await ai.embeddings.create({ model: 'any', input: TEXTS[0], encoding_format: 'float', dimensions: 16 })).data[0].embedding;
    assert.equal(short.length, 16);
    assert.ok(Math.abs(norm(short) - 1) < 1e-5);
    const head = full.slice(0, 16), s = norm(head);
    assert.ok(maxDiff(short, head.map((x) => x / s)) < 1e-5);
  });

  it('gives the vectors `ztvm embed` prints for the same texts', async () => {
    const out = execFileSync(process.env.ZTVM_BIN, ['embed', '-q', '-p', TEXTS[0], '-p', TEXTS[1]], { encoding: 'utf8' });
    const lines = out.trim().split('\n').map((l) => JSON.parse(l));
    const r = await postJSON(`${server.url}/v1/embeddings`, { input: TEXTS.slice(0, 2), encoding_format: 'float' });
    assert.equal(lines.length, 2);
    for (let i = 0; i < 2; i++) assert.ok(maxDiff(lines[i], r.json.data[i].embedding) < 1e-6, `text ${i}`);
  });

  it('runs beside a generation', async () => {
    const gen = postJSON(`${server.url}/v1/completions`, { prompt: TEXTS[0], max_tokens: 24, temperature: 0 });
    const emb = postJSON(`${server.url}/v1/embeddings`, { input: TEXTS, encoding_format: 'float' });
    const [g, e] = await Promise.all([gen, emb]);
    assert.equal(g.status, 200, g.text);
    assert.equal(e.status, 200, e.text);
    assert.equal(e.json.data.length, 3);
  });

  it('bad input is a 400 naming the field, and the server carries on', async () => {
    const bad = async (body, param) => {
      const r = await postJSON(`${server.url}/v1/embeddings`, body);
      assertOpenAIError(r, 400, { type: 'invalid_request_error' });
      assert.equal(r.json.error.param, param, r.text);
      return r;
    };
    await bad({}, 'input');
    await bad({ input: '' }, 'input');
    await bad({ input: [] }, 'input');
    await bad({ input: ['fine', ''] }, 'input');
    await bad({ input: [1, 'x'] }, 'input');
    await bad({ input: [1, 99999999] }, 'input');
    await bad({ input: [[1, 2], 7] }, 'input');
    await bad({ input: { text: 'x' } }, 'input');
    await bad({ input: 'x', encoding_format: 'hex' }, 'encoding_format');
    await bad({ input: 'x', dimensions: 0 }, 'dimensions');
    await bad({ input: 'x', dimensions: nEmbd + 1 }, 'dimensions');
    const long = await bad({ input: manyWords(6000) }, 'input');
    assert.match(long.json.error.message, /context holds/);
    const notJson = await postJSON(`${server.url}/v1/embeddings`, '{"input": ');
    assertOpenAIError(notJson, 400);
    await assertHealthy(server.url);
    const ok = await ai.embeddings.create({ model: 'any', input: 'still here' });
    assert.equal(ok.data.length, 1);
  });
});

describe('/v1/embeddings --pooling', () => {
  let mean, last;
  before(async () => {
    mean = await startServer();
    last = await startServer(['--pooling', 'last']);
  });
  after(async () => { await mean?.stop(); await last?.stop(); });

  it('last-token pooling is another vector, and the server says which it uses', async () => {
    const a = await postJSON(`${mean.url}/v1/embeddings`, { input: TEXTS[0], encoding_format: 'float' });
    const b = await postJSON(`${last.url}/v1/embeddings`, { input: TEXTS[0], encoding_format: 'float' });
    assert.ok(maxDiff(a.json.data[0].embedding, b.json.data[0].embedding) > 1e-3);
    const poolingOf = async (srv) => (await (await fetch(`${srv.url}/v1/models`)).json()).data[0].meta.pooling;
    assert.equal(await poolingOf(mean), 'mean');  // the default model names none
    assert.equal(await poolingOf(last), 'last');
    const out = execFileSync(process.env.ZTVM_BIN, ['embed', '-q', '--pooling', 'last', '-p', TEXTS[0]], { encoding: 'utf8' });
    assert.ok(maxDiff(JSON.parse(out), b.json.data[0].embedding) < 1e-6);
  });
});
