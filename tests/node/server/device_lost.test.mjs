// The GPU lost mid-request (a driver reset, a GPU that falls off the bus), injected through Dawn's
// ForceLoss after a few tokens (ZTVM_FAULT_LOSE_DEVICE_AFTER). Nothing the GPU computes can be
// trusted after that, so the server must not hang or answer garbage: the stream in flight ends with
// an error event naming the loss, requests that come next get a 503, /health says 503, and the
// process exits on its own with status 3 so a supervisor restarts it.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './harness.mjs';
import { postJSON, streamRequest, sleep } from './util.mjs';

const chat = (content, extra = {}) => ({ messages: [{ role: 'user', content }], temperature: 0, ...extra });

describe('GPU device lost mid-request', () => {
  let server;
  before(async () => {
    server = await startServer(['--parallel', '2'], { env: { ZTVM_FAULT_LOSE_DEVICE_AFTER: '5' } });
  });
  after(async () => { await server?.stop(); });

  it('ends the stream with an error, answers 503 after, and exits with status 3', async () => {
    const r = await streamRequest(server.url + '/v1/chat/completions', chat('Once upon a time', { max_tokens: 60 }));
    assert.equal(r.status, 200, 'the stream started before the loss');
    const err = r.events.find((e) => e.error);
    assert.ok(err, `no error event in the stream: ${JSON.stringify(r.events.slice(-2))}`);
    assert.match(err.error.message, /device was lost/);
    assert.equal(err.error.code, 'device_lost');
    assert.ok(r.done, 'the stream still ends with [DONE]');

    // The server answers for 2 s more before it goes: a clear 503, never a hang.
    const next = await postJSON(server.url + '/v1/chat/completions', chat('Hello', { max_tokens: 4 }));
    assert.equal(next.status, 503, next.text);
    assert.equal(next.json.error.code, 'device_lost');
    assert.match(next.json.error.message, /shutting down/);
    const emb = await postJSON(server.url + '/v1/embeddings', { input: 'a lost device' });
    assert.equal(emb.status, 503, emb.text);
    const health = await fetch(server.url + '/health');
    assert.equal(health.status, 503);
    assert.match((await health.json()).error, /device was lost/);

    for (let i = 0; i < 300 && server.alive(); i++) await sleep(100);
    assert.ok(!server.alive(), 'the server did not exit within 30 s of the loss');
    assert.equal(server.exitInfo().code, 3, server.stderr());
    assert.match(server.stderr(), /device was lost/);
  });
});
