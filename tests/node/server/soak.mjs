// The soak (`make soak`; not in CI: it runs for minutes). 32 clients for SOAK_SECONDS (600 by default)
// against one `ztvm serve`, each looping over a mix of requests: streamed and whole chat, legacy
// completions, tool requests, embeddings, streams the client hangs up on, and prompts longer than
// the context. It fails on any 5xx or transport error, on a text that differs from the answer the
// same request got alone before the load (greedy decoding is deterministic), on a long prompt that is
// not a 400, and on RSS that grows (start and end are printed; growth over 64 MiB fails).
//
//   ZTVM_BIN=build/ztvm SOAK_SECONDS=600 node tests/node/server/soak.mjs [ztvm serve args...]
import { startServer } from './harness.mjs';
import { postJSON, streamRequest, healthStatus, manyWords, sleep } from './util.mjs';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 600);
const CLIENTS = Number(process.env.SOAK_CLIENTS ?? 32);
const RSS_GROWTH_LIMIT_KIB = 64 * 1024;
const params = { max_tokens: 12, temperature: 0 };

const WEATHER_TOOL = {
  type: 'function',
  function: {
    name: 'get_weather', description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

// Requests with a reference answer: [path, body]; `stream` is chosen per request.
const ANSWERED = [
  ['/v1/chat/completions', { messages: [{ role: 'user', content: 'And God said, Let there be light' }] }],
  ['/v1/chat/completions', { messages: [{ role: 'system', content: 'Thou art a scribe.' }, { role: 'user', content: 'Who begat Enos?' }] }],
  ['/v1/chat/completions', { messages: [{ role: 'user', content: 'What is the weather in Paris?' }], tools: [WEATHER_TOOL], tool_choice: 'auto' }],
  ['/v1/completions', { prompt: 'In the beginning God created' }],
  ['/v1/completions', { prompt: 'Blessed are the meek: for they' }],
];
const EMBED_INPUTS = ['the lilies of the field', 'Once upon a time there was a little girl'];

const textOf = (j) => j.choices[0].message?.content ?? j.choices[0].text;
const callsOf = (j) => JSON.stringify(j.choices[0].message?.tool_calls ?? null);

const stats = { requests: 0, failures: [], byKind: {} };
function fail(kind, what) {
  if (stats.failures.length < 50) stats.failures.push(`${kind}: ${what}`);
}

async function oneRequest(url, ref, kind, i) {
  stats.byKind[kind] = (stats.byKind[kind] ?? 0) + 1;
  stats.requests++;
  if (kind === 'embed') {
    const k = i % EMBED_INPUTS.length;
    const r = await postJSON(url + '/v1/embeddings', { input: EMBED_INPUTS[k] });
    if (r.status !== 200) return fail(kind, `status ${r.status}: ${r.text.slice(0, 200)}`);
    const v = r.json.data[0].embedding;
    const d = Math.max(...v.map((x, j) => Math.abs(x - ref.embed[k][j])));
    if (d > 1e-4) fail(kind, `embedding differs from its solo answer by ${d}`);
    return;
  }
  if (kind === 'too-long') {
    const r = await postJSON(url + '/v1/completions', { prompt: manyWords(ref.tooLongWords), max_tokens: 4 });
    if (r.status !== 400 || r.json?.error?.code !== 'context_length_exceeded')
      fail(kind, `status ${r.status}, expected 400 context_length_exceeded: ${r.text.slice(0, 200)}`);
    return;
  }
  const k = i % ANSWERED.length;
  const [path, body] = ANSWERED[k];
  if (kind === 'hang-up') {
    const ctl = new AbortController();
    let pieces = 0;
    try {
      const r = await streamRequest(url + path, { ...body, ...params }, {
        signal: ctl.signal, onEvent: () => ++pieces >= 2,
      });
      ctl.abort();
      if (r.status !== 200) fail(kind, `status ${r.status}`);
    } catch (e) {
      if (e.name !== 'AbortError') fail(kind, String(e));
    }
    return;
  }
  if (kind === 'stream') {
    const r = await streamRequest(url + path, { ...body, ...params });
    if (r.status !== 200 || !r.done) return fail(kind, `status ${r.status}, done ${r.done}: ${r.text?.slice(0, 200)}`);
    if (r.text !== ref.text[k]) fail(kind, `request ${k}: ${JSON.stringify(r.text)} != solo ${JSON.stringify(ref.text[k])}`);
    return;
  }
  const r = await postJSON(url + path, { ...body, ...params });
  if (r.status !== 200) return fail(kind, `status ${r.status}: ${r.text.slice(0, 200)}`);
  if (textOf(r.json) !== ref.text[k] || callsOf(r.json) !== ref.calls[k])
    fail(kind, `request ${k}: ${JSON.stringify(textOf(r.json))} != solo ${JSON.stringify(ref.text[k])}`);
}

const KINDS = ['stream', 'whole', 'stream', 'embed', 'hang-up', 'whole', 'stream', 'too-long'];

async function client(url, ref, c, deadline) {
  for (let i = 0; Date.now() < deadline; i++) {
    const kind = KINDS[(c + i) % KINDS.length];
    try {
      await oneRequest(url, ref, kind, c * 7 + i);
    } catch (e) {
      fail(kind, `transport: ${e.cause?.code ?? e}`);
    }
  }
}

async function main() {
  const server = await startServer(['--parallel', '4', ...process.argv.slice(2)]);
  let code = 1;
  try {
    const ref = { text: [], calls: [], embed: [] };
    for (const [path, body] of ANSWERED) {
      const r = await postJSON(server.url + path, { ...body, ...params });
      if (r.status !== 200) throw new Error(`solo ${path}: ${r.status} ${r.text}`);
      ref.text.push(textOf(r.json));
      ref.calls.push(callsOf(r.json));
    }
    for (const input of EMBED_INPUTS) ref.embed.push((await postJSON(server.url + '/v1/embeddings', { input })).json.data[0].embedding);
    ref.tooLongWords = Number(process.env.SOAK_LONG_WORDS ?? 6000);  // a token or more each: past the context
    const rssStart = await server.rssKiB();
    console.log(`soak: ${CLIENTS} clients for ${SECONDS} s; RSS at start ${rssStart} KiB`);

    const deadline = Date.now() + SECONDS * 1000;
    const health = [];
    const poller = (async () => {
      while (Date.now() < deadline) {
        health.push(await healthStatus(server.url, { timeoutMs: 5000 }));
        await sleep(1000);
      }
    })();
    const rssSeries = [];
    const sampler = (async () => {
      while (Date.now() < deadline) {
        await sleep(30000);
        rssSeries.push(await server.rssKiB());
      }
    })();
    await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(server.url, ref, c, deadline)));
    await Promise.all([poller, sampler]);
    await sleep(1000);
    const rssEnd = await server.rssKiB();
    const badHealth = health.filter((h) => h !== 200).length;
    console.log(`soak: ${stats.requests} requests ${JSON.stringify(stats.byKind)}`);
    console.log(`soak: RSS start ${rssStart} KiB, end ${rssEnd} KiB, every 30 s: ${rssSeries.join(' ')}`);
    console.log(`soak: /health ${health.length - badHealth}/${health.length} answered 200 within 5 s`);
    if (!server.alive()) fail('server', `exited: ${JSON.stringify(server.exitInfo())}`);
    if (rssEnd > rssStart + RSS_GROWTH_LIMIT_KIB) fail('rss', `grew from ${rssStart} to ${rssEnd} KiB`);
    if (badHealth) fail('health', `${badHealth} checks failed`);
    for (const f of stats.failures) console.log(`FAIL ${f}`);
    code = stats.failures.length ? 1 : 0;
    console.log(code ? 'soak: FAILED' : 'soak: passed');
  } finally {
    await server.stop();
  }
  process.exit(code);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
