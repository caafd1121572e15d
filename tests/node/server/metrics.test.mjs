// GET /metrics in Prometheus' text format: counters that grow by exactly what requests did (prompt
// and generated tokens, embeddings), gauges of the present load, and the API key's protection.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './harness.mjs';
import { postJSON } from './util.mjs';

// {name: value} of every sample line; each metric has its HELP and TYPE lines.
function parseMetrics(text) {
  const out = {};
  const lines = text.trim().split('\n');
  for (const line of lines) {
    if (line.startsWith('#')) continue;
    const [name, value] = line.split(' ');
    out[name] = Number(value);
    assert.ok(lines.includes(`# TYPE ${name} counter`) || lines.includes(`# TYPE ${name} gauge`), `no TYPE line for ${name}`);
  }
  return out;
}

describe('/metrics', () => {
  let server;
  const KEY = 'metrics-key';
  before(async () => { server = await startServer(['--api-key', KEY]); });
  after(async () => { await server?.stop(); });
  const auth = { Authorization: `Bearer ${KEY}` };
  const read = async () => {
    const res = await fetch(`${server.url}/metrics`, { headers: auth });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^text\/plain/);
    return parseMetrics(await res.text());
  };

  it('needs the key when the server has one', async () => {
    assert.equal((await fetch(`${server.url}/metrics`)).status, 401);
  });

  it('counts what requests did', async () => {
    const m0 = await read();
    assert.equal(m0.ztvm_requests_total, 0);
    assert.equal(m0.ztvm_requests_processing, 0);
    const r = await postJSON(`${server.url}/v1/completions`, { prompt: 'In the beginning God created', max_tokens: 5, temperature: 0 }, { headers: auth });
    assert.equal(r.status, 200, r.text);
    const e = await postJSON(`${server.url}/v1/embeddings`, { input: ['Jesus wept.', 'And God said'] }, { headers: auth });
    assert.equal(e.status, 200, e.text);
    const m1 = await read();
    assert.equal(m1.ztvm_requests_total, 3);
    assert.equal(m1.ztvm_embeddings_total, 2);
    assert.equal(m1.ztvm_tokens_predicted_total, 5);
    assert.equal(m1.ztvm_prompt_tokens_total, r.json.usage.prompt_tokens + e.json.usage.prompt_tokens);
    assert.ok(m1.ztvm_prompt_tokens_computed_total <= m1.ztvm_prompt_tokens_total);
    assert.ok(m1.ztvm_prompt_seconds_total > 0);
    assert.ok(m1.ztvm_decode_seconds_total > 0);
    assert.equal(m1.ztvm_requests_failed_total, 0);
    assert.ok(m1.ztvm_kv_cache_usage_ratio > 0 && m1.ztvm_kv_cache_usage_ratio <= 1, `${m1.ztvm_kv_cache_usage_ratio}`);
  });
});
