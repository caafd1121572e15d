// Hostile and broken clients: bad JSON, wrong types, huge bodies, broken UTF-8, half requests,
// hang-ups, garbage on the socket. Each must get a 4xx with an OpenAI error body (where an HTTP
// response is possible at all) and leave the server answering /health. The server runs with
// --parallel 1 so that a generation left running by a vanished client would be visible as a stall.
import { describe, it, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startServer } from './harness.mjs';
import { postJSON, assertOpenAIError, assertHealthy, rawHttp, sleep } from './util.mjs';

const CHAT = '/v1/chat/completions';
const USER = [{ role: 'user', content: 'And God said' }];
const bad = (over) => ({ messages: USER, max_tokens: 2, ...over });

// Requests the server must refuse with 400 invalid_request_error.
const BAD_REQUESTS = [
  ['invalid JSON', '{"messages": [{"role": "user", "content": "hi"'],
  ['empty body', ''],
  // Numbers past double's range: nlohmann raises out_of_range, not parse_error (found by fuzz_chat_request).
  ['a number past double range', '{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"temperature":-4E748}'],
  ['an integer of 200 digits', `{"messages":[{"role":"user","content":"hi"}],"max_tokens":${'3'.repeat(200)}}`],
  ['JSON array instead of an object', '[{"role":"user","content":"hi"}]'],
  ['JSON string instead of an object', '"hello"'],
  ['JSON number instead of an object', '42'],
  ['JSON null', 'null'],
  ['missing messages', { max_tokens: 2 }],
  ['empty messages', { messages: [], max_tokens: 2 }],
  ['messages a string', bad({ messages: 'And God said' })],
  ['messages an object', bad({ messages: { role: 'user', content: 'hi' } })],
  ['a message that is a string', bad({ messages: ['hi'] })],
  ['a message without role', bad({ messages: [{ content: 'hi' }] })],
  ['unknown role', bad({ messages: [{ role: 'wizard', content: 'hi' }] })],
  ['content a number', bad({ messages: [{ role: 'user', content: 42 }] })],
  ['content part text a number', bad({ messages: [{ role: 'user', content: [{ type: 'text', text: 5 }] }] })],
  ['max_tokens negative', bad({ max_tokens: -5 })],
  ['max_tokens a string', bad({ max_tokens: 'ten' })],
  ['temperature "hot"', bad({ temperature: 'hot' })],
  ['top_p an object', bad({ top_p: { a: 1 } })],
  ['stop a number', bad({ stop: 42 })],
  ['stream a string', bad({ stream: 'yes' })],
  ['tools a string', bad({ tools: 'get_weather' })],
  ['n = 3', bad({ n: 3 })],
  ['completions without prompt', { max_tokens: 2 }, '/v1/completions'],
  ['completions prompt an object', { prompt: { text: 'hi' }, max_tokens: 2 }, '/v1/completions'],
  ['tokenize content a number', { content: 7 }, '/tokenize'],
  ['detokenize tokens a string', { tokens: 'abc' }, '/detokenize'],
];

// A JSON body with raw bytes spliced into the content string.
const withBytes = (bytes) => Buffer.concat([
  Buffer.from('{"max_tokens":2,"messages":[{"role":"user","content":"And God'),
  Buffer.from(bytes),
  Buffer.from(' said"}]}'),
]);

