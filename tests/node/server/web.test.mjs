// The chat page at / in headless Chromium against a real `ztvm serve`: model name, streaming,
// Stop, reload persistence, phone layout, Markdown rendering (and that model text cannot inject
// HTML), error display and the API key setting. The default model writes KJV-like text at ~20
// tokens/s on CPU, so replies are kept short except the one we stop.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { startServer } from './harness.mjs';

const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';
let server, browser, context, page;

before(async () => {
  server = await startServer();
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  context = await browser.newContext({ viewport: { width: 1024, height: 768 } });
  page = await context.newPage();
  page.on('pageerror', (e) => { pageErrors.push(e.message); });
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

const pageErrors = [];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const lastReply = () => page.locator('.msg.assistant .content').last().innerText();

// Opens Settings, sets the given fields (by element id) and closes the dialog with Done.
async function setSettings(values) {
  await page.click('#settings-btn');
  for (const [id, v] of Object.entries(values)) await page.fill('#' + id, String(v));
  await page.click('#settings-close');
  await page.waitForSelector('#settings', { state: 'hidden' });
}

async function modelId(url, headers = {}) {
  const resp = await fetch(url + '/v1/models', { headers });
  assert.equal(resp.status, 200);
  return (await resp.json()).data[0].id;
}

// Records the reply's text every 25 ms until `until()` is true; returns the distinct lengths seen.
async function watchReply(until, timeoutMs) {
  const lengths = [];
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const n = (await lastReply()).length;
    if (n > 0 && n !== lengths[lengths.length - 1]) lengths.push(n);
    if (await until(lengths)) return lengths;
    await sleep(25);
  }
  throw new Error(`reply did not finish in ${timeoutMs} ms; lengths seen: ${lengths}`);
}

const exchanges = [];  // [{user, reply}] as shown, compared again after a reload

test('the page loads and shows the model name from /v1/models', async () => {
  const id = await modelId(server.url);
  await page.goto(server.url + '/');
  await page.waitForFunction((want) => document.getElementById('model').textContent === want, id);
  assert.ok(await page.isVisible('#prompt'));
  assert.equal(await page.locator('.msg').count(), 0);
});

test('Shift+Enter adds a line, Enter sends and the reply streams in', async () => {
  await setSettings({ 'max-tokens': 40 });
  await page.click('#prompt');
  await page.keyboard.type('In the beginning');
  await page.keyboard.press('Shift+Enter');
  await page.keyboard.type('God created');
  assert.equal(await page.inputValue('#prompt'), 'In the beginning\nGod created');
  assert.equal(await page.locator('.msg').count(), 0, 'Shift+Enter must not send');

  await page.keyboard.press('Enter');
  assert.equal(await page.inputValue('#prompt'), '', 'the box is cleared on send');
  await page.waitForSelector('#stop', { state: 'visible' });
  const lengths = await watchReply(async () => page.isHidden('#stop'), 60000);
  assert.ok(lengths.length >= 2, `saw the reply at ${lengths.length} length(s) only: ${lengths}`);
  for (let i = 1; i < lengths.length; i++) assert.ok(lengths[i] > lengths[i - 1], `shrank: ${lengths}`);

  const reply = await lastReply();
  assert.ok(reply.trim().length > 0);
  assert.equal(await page.locator('.msg.user .content').last().innerText(), 'In the beginning\nGod created');
  assert.match(await page.innerText('#stats'), /^\d+ tokens? · \d+(\.\d)? tok\/s$/);
  assert.ok(await page.isVisible('#send'));
  exchanges.push({ user: 'In the beginning\nGod created', reply });
});

test('Stop ends a long reply, keeps the partial text and frees the input', async () => {
  await setSettings({ 'max-tokens': 400 });
  await page.fill('#prompt', 'And the LORD spake unto Moses, saying');
  await page.click('#send');
  // Let a few pieces arrive (at ~20 tokens/s a 400-token reply would run ~20 s), then stop.
  await watchReply(async (lengths) => lengths.length >= 3, 60000);
  assert.ok(await page.isVisible('#stop'), 'the reply should still be streaming');
  await page.click('#stop');
  await page.waitForSelector('#send', { state: 'visible', timeout: 5000 });

  const partial = await lastReply();
  assert.ok(partial.trim().length > 0, 'the partial reply is kept');
  await sleep(1500);
  assert.equal(await lastReply(), partial, 'the text must not grow after Stop');
  assert.match(await page.locator('.msg.assistant .meta').last().innerText(), /stopped/);
  assert.ok(await page.isEnabled('#prompt'));
  assert.ok(await page.isEnabled('#send'));
  await page.fill('#prompt', 'typing works');
  assert.equal(await page.inputValue('#prompt'), 'typing works');
  await page.fill('#prompt', '');
  assert.ok(server.alive());
  exchanges.push({ user: 'And the LORD spake unto Moses, saying', reply: partial });
});

test('a reload shows both exchanges again', async () => {
  await page.reload();
  await page.waitForSelector('.msg.assistant');
  const users = await page.locator('.msg.user .content').allInnerTexts();
  const replies = await page.locator('.msg.assistant .content').allInnerTexts();
  assert.deepEqual(users, exchanges.map((e) => e.user));
  assert.deepEqual(replies, exchanges.map((e) => e.reply));
  // Settings survive too: the last max-tokens value set through the dialog.
  await page.click('#settings-btn');
  assert.equal(await page.inputValue('#max-tokens'), '400');
  await page.click('#settings-close');
});

test('on a 375x667 phone screen nothing scrolls sideways and the send box is on screen', async () => {
  const check = async (what) => {
    const m = await page.evaluate(() => {
      const box = (id) => document.getElementById(id).getBoundingClientRect().toJSON();
      return {
        scrollWidth: document.scrollingElement.scrollWidth,
        innerWidth: window.innerWidth,
        // The conversation clips sideways overflow, so also check that nothing in it is cut off.
        listScroll: document.getElementById('messages').scrollWidth,
        listWidth: document.getElementById('messages').clientWidth,
        // Wide code blocks must scroll inside themselves rather than be cut off.
        clippedCode: [...document.querySelectorAll('#messages pre')].filter((p) =>
          p.scrollWidth > p.clientWidth && !['auto', 'scroll'].includes(getComputedStyle(p).overflowX)).length,
        innerHeight: window.innerHeight,
        prompt: box('prompt'),
        send: box('send'),
      };
    });
    assert.ok(m.scrollWidth <= m.innerWidth, `${what}: page is ${m.scrollWidth}px wide in ${m.innerWidth}px`);
    assert.ok(m.listScroll <= m.listWidth, `${what}: messages are ${m.listScroll}px wide in ${m.listWidth}px`);
    assert.equal(m.clippedCode, 0, `${what}: code blocks cut off`);
    for (const b of [m.prompt, m.send]) {
      assert.ok(b.width > 0 && b.left >= 0 && b.right <= m.innerWidth, `${what}: ${JSON.stringify(b)}`);
      assert.ok(b.top >= 0 && b.bottom <= m.innerHeight, `${what}: ${JSON.stringify(b)}`);
    }
  };
  await page.setViewportSize({ width: 375, height: 667 });
  await check('the conversation so far');

  // Content that tends to break phone layouts: an unbroken long word, a long code line, a long link.
  const wide = ['Selah'.repeat(40), '```', 'let x = "' + 'y'.repeat(300) + '";', '```',
    'https://example.org/' + 'a'.repeat(200)].join('\n\n');
  await page.evaluate((text) => {
    const chat = JSON.parse(localStorage.getItem('ztvm.chat.v1'));
    chat.push({ role: 'user', content: 'z'.repeat(300) }, { role: 'assistant', content: text, finish: 'stop' });
    localStorage.setItem('ztvm.chat.v1', JSON.stringify(chat));
  }, wide);
  await page.reload();
  await page.waitForSelector('.codeblock');
  await check('long words and code');
  await page.setViewportSize({ width: 1024, height: 768 });
});

test('Markdown renders the usual elements and model text cannot create HTML', async () => {
  const md = [
    '## Psalm', 'Blessed is the **man** that *walketh* not,', 'see `verse 1`.', '',
    '- first', '- second', '  1. nested', '', '3. third', '4. fourth', '',
    '> a quote', '', '[KJV](https://example.org/kjv) and [bad](javascript:alert(1))', '',
    '```js', 'const a = "<b>1</b>";', '```',
  ].join('\n');
  const r = await page.evaluate((text) => {
    const div = document.createElement('div');
    div.append(window.ztvmMarkdown.render(text));
    const q = (s) => [...div.querySelectorAll(s)];
    return {
      h2: q('h2').map((e) => e.textContent),
      para: q(':scope > p').map((e) => [e.textContent, e.querySelectorAll('br').length]),
      strong: q('p strong').map((e) => e.textContent),
      em: q('p em').map((e) => e.textContent),
      inlineCode: q('p code').map((e) => e.textContent),
      ulItems: div.querySelector('ul')?.children.length,
      nested: q('ul li ol li').map((e) => e.textContent),
      ol: q(':scope > ol').map((e) => [e.start, e.children.length]),
      quote: q('blockquote').map((e) => e.textContent.trim()),
      links: q('a').map((e) => [e.textContent, e.getAttribute('href')]),
      code: q('pre code').map((e) => e.textContent),
      copyButtons: q('.codeblock button').length,
      b: q('b').length,
    };
  }, md);
  assert.deepEqual(r.h2, ['Psalm']);
  assert.deepEqual(r.para[0], ['Blessed is the man that walketh not,see verse 1.', 1], 'one line break');
  assert.deepEqual(r.strong, ['man']);
  assert.deepEqual(r.em, ['walketh']);
  assert.deepEqual(r.inlineCode, ['verse 1']);
  assert.equal(r.ulItems, 2);
  assert.deepEqual(r.nested, ['nested']);
  assert.deepEqual(r.ol, [[3, 2]]);
  assert.deepEqual(r.quote, ['a quote']);
  assert.deepEqual(r.links, [['KJV', 'https://example.org/kjv']], 'javascript: links stay text');
  assert.deepEqual(r.code, ['const a = "<b>1</b>";']);
  assert.equal(r.copyButtons, 1);
  assert.equal(r.b, 0);

  // Hostile text through the renderer: no elements beyond Markdown's own, and the text shows as is.
  const evil = [
    '<img src=x onerror="window.__xss=1">', '<script>window.__xss=1</script>',
    '**<svg onload="window.__xss=1">**', '`<iframe src="javascript:window.__xss=1">`',
    '[x](javascript:window.__xss=1) <a href="javascript:window.__xss=1">y</a>',
    '```\n</code></pre><img src=x onerror="window.__xss=1">\n```',
  ].join('\n\n');
  const bad = await page.evaluate((text) => {
    window.__xss = 0;
    const div = document.createElement('div');
    div.append(window.ztvmMarkdown.render(text));
    const tags = new Set(['P', 'STRONG', 'CODE', 'DIV', 'SPAN', 'BUTTON', 'PRE']);
    return {
      foreign: [...div.querySelectorAll('*')].map((e) => e.tagName).filter((t) => !tags.has(t)),
      onAttrs: [...div.querySelectorAll('*')].flatMap((e) => e.getAttributeNames()).filter((a) => a.startsWith('on')),
      text: div.textContent,
    };
  }, evil);
  assert.deepEqual(bad.foreign, []);
  assert.deepEqual(bad.onAttrs, []);
  assert.ok(bad.text.includes('<img src=x onerror="window.__xss=1">'));
  assert.ok(bad.text.includes('<script>window.__xss=1</script>'));

  // The same text as a stored reply, shown by the page itself after a reload.
  await page.evaluate((text) => {
    localStorage.setItem('ztvm.chat.v1', JSON.stringify([
      { role: 'user', content: '<img src=x onerror="window.__xss=1">' },
      { role: 'assistant', content: text, finish: 'stop' }]));
  }, evil);
  await page.reload();
  await page.waitForSelector('.msg.assistant');
  await sleep(300);
  assert.equal(await page.evaluate(() => window.__xss), undefined);
  assert.equal(await page.locator('#messages img, #messages script, #messages svg, #messages iframe').count(), 0);
  assert.match(await page.locator('.msg.user .content').innerText(), /<img src=x/);
});

test('the copy button puts the code on the clipboard', async () => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
  await page.evaluate(() => {
    localStorage.setItem('ztvm.chat.v1', JSON.stringify([
      { role: 'user', content: 'code' },
      { role: 'assistant', content: 'Here:\n\n```\nfor verse in psalm:\n    sing(verse)\n```', finish: 'stop' }]));
  });
  await page.reload();
  await page.click('.codeblock .copy');
  await page.waitForFunction(() => document.querySelector('.codeblock .copy').textContent === 'Copied');
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), 'for verse in psalm:\n    sing(verse)');
});

