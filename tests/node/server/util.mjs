// Small helpers shared by the server tests: JSON and SSE requests over fetch, raw HTTP over
// node:net (for requests fetch refuses to send), and the checks every case repeats.
import assert from 'node:assert/strict';
import net from 'node:net';

// POST a JSON body (an object, or a string/Buffer sent as is) and return {status, headers, json, text}.
export async function postJSON(url, body, { headers = {}, signal } = {}) {
  const payload = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: payload,
    signal,
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* left null: callers assert on it */ }
  return { status: res.status, headers: res.headers, json, text };
}

// GET /health and return the status (a fetch error becomes status 0 so asserts show it).
export async function healthStatus(url, { timeoutMs = 10000 } = {}) {
  try {
    const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(timeoutMs) });
    await res.text();
    return res.status;
  } catch (e) {
    return `fetch failed: ${e.cause?.code ?? e.name}`;
  }
}

export async function assertHealthy(url) {
  assert.equal(await healthStatus(url), 200, 'GET /health must answer 200');
}

// The OpenAI error shape: {"error":{"message":STR,"type":STR,...}}.
export function assertOpenAIError(res, status, { type, code } = {}) {
  const want = Array.isArray(status) ? status : [status];
  assert.ok(want.includes(res.status), `status ${res.status}, expected ${want.join(' or ')}; body: ${res.text?.slice(0, 300)}`);
  assert.ok(res.json && typeof res.json === 'object', `error body is not JSON: ${JSON.stringify(res.text?.slice(0, 300))}`);
  const err = res.json.error;
  assert.ok(err && typeof err === 'object', `no "error" object in ${res.text.slice(0, 300)}`);
  assert.equal(typeof err.message, 'string', 'error.message must be a string');
  assert.ok(err.message.length > 0, 'error.message must not be empty');
  assert.equal(typeof err.type, 'string', 'error.type must be a string');
  if (type) assert.equal(err.type, type);
  if (code) assert.equal(err.code, code);
}

// Reads a `text/event-stream` response: every `data:` payload in order. `onEvent` may return
// true to stop reading early (the caller then aborts the request).
export async function readSSE(res, onEvent) {
  const events = [];
  let done = false;
  let buf = '';
  const decoder = new TextDecoder();
  const handle = (line) => {
    if (!line.startsWith('data:')) return false;
    const data = line.slice(5).trim();
    if (data === '[DONE]') { done = true; return false; }
    const ev = JSON.parse(data);
    events.push(ev);
    return onEvent ? onEvent(ev, events) === true : false;
  };
  for await (const chunk of res.body) {
    buf += decoder.decode(chunk, { stream: true });
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).replace(/\r$/, '');
      buf = buf.slice(nl + 1);
      if (handle(line)) return { events, done, stoppedEarly: true };
    }
  }
  if (buf.trim()) handle(buf.trim());
  return { events, done, stoppedEarly: false };
}

// POST a streaming request and read it through. Returns {status, events, done, text, finish}.
// `text` joins chat deltas or completion texts, whichever the chunks carry.
export async function streamRequest(url, body, { headers = {}, signal, onEvent } = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify({ ...body, stream: true }),
    signal,
  });
  if (res.status !== 200) {
    const text = await res.text();
    return { status: res.status, events: [], done: false, text, finish: null };
  }
  const { events, done, stoppedEarly } = await readSSE(res, onEvent);
  let text = '';
  let finish = null;
  for (const ev of events) {
    for (const c of ev.choices ?? []) {
      text += c.delta?.content ?? c.text ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { status: res.status, contentType: res.headers.get('content-type'), events, done, stoppedEarly, text, finish };
}

// Sends raw bytes on a fresh TCP connection and collects what comes back until the server closes
// or `timeoutMs` passes. Returns {status (number|null), head, body, raw, error, timedOut}.
export function rawHttp(url, data, { timeoutMs = 15000, endAfterWrite = false } = {}) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const chunks = [];
    let error = null;
    let timedOut = false;
    const sock = net.connect({ host: hostname, port: Number(port) });
    const finish = () => {
      clearTimeout(timer);
      sock.destroy();
      resolve({ ...parseRawResponse(Buffer.concat(chunks), error), timedOut });
    };
    const timer = setTimeout(() => { timedOut = true; finish(); }, timeoutMs);
    sock.on('data', (d) => {
      chunks.push(d);
      // One response is all we want: stop once its Content-Length body is complete.
      const r = parseRawResponse(Buffer.concat(chunks), null);
      if (r.complete) finish();
    });
    sock.on('error', (e) => { error = e.code ?? String(e); });
    sock.on('close', finish);
    sock.on('connect', () => {
      for (const part of Array.isArray(data) ? data : [data]) sock.write(part);
      if (endAfterWrite) sock.end();
    });
  });
}

export function parseRawResponse(buf, error) {
  const raw = buf.toString('latin1');
  const headEnd = raw.indexOf('\r\n\r\n');
  if (headEnd < 0) return { status: null, head: raw, body: '', raw, error, complete: false };
  const head = raw.slice(0, headEnd);
  const m = head.match(/^HTTP\/1\.[01] (\d{3})/);
  const bodyBytes = buf.subarray(Buffer.byteLength(raw.slice(0, headEnd + 4), 'latin1'));
  const len = head.match(/\r\ncontent-length:\s*(\d+)/i);
  if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) {
    const { body, complete } = dechunk(bodyBytes);
    return { status: m ? Number(m[1]) : null, head, body: body.toString('utf8'), raw, error, complete };
  }
  const complete = len ? bodyBytes.length >= Number(len[1]) : false;
  return { status: m ? Number(m[1]) : null, head, body: bodyBytes.toString('utf8'), raw, error, complete };
}

// Joins an HTTP/1.1 chunked body; `complete` once the zero-length chunk has arrived.
function dechunk(buf) {
  const parts = [];
  let pos = 0;
  for (;;) {
    const eol = buf.indexOf('\r\n', pos);
    if (eol < 0) return { body: Buffer.concat(parts), complete: false };
    const size = parseInt(buf.subarray(pos, eol).toString('latin1'), 16);
    if (Number.isNaN(size)) return { body: Buffer.concat(parts), complete: false };
    if (size === 0) return { body: Buffer.concat(parts), complete: true };
    if (eol + 2 + size > buf.length) return { body: Buffer.concat(parts), complete: false };
    parts.push(buf.subarray(eol + 2, eol + 2 + size));
    pos = eol + 2 + size + 2;
  }
}

// A whitespace-separated prompt of `n` words, for over-long-context cases.
export function manyWords(n) {
  const words = ['and', 'the', 'LORD', 'said', 'unto', 'Moses', 'behold', 'thy', 'servant', 'cometh'];
  return Array.from({ length: n }, (_, i) => words[i % words.length]).join(' ');
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
