// Many clients at once: 16 streaming clients x 3 requests over a few prompts, some of them hanging
// up mid-stream. Greedy decoding is deterministic, so every finished stream must equal the answer
// the server gave for that prompt alone, before the load: interleaved generation must not mix
// up sequences or their KV caches. Memory must not grow with requests, and /health must keep
// answering while every slot is busy.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './harness.mjs';
import { postJSON, streamRequest, healthStatus, sleep } from './util.mjs';

const MAX_TOKENS = 10;
const CLIENTS = 16;
const REQUESTS_PER_CLIENT = 3;
const RSS_GROWTH_LIMIT_KIB = 64 * 1024;

// Chat and legacy completions both, so both paths run interleaved with each other.
const PROMPTS = [
  { path: '/v1/chat/completions', body: { messages: [{ role: 'user', content: 'And God said, Let there be light' }] } },
  { path: '/v1/chat/completions', body: { messages: [{ role: 'system', content: 'Thou art a scribe.' }, { role: 'user', content: 'Who begat Enos?' }] } },
  { path: '/v1/completions', body: { prompt: 'In the beginning God created' } },
  { path: '/v1/completions', body: { prompt: 'Blessed are the meek: for they' } },
];
const params = { max_tokens: MAX_TOKENS, temperature: 0 };

const answerText = (json) => json.choices[0].message?.content ?? json.choices[0].text;

// How each client behaves on each request: most read to the end, a few hang up.
function plan(client, request) {
  if (client % 8 === 3 && request === 1) return 'abort-after-2-pieces';
  if (client % 8 === 7 && request === 2) return 'abort-after-headers';
  return 'read-all';
}

async function runClient(url, client, results) {
  for (let request = 0; request < REQUESTS_PER_CLIENT; request++) {
    const p = (client + request) % PROMPTS.length;
    const mode = plan(client, request);
    const ctl = new AbortController();
    let pieces = 0;
    const onEvent = (ev) => {
      if ((ev.choices?.[0]?.delta?.content ?? ev.choices?.[0]?.text ?? '') !== '') pieces++;
      return mode === 'abort-after-2-pieces' && pieces >= 2;
    };
    try {
      if (mode === 'abort-after-headers') {
        const res = await fetch(url + PROMPTS[p].path, {
          method: 'POST', headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ ...PROMPTS[p].body, ...params, stream: true }), signal: ctl.signal,
        });
        assert.equal(res.status, 200);
        ctl.abort();
        results.push({ client, request, mode });
        continue;
      }
      const r = await streamRequest(url + PROMPTS[p].path, { ...PROMPTS[p].body, ...params }, { signal: ctl.signal, onEvent });
      if (mode !== 'read-all') {
        ctl.abort();
        assert.ok(r.stoppedEarly, 'the stream ended before the client could hang up');
        results.push({ client, request, mode });
        continue;
      }
      results.push({ client, request, mode, prompt: p, ...r });
    } catch (e) {
      if (e.name === 'AbortError' && mode !== 'read-all') continue;
      results.push({ client, request, mode, prompt: p, error: String(e) });
    }
  }
}

describe('16 concurrent streaming clients', () => {
  let server;
  const reference = [];
  let rssWarm;

  before(async () => { server = await startServer(); });
  after(async () => { await server?.stop(); });

  it('greedy reference answers, one request at a time', async () => {
    for (const { path, body } of PROMPTS) {
      const r = await postJSON(server.url + path, { ...body, ...params });
      assert.equal(r.status, 200, r.text);
      const text = answerText(r.json);
      assert.equal(typeof text, 'string');
      assert.ok(text.length > 0);
      reference.push({ text, finish: r.json.choices[0].finish_reason });
    }
    // Distinct prompts should lead to distinct answers, or the comparison below proves little.
    assert.ok(new Set(reference.map((r) => r.text)).size >= 3, JSON.stringify(reference));
  });

  it('warm-up: one stream per prompt concurrently, then measure RSS', async () => {
    const rs = await Promise.all(PROMPTS.map(({ path, body }) => streamRequest(server.url + path, { ...body, ...params })));
    rs.forEach((r, i) => assert.equal(r.text, reference[i].text, `warm-up stream ${i}`));
    rssWarm = await server.rssKiB();
  });

  it('every stream that is read to the end equals the reference; /health answers throughout', { timeout: 240000 }, async () => {
    const results = [];
    const health = [];
    let loadDone = false;
    const poller = (async () => {
      while (!loadDone) {
        const t0 = Date.now();
        const status = await healthStatus(server.url, { timeoutMs: 5000 });
        health.push({ status, ms: Date.now() - t0 });
        await sleep(250);
      }
    })();
    const t0 = Date.now();
    await Promise.all(Array.from({ length: CLIENTS }, (_, c) => runClient(server.url, c, results)));
    const loadMs = Date.now() - t0;
    loadDone = true;
    await poller;

    const failed = results.filter((r) => r.error);
    assert.deepEqual(failed, [], 'requests failed under load');
    const finished = results.filter((r) => r.mode === 'read-all');
    const aborted = results.filter((r) => r.mode !== 'read-all');
    assert.equal(finished.length + aborted.length, CLIENTS * REQUESTS_PER_CLIENT);
    assert.ok(aborted.length >= 2, 'some clients hang up mid-stream');
    const ids = new Set();
    for (const r of finished) {
      const where = `client ${r.client} request ${r.request} (prompt ${r.prompt})`;
      assert.equal(r.status, 200, `${where}: ${r.text}`);
      assert.ok(r.done, `${where}: no data: [DONE]`);
      assert.ok(r.finish, `${where}: no finish_reason`);
      assert.equal(r.text, reference[r.prompt].text, `${where}: text differs from the greedy reference`);
      assert.equal(r.finish, reference[r.prompt].finish, `${where}: finish_reason differs`);
      // Every chunk of one stream carries that stream's id, and no two streams share one.
      const streamIds = new Set(r.events.map((e) => e.id));
      assert.equal(streamIds.size, 1, `${where}: chunks with different ids`);
      const [id] = streamIds;
      assert.ok(!ids.has(id), `${where}: id ${id} reused`);
      ids.add(id);
    }
    const bad = health.filter((h) => h.status !== 200);
    assert.deepEqual(bad, [], '/health failed or timed out (5 s) during the load');
    assert.ok(health.length >= 3, `only ${health.length} health checks ran during ${loadMs} ms of load`);
    console.log(`load: ${finished.length} streams + ${aborted.length} hang-ups in ${loadMs} ms; ` +
      `health max ${Math.max(...health.map((h) => h.ms))} ms over ${health.length} checks`);
  });

  it('memory after the load stays near the warm-up level', async () => {
    await sleep(500);
    const rss = await server.rssKiB();
    console.log(`RSS warm ${rssWarm} KiB, after load ${rss} KiB`);
    assert.ok(rss <= rssWarm + RSS_GROWTH_LIMIT_KIB, `RSS grew from ${rssWarm} to ${rss} KiB`);
  });

  it('the server is alive and still answers the reference after the hang-ups', async () => {
    assert.ok(server.alive(), 'server exited');
    assert.equal(await healthStatus(server.url), 200);
    // All --parallel slots must be free again: as many concurrent requests as slots all finish.
    const rs = await Promise.all(PROMPTS.map(({ path, body }) => postJSON(server.url + path, { ...body, ...params })));
    rs.forEach((r, i) => assert.equal(answerText(r.json), reference[i].text, `prompt ${i} after the load`));
  });
});