test('New chat clears the conversation, also after a reload', async () => {
  await page.click('#new-chat');
  assert.equal(await page.locator('.msg').count(), 0);
  await page.reload();
  await page.waitForSelector('#prompt');
  assert.equal(await page.locator('.msg').count(), 0);
  assert.ok(await page.isVisible('#empty'));
});

test('a server error shows the server\'s error.message', async () => {
  // A prompt far longer than the 512-token context: the server answers 400 before streaming.
  const long = 'And it came to pass '.repeat(300);
  const direct = await fetch(server.url + '/v1/chat/completions', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: long }], stream: true, max_tokens: 8 }),
  });
  assert.equal(direct.status, 400);
  const { error } = await direct.json();
  assert.ok(error.message.length > 0);

  await page.fill('#prompt', long);
  await page.click('#send');
  const shown = page.locator('.msg.assistant .error').last();
  await shown.waitFor({ state: 'visible', timeout: 20000 });
  const text = await shown.innerText();
  assert.ok(text.includes('400') && text.includes(error.message), `shown: ${text}`);
  assert.ok(await page.isVisible('#send'));
  await page.click('#new-chat');
});

test('with --api-key the page asks for the key and sends it as a Bearer token', async () => {
  const keyed = await startServer(['--api-key', 'psalm-23']);
  try {
    const id = await modelId(keyed.url, { Authorization: 'Bearer psalm-23' });
    const p = await context.newPage();
    await p.goto(keyed.url + '/');
    await p.waitForFunction(() => document.getElementById('model').textContent === 'model unavailable');
    assert.match(await p.getAttribute('#model', 'title'), /401/);

    await p.fill('#prompt', 'Hear, O Israel');
    await p.click('#send');
    const err = p.locator('.msg.assistant .error').last();
    await err.waitFor({ state: 'visible', timeout: 20000 });
    assert.match(await err.innerText(), /401.*API key/);

    await p.click('#settings-btn');
    await p.fill('#api-key', 'psalm-23');
    await p.fill('#max-tokens', '8');
    await p.fill('#temperature', '0.3');
    await p.fill('#system-prompt', 'Answer as the Preacher.');
    await p.click('#settings-close');
    await p.waitForFunction((want) => document.getElementById('model').textContent === want, id);
    await p.fill('#prompt', 'Hear, O Israel');
    const [request] = await Promise.all([
      p.waitForRequest((r) => r.url().endsWith('/v1/chat/completions')),
      p.click('#send'),
    ]);
    await p.waitForSelector('#send', { state: 'visible', timeout: 30000 });
    // The settings go into the request; the failed first exchange does not.
    assert.equal(request.headers().authorization, 'Bearer psalm-23');
    const sent = request.postDataJSON();
    assert.deepEqual(sent.messages, [
      { role: 'system', content: 'Answer as the Preacher.' }, { role: 'user', content: 'Hear, O Israel' }]);
    assert.equal(sent.max_tokens, 8);
    assert.equal(sent.temperature, 0.3);
    assert.equal(sent.stream, true);
    const last = p.locator('.msg.assistant').last();
    assert.equal(await last.locator('.error').isVisible(), false);
    assert.ok((await last.locator('.content').innerText()).trim().length > 0);
    await p.close();
  } finally {
    await keyed.stop();
  }
});

test('no script errors on the page', () => {
  assert.deepEqual(pageErrors, []);
});