describe('malformed requests', () => {
  let server;
  before(async () => { server = await startServer(['--parallel', '1']); });
  after(async () => {
    if (!server) return;
    assert.ok(server.alive(), `the server died: ${JSON.stringify(server.exitInfo())}\n${server.stderr().slice(-2000)}`);
    const exit = await server.stop();
    // SIGTERM must end it cleanly, not through a crash in shutdown.
    assert.ok(exit.code === 0 || exit.signal === 'SIGTERM', `exit after SIGTERM: ${JSON.stringify(exit)}`);
  });
  afterEach(async () => { if (server) await assertHealthy(server.url); });

  for (const [name, body, path = CHAT] of BAD_REQUESTS) {
    it(`${name} -> 400`, async () => {
      const res = await postJSON(server.url + path, body);
      assertOpenAIError(res, 400, { type: 'invalid_request_error' });
    });
  }

  it('unknown fields are ignored', async () => {
    const res = await postJSON(server.url + CHAT, bad({ frobnicate: { deep: [1, 2, { x: null }] }, user: 'u1', logit_bias: {} }));
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.usage.completion_tokens, 2);
  });

  for (const [name, bytes] of [
    ['invalid UTF-8 bytes (ff fe)', [0xff, 0xfe]],
    ['a truncated UTF-8 sequence', [0xe2, 0x82]],
    ['an overlong UTF-8 encoding of "/"', [0xc0, 0xaf]],
    ['a UTF-8 encoded surrogate', [0xed, 0xa0, 0x80]],
  ]) {
    it(`${name} inside a JSON string -> 400`, async () => {
      const res = await postJSON(server.url + CHAT, withBytes(bytes));
      assertOpenAIError(res, 400, { type: 'invalid_request_error' });
    });
  }

  it('a lone surrogate escape (\\ud800) is refused or replaced, not a crash', async () => {
    const res = await postJSON(server.url + CHAT, '{"max_tokens":2,"messages":[{"role":"user","content":"a\\ud800b"}]}');
    if (res.status !== 200) assertOpenAIError(res, 400);
  });

  it('detokenize with token ids out of range is refused, not a crash', async () => {
    const res = await postJSON(`${server.url}/detokenize`, { tokens: [-1, 2 ** 31 - 1, 1e12] });
    assertOpenAIError(res, 400);
  });

  it('a 20 MiB body -> 413 or 400', { timeout: 60000 }, async () => {
    const { hostname, port } = new URL(server.url);
    const content = 'a'.repeat(20 * 1024 * 1024);
    const body = `{"messages":[{"role":"user","content":"${content}"}]}`;
    const head = `POST ${CHAT} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`;
    const res = await rawHttp(server.url, [head, body], { timeoutMs: 45000 });
    assert.ok(res.status !== null, `no HTTP response (socket: ${res.error}); got ${JSON.stringify(res.raw.slice(0, 200))}`);
    assertOpenAIError({ status: res.status, text: res.body, json: safeJSON(res.body) }, [413, 400]);
  });

  it('unknown paths -> 404 not_found_error', async () => {
    const get = await fetch(`${server.url}/v1/nope`);
    assertOpenAIError(await asRes(get), 404, { type: 'not_found_error' });
    const post = await postJSON(`${server.url}/v2/chat/completions`, bad({}));
    assertOpenAIError(post, 404, { type: 'not_found_error' });
  });

  it('wrong methods -> 405 or 404', async () => {
    for (const [method, path] of [['GET', CHAT], ['PUT', '/v1/completions'], ['DELETE', '/v1/models'], ['POST', '/health']]) {
      const res = await fetch(server.url + path, { method, ...(method === 'GET' ? {} : { body: '{}' }) });
      assertOpenAIError(await asRes(res), [405, 404]);
    }
  });

  it('a client that sends half the headers, then disconnects', async () => {
    await sendAndHangUp(server.url, `POST ${CHAT} HTTP/1.1\r\nHost: localhost\r\nContent-Le`);
  });

  it('a client that sends half the body, then disconnects', async () => {
    const body = JSON.stringify(bad({}));
    await sendAndHangUp(server.url, `POST ${CHAT} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${body.length}\r\n\r\n${body.slice(0, body.length / 2)}`);
  });

  it('a client that disconnects mid-stream stops its generation', { timeout: 60000 }, async () => {
    const body = JSON.stringify({ messages: USER, max_tokens: 400, temperature: 0, stream: true });
    const req = `POST ${CHAT} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    const sawData = await new Promise((resolve, reject) => {
      const { hostname, port } = new URL(server.url);
      const sock = net.connect({ host: hostname, port: Number(port) }, () => sock.write(req));
      let got = '';
      const timer = setTimeout(() => { sock.destroy(); reject(new Error(`no stream data in 30 s: ${got.slice(0, 300)}`)); }, 30000);
      sock.on('data', (d) => {
        got += d;
        if ((got.match(/data: /g) ?? []).length >= 3) { clearTimeout(timer); sock.destroy(); resolve(true); }
      });
      sock.on('error', () => {});
    });
    assert.ok(sawData);
    // With one slot, the next request waits for that slot. The abandoned generation had ~400
    // tokens to go (about 20 s on the CPU); the next one must not wait for them.
    const t0 = Date.now();
    const res = await postJSON(server.url + CHAT, bad({ max_tokens: 4 }));
    const ms = Date.now() - t0;
    assert.equal(res.status, 200, res.text);
    assert.ok(ms < 8000, `the next request took ${ms} ms: the abandoned generation kept running`);
  });

  it('garbage bytes on the socket get a 4xx or a closed connection', async () => {
    let seed = 12345;
    const rand = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) & 0xff;
    for (const junk of [
      Buffer.from(Array.from({ length: 4096 }, rand)),
      Buffer.from('\x00\x01\x02 / HTTP/1.1\r\n\r\n'),
      Buffer.from('GET /health HTTP/1.1\r\nHost: x\r\nX-Long: ' + 'h'.repeat(64 * 1024) + '\r\n\r\n'),
      Buffer.from('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n'),
    ]) {
      const res = await rawHttp(server.url, [junk, Buffer.from('\r\n\r\n')], { timeoutMs: 8000 });
      const what = JSON.stringify(junk.subarray(0, 40).toString('latin1'));
      assert.ok(!res.timedOut, `neither an answer nor a close in 8 s for ${what}`);
      if (res.status !== null) assert.ok(res.status >= 400 && res.status < 500, `status ${res.status} for ${what}`);
      await assertHealthy(server.url);
    }
  });

  // A declared length over the limit needs no body to be refused: waiting for one that never
  // comes holds a server thread until the read timeout.
  it('a Content-Length over the limit (or negative) with no body -> prompt 413 or 400', { timeout: 60000 }, async () => {
    for (const len of [String(64 << 20), '99999999999999999999', '-7']) {
      const t0 = Date.now();
      const res = await rawHttp(server.url, `POST ${CHAT} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${len}\r\n\r\n{}`, { timeoutMs: 40000 });
      const ms = Date.now() - t0;
      assert.ok([413, 400].includes(res.status), `Content-Length ${len}: status ${res.status}`);
      assertOpenAIError({ status: res.status, text: res.body, json: safeJSON(res.body) }, [413, 400]);
      assert.ok(ms < 5000, `Content-Length ${len}: the answer took ${ms} ms`);
    }
  });

  it('many connections opened and closed at once', async () => {
    const { hostname, port } = new URL(server.url);
    const open = (i) => new Promise((resolve) => {
      const sock = net.connect({ host: hostname, port: Number(port) });
      sock.on('error', () => resolve());
      sock.on('close', () => resolve());
      sock.on('connect', () => {
        // Some hang up at once, some mid-request, some right after a full request.
        if (i % 3 === 1) sock.write(`POST ${CHAT} HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"mess`);
        if (i % 3 === 2) sock.write(`GET /health HTTP/1.1\r\nHost: x\r\n\r\n`);
        sock.destroy();
      });
    });
    await Promise.all(Array.from({ length: 300 }, (_, i) => open(i)));
  });

  it('/health answers while 32 idle connections are held open', { timeout: 60000 }, async () => {
    const { hostname, port } = new URL(server.url);
    const socks = await Promise.all(Array.from({ length: 32 }, () => new Promise((resolve) => {
      const s = net.connect({ host: hostname, port: Number(port) }, () => resolve(s));
      s.on('error', () => resolve(s));
    })));
    await sleep(200);
    const t0 = Date.now();
    const res = await fetch(`${server.url}/health`, { signal: AbortSignal.timeout(30000) }).catch((e) => e);
    const ms = Date.now() - t0;
    socks.forEach((s) => s.destroy());
    assert.equal(res.status, 200, String(res));
    assert.ok(ms < 3000, `/health took ${ms} ms behind idle connections`);
  });

  it('the server still generates normally at the end', async () => {
    assert.ok(server.alive());
    const res = await postJSON(server.url + CHAT, bad({ max_tokens: 3 }));
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.usage.completion_tokens, 3);
  });
});

function safeJSON(text) {
  try { return JSON.parse(text); } catch { return null; }
}

async function asRes(fetchRes) {
  const text = await fetchRes.text();
  return { status: fetchRes.status, text, json: safeJSON(text) };
}

// Writes `data` and closes the socket without waiting for an answer.
function sendAndHangUp(url, data) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const sock = net.connect({ host: hostname, port: Number(port) }, () => {
      sock.write(data, () => setTimeout(() => { sock.destroy(); resolve(); }, 100));
    });
    sock.on('error', () => resolve());
  });
}
