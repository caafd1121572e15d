// The chat page: keeps the conversation and settings in localStorage, streams replies from
// POST v1/chat/completions (server-sent events) and renders them with window.ztvmMarkdown.
// URLs are relative so the page also works when ztvm sits behind a proxy under a sub-path.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const CHAT_KEY = 'ztvm.chat.v1';
  const SETTINGS_KEY = 'ztvm.settings.v1';
  const DEFAULTS = { temperature: 0.8, max_tokens: 256, system: '', apiKey: '' };

  // A message: {role: 'user'|'assistant', content, stopped?, error?, finish?, stats?: {tokens, tps}}.
  let messages = load(CHAT_KEY, []);
  let settings = { ...DEFAULTS, ...load(SETTINGS_KEY, {}) };
  let modelName = null;
  let controller = null;  // AbortController of the reply being streamed, null when idle

  function load(key, fallback) {
    try {
      const v = JSON.parse(localStorage.getItem(key));
      return v === null ? fallback : v;
    } catch {
      return fallback;  // storage disabled or corrupt: start fresh rather than fail
    }
  }
  function store(key, value) {
    try { localStorage.setItem(key, JSON.stringify(value)); } catch { /* full or disabled */ }
  }
  const saveChat = () => store(CHAT_KEY, messages);

  function authHeaders() {
    return settings.apiKey ? { Authorization: 'Bearer ' + settings.apiKey } : {};
  }

  // Turns a failed response into a readable line, preferring the server's error.message.
  async function httpError(resp) {
    let detail = '', code = '';
    try {
      const body = await resp.json();
      detail = body?.error?.message || '';
      code = body?.error?.code || '';
    } catch { /* not JSON */ }
    let msg = `HTTP ${resp.status}${resp.statusText ? ' ' + resp.statusText : ''}`;
    if (detail) msg += ': ' + detail;
    if (resp.status === 401) msg += ' (set the API key in Settings)';
    if (code === 'context_length_exceeded') msg += ' (start a new chat)';
    return msg;
  }

  // ---- rendering ----

  const list = $('messages');
  const HINT = 'Enter sends · Shift+Enter adds a line';

  function statsText(s) {
    if (!s || !s.tokens) return '';
    const rate = s.tps ? ` · ${s.tps.toFixed(1)} tok/s` : '';
    return `${s.tokens} token${s.tokens === 1 ? '' : 's'}${rate}`;
  }

  function fillMessage(article, m) {
    const body = article.querySelector('.content');
    if (m.role === 'assistant') body.replaceChildren(window.ztvmMarkdown.render(m.content));
    else body.textContent = m.content;
    const notes = [];
    if (m.stopped) notes.push('stopped');
    else if (m.finish === 'length') notes.push('max tokens reached');
    const st = statsText(m.stats);
    if (st) notes.push(st);
    article.querySelector('.meta').textContent = notes.join(' · ');
    const err = article.querySelector('.error');
    err.hidden = !m.error;
    err.textContent = m.error || '';
  }

  function messageElement(m) {
    const a = document.createElement('article');
    a.className = 'msg ' + m.role;
    const who = document.createElement('div');
    who.className = 'who';
    who.textContent = m.role === 'user' ? 'You' : (modelName || 'Model');
    const body = document.createElement('div');
    body.className = 'content';
    const err = document.createElement('div');
    err.className = 'error';
    err.setAttribute('role', 'alert');
    const meta = document.createElement('div');
    meta.className = 'meta';
    a.append(who, body, err, meta);
    fillMessage(a, m);
    return a;
  }

  function renderAll() {
    list.querySelectorAll('.msg').forEach((e) => e.remove());
    $('empty').hidden = messages.length > 0;
    for (const m of messages) list.append(messageElement(m));
    list.scrollTop = list.scrollHeight;
  }

  // Follow the reply while the reader is at the bottom; leave them alone after they scroll up.
  const nearBottom = () => list.scrollHeight - list.scrollTop - list.clientHeight < 80;

  function setBusy(busy) {
    $('send').hidden = busy;
    $('stop').hidden = !busy;
    list.setAttribute('aria-busy', busy ? 'true' : 'false');
  }

  // ---- streaming a reply ----

  // The request's messages: the system prompt, then the conversation without failed or empty replies
  // (and without the user turns those replies answered, so roles keep alternating).
  function requestMessages(upTo) {
    const out = [];
    const system = String(settings.system || '');
    if (system.trim()) out.push({ role: 'system', content: system });
    for (let i = 0; i < upTo; i++) {
      const m = messages[i];
      const next = messages[i + 1];
      if (m.role === 'user' && next && next.role === 'assistant' && i + 1 < upTo &&
          (next.error || !next.content)) { i++; continue; }
      out.push({ role: m.role, content: m.content });
    }
    return out;
  }

  async function send(text) {
    messages.push({ role: 'user', content: text });
    const reply = { role: 'assistant', content: '' };
    messages.push(reply);
    saveChat();
    $('empty').hidden = true;
    list.append(messageElement(messages[messages.length - 2]));
    const article = messageElement(reply);
    list.append(article);
    list.scrollTop = list.scrollHeight;

    const mine = new AbortController();
    controller = mine;
    setBusy(true);
    const stats = $('stats');
    stats.textContent = 'waiting for the first token…';
    let chunks = 0, firstAt = 0, finalTps = 0, usageTokens = 0;
    let frame = 0, lastSave = 0;

    // Re-rendering the whole reply is cheap at chat sizes; do it at most once per frame.
    const redraw = () => {
      frame = 0;
      const follow = nearBottom();
      const secs = (performance.now() - firstAt) / 1000;
      reply.stats = { tokens: chunks, tps: secs > 0.2 ? chunks / secs : 0 };
      fillMessage(article, reply);
      stats.textContent = statsText(reply.stats) || 'generating…';
      if (follow) list.scrollTop = list.scrollHeight;
      // Save now and then so a reload during a long reply keeps what has arrived.
      if (performance.now() - lastSave > 1000) { lastSave = performance.now(); saveChat(); }
    };

    const onChunk = (chunk) => {
      if (chunk.error) throw new Error(chunk.error.message || 'server error');
      const choice = chunk.choices && chunk.choices[0];
      const piece = choice?.delta?.content;
      if (piece) {
        if (!firstAt) firstAt = performance.now();
        chunks++;
        reply.content += piece;
        if (!frame) frame = requestAnimationFrame(redraw);
      }
      if (choice?.finish_reason) reply.finish = choice.finish_reason;
      if (chunk.timings?.predicted_per_second) finalTps = chunk.timings.predicted_per_second;
      if (chunk.usage?.completion_tokens) usageTokens = chunk.usage.completion_tokens;
    };

    try {
      const resp = await fetch('v1/chat/completions', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...authHeaders() },
        body: JSON.stringify({
          model: modelName || undefined,
          messages: requestMessages(messages.length - 1),
          stream: true,
          stream_options: { include_usage: true },
          temperature: Number(settings.temperature),
          max_tokens: Number(settings.max_tokens),
        }),
        signal: mine.signal,
      });
      if (!resp.ok) throw new Error(await httpError(resp));
      const reader = resp.body.getReader();
      const decoder = new TextDecoder();
      let buf = '';
      let done = false;
      while (!done) {
        const { value, done: eof } = await reader.read();
        if (eof) break;
        buf += decoder.decode(value, { stream: true });
        const lines = buf.split('\n');
        buf = lines.pop();  // an incomplete line waits for the next read
        for (const raw of lines) {
          const line = raw.replace(/\r$/, '');
          if (!line.startsWith('data:')) continue;  // blank separators, comments, event names
          const data = line.slice(5).trim();
          if (data === '[DONE]') { done = true; break; }
          onChunk(JSON.parse(data));
        }
      }
      if (done) reader.cancel().catch(() => {});
    } catch (e) {
      if (e.name === 'AbortError') {
        reply.stopped = true;
      } else {
        mine.abort();  // a broken stream: close the connection so the server stops too
        reply.error = e instanceof TypeError ? 'Network error: ' + e.message : e.message;
      }
    } finally {
      if (frame) cancelAnimationFrame(frame);
      const tokens = usageTokens || chunks;
      const secs = firstAt ? (performance.now() - firstAt) / 1000 : 0;
      // The server's own rate (from the final chunk's timings) is more exact than counting chunks.
      reply.stats = { tokens, tps: finalTps || (secs > 0 ? chunks / secs : 0) };
      fillMessage(article, reply);
      saveChat();
      // After "New chat" this reply is gone and another may be streaming: leave the composer alone.
      if (controller === mine) {
        controller = null;
        stats.textContent = (!reply.error && statsText(reply.stats)) || HINT;
        setBusy(false);
        if (nearBottom()) list.scrollTop = list.scrollHeight;
      }
    }
  }

  // ---- model name ----

  async function loadModel() {
    const el = $('model');
    try {
      const resp = await fetch('v1/models', { headers: authHeaders() });
      if (!resp.ok) throw new Error(await httpError(resp));
      const body = await resp.json();
      modelName = body?.data?.[0]?.id || null;
      el.textContent = modelName || 'no model';
      el.title = modelName || '';
      el.classList.remove('bad');
    } catch (e) {
      modelName = null;
      el.textContent = 'model unavailable';
      el.title = e.message;
      el.classList.add('bad');
    }
    document.querySelectorAll('.msg.assistant .who').forEach((w) => { w.textContent = modelName || 'Model'; });
  }

  // ---- composer ----

  const prompt = $('prompt');

  // The textarea grows with its text up to a limit set in CSS (max-height), then scrolls.
  function autosize() {
    prompt.style.height = 'auto';
    prompt.style.height = prompt.scrollHeight + 'px';
  }

  function submit() {
    const text = prompt.value.trim();
    if (!text || controller) return;
    prompt.value = '';
    autosize();
    send(text);
  }

  $('composer').addEventListener('submit', (e) => { e.preventDefault(); submit(); });
  prompt.addEventListener('input', autosize);
  prompt.addEventListener('keydown', (e) => {
    // Enter sends, Shift+Enter is a new line; leave Enter alone while an IME composes text.
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      submit();
    }
  });
  $('stop').addEventListener('click', () => {
    if (controller) controller.abort();
    prompt.focus();
  });
  $('new-chat').addEventListener('click', () => {
    if (controller) controller.abort();
    controller = null;
    setBusy(false);
    messages = [];
    saveChat();
    renderAll();
    $('stats').textContent = HINT;
    prompt.focus();
  });

  // ---- settings ----

  const dialog = $('settings');
  const fields = {
    temperature: $('temperature'), max_tokens: $('max-tokens'), system: $('system-prompt'), apiKey: $('api-key'),
  };

  function showSettings() {
    for (const [k, input] of Object.entries(fields)) input.value = settings[k];
  }

  // Number fields fall back to the default when cleared or out of range, so a request never
  // carries NaN.
  function readSettings() {
    const num = (input, def, lo, hi) => {
      const v = Number(input.value);
      return input.value.trim() !== '' && Number.isFinite(v) && v >= lo && v <= hi ? v : def;
    };
    const keyChanged = fields.apiKey.value.trim() !== settings.apiKey;
    settings = {
      temperature: num(fields.temperature, DEFAULTS.temperature, 0, 2),
      max_tokens: Math.round(num(fields.max_tokens, DEFAULTS.max_tokens, 1, 32768)),
      system: fields.system.value,
      apiKey: fields.apiKey.value.trim(),
    };
    store(SETTINGS_KEY, settings);
    if (keyChanged) loadModel();
  }

  $('settings-btn').addEventListener('click', () => { showSettings(); dialog.showModal(); });
  for (const input of Object.values(fields)) input.addEventListener('change', readSettings);
  dialog.addEventListener('close', () => { readSettings(); prompt.focus(); });
  $('settings-reset').addEventListener('click', () => {
    settings = { ...DEFAULTS, apiKey: settings.apiKey };
    showSettings();
    store(SETTINGS_KEY, settings);
  });

  // ---- start ----

  // A reply that was streaming when the page went away ends there; say so rather than leave it open.
  for (const m of messages) {
    if (m.role === 'assistant' && !m.finish && !m.error && !m.stopped) m.stopped = true;
  }
  renderAll();
  $('stats').textContent = HINT;
  autosize();
  loadModel();
  prompt.focus();
})();
