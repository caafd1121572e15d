// A small Markdown renderer for model replies. It builds DOM nodes and puts model text only into
// text nodes, so HTML in a reply shows as text and can never create elements (no innerHTML here).
// Supported: headings, paragraphs, **bold**, *italic*, `code`, fenced code blocks (with a copy
// button), lists (nested by indentation), > quotes, --- rules, [links](https://...) and bare URLs.
'use strict';

(() => {
  const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)/;
  const HEADING = /^ {0,3}(#{1,6})(?:\s+(.*?))?(?:\s+#+)?\s*$/;
  const RULE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
  const QUOTE = /^ {0,3}> ?(.*)$/;
  const ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])(?:\s+(.*)|$)/;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // Only these schemes become clickable; anything else (javascript:, data:, ...) stays plain text.
  function safeHref(url) {
    return /^(https?:\/\/|mailto:)/i.test(url) ? url : null;
  }

  function link(href, parent, label) {
    const a = el('a');
    a.href = href;
    a.target = '_blank';
    a.rel = 'noopener noreferrer nofollow';
    if (label === undefined) a.textContent = href; else inline(label, a, true);
    parent.append(a);
  }

  // Inline spans; the earliest match wins, then the first alternative. `_` emphasis is not taken
  // inside words, so snake_case stays as it is. URLs may contain one level of balanced parentheses
  // (Wikipedia style) but do not take trailing punctuation.
  const URL_CHARS = String.raw`(?:[^\s<>()]|\([^\s<>()]*\))`;
  const SPAN = new RegExp([
    '(?<tick>`+)(?<code>[^`][\\s\\S]*?)\\k<tick>(?!`)',
    String.raw`\[(?<label>[^\]\n]+)\]\(\s*<?(?<href>${URL_CHARS}+?)>?\s*\)`,
    String.raw`\*\*\*(?=\S)(?<strongEm>[\s\S]*?\S)\*\*\*`,
    String.raw`\*\*(?=\S)(?<strong>[\s\S]*?\S)\*\*`,
    String.raw`__(?=\S)(?<strong2>[\s\S]*?\S)__`,
    String.raw`~~(?=\S)(?<del>[\s\S]*?\S)~~`,
    String.raw`\*(?=[^\s*])(?<em>[\s\S]*?[^\s*])\*`,
    String.raw`(?<![\p{L}\p{N}])_(?=[^\s_])(?<em2>[\s\S]*?[^\s_])_(?![\p{L}\p{N}])`,
    String.raw`(?<url>https?:\/\/${URL_CHARS}*(?:[^\s<>().,;:!?'"\]]|\([^\s<>()]*\)))`,
  ].join('|'), 'gu');

  // Appends the inline content of `text` to `parent`; "\n" inside a paragraph becomes a line break.
  // inLink: inside a link's label, where links would nest.
  function inline(text, parent, inLink = false) {
    const plain = (s) => {
      s.split('\n').forEach((line, i) => {
        if (i > 0) parent.append(el('br'));
        if (line) parent.append(document.createTextNode(line));
      });
    };
    const wrap = (tag, inner) => {
      const e = el(tag);
      inline(inner, e, inLink);
      return e;
    };
    let last = 0;
    for (const m of text.matchAll(SPAN)) {
      const g = m.groups;
      plain(text.slice(last, m.index));
      last = m.index + m[0].length;
      if (g.code !== undefined) {
        let code = g.code.replace(/\n/g, ' ');
        if (/^ .*[^ ].* $/.test(code)) code = code.slice(1, -1);
        parent.append(el('code', null, code));
      } else if (g.label !== undefined) {
        const href = safeHref(g.href);
        if (href && !inLink) link(href, parent, g.label); else plain(m[0]);
      } else if (g.strongEm !== undefined) {
        const b = el('strong');
        b.append(wrap('em', g.strongEm));
        parent.append(b);
      } else if (g.strong !== undefined || g.strong2 !== undefined) {
        parent.append(wrap('strong', g.strong ?? g.strong2));
      } else if (g.del !== undefined) {
        parent.append(wrap('del', g.del));
      } else if (g.em !== undefined || g.em2 !== undefined) {
        parent.append(wrap('em', g.em ?? g.em2));
      } else if (inLink) {
        plain(m[0]);
      } else {
        link(g.url, parent);
      }
    }
    plain(text.slice(last));
  }

  // Clipboard API needs a secure context (http://127.0.0.1 is one, a LAN address is not): fall back
  // to selecting a temporary textarea and the old copy command.
  async function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return;
    }
    const ta = el('textarea');
    ta.value = text;
    ta.setAttribute('readonly', '');
    ta.style.position = 'fixed';
    ta.style.opacity = '0';
    document.body.append(ta);
    ta.select();
    const ok = document.execCommand('copy');
    ta.remove();
    if (!ok) throw new Error('copy failed');
  }

  function codeBlock(code, lang) {
    const box = el('div', 'codeblock');
    const bar = el('div', 'codebar');
    bar.append(el('span', 'lang', lang || 'code'));
    const btn = el('button', 'copy', 'Copy');
    btn.type = 'button';
    btn.setAttribute('aria-label', 'Copy code');
    btn.addEventListener('click', () => {
      copyText(code).then(() => { btn.textContent = 'Copied'; },
                          () => { btn.textContent = 'Copy failed'; });
      setTimeout(() => { btn.textContent = 'Copy'; }, 1500);
    });
    bar.append(btn);
    const pre = el('pre');
    const c = el('code', null, code);
    if (lang) c.className = 'language-' + lang.replace(/[^\w+-]/g, '');
    pre.append(c);
    box.append(bar, pre);
    return box;
  }

  const indentOf = (line) => line.match(/^ */)[0].length;
  const startsBlock = (line) =>
    FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || ITEM.test(line);
  // Inside a paragraph only a numbered item starting at 1 begins a list, so that a line that merely
  // starts with "1999. " stays text (as in CommonMark).
  const interrupts = (line) => {
    const m = line.match(ITEM);
    return m ? !/\d/.test(m[2]) || parseInt(m[2], 10) === 1 : startsBlock(line);
  };

  // A list: consecutive items of one kind. Each item's own lines (its first line plus the lines
  // indented under it) are rendered recursively, which gives nested lists and code inside items.
  function list(lines, i, parent) {
    const first = lines[i].match(ITEM);
    const ordered = /\d/.test(first[2]);
    const marker = first[2].slice(-1);
    const ul = el(ordered ? 'ol' : 'ul');
    if (ordered && parseInt(first[2], 10) !== 1) ul.start = parseInt(first[2], 10);
    let loose = false;
    while (i < lines.length) {
      const m = lines[i].match(ITEM);
      if (!m || /\d/.test(m[2]) !== ordered || m[2].slice(-1) !== marker || RULE.test(lines[i])) break;
      const inner = m[1].length + m[2].length + 1;
      const body = [m[3] ?? ''];
      i++;
      // Continuation: indented lines, blank lines followed by indented lines, and lazy paragraph text.
      while (i < lines.length) {
        const line = lines[i];
        if (line.trim() === '') {
          if (i + 1 < lines.length && lines[i + 1].trim() !== '' && indentOf(lines[i + 1]) >= inner) {
            body.push('');
            loose = true;
            i++;
            continue;
          }
          break;
        }
        const ind = indentOf(line);
        const nested = ind > m[1].length + 1 && /^\s*([-*+]|\d{1,9}[.)])(\s|$)/.test(line);
        if (ind >= inner || nested) body.push(line.slice(Math.min(ind, inner)));
        else if (!startsBlock(line) && body[body.length - 1].trim() !== '') body.push(line.trim());
        else break;
        i++;
      }
      const li = el('li');
      blocks(body, li);
      ul.append(li);
      // A blank line between items makes the list loose (paragraphs keep their spacing).
      if (i + 1 < lines.length && lines[i] !== undefined && lines[i].trim() === '' && ITEM.test(lines[i + 1])) {
        const next = lines[i + 1].match(ITEM);
        if (/\d/.test(next[2]) === ordered && next[2].slice(-1) === marker) { loose = true; i++; }
      }
    }
    // Tight lists show their items' text without paragraph margins.
    if (!loose) {
      for (const li of ul.children) {
        for (const p of [...li.children]) if (p.tagName === 'P') p.replaceWith(...p.childNodes);
      }
    }
    parent.append(ul);
    return i;
  }

  function blocks(lines, parent) {
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      let m;
      if (line.trim() === '') {
        i++;
      } else if ((m = line.match(FENCE))) {
        // Code runs to the closing fence, or to the end while a reply is still streaming.
        const fence = m[1];
        const indent = indentOf(line);
        const code = [];
        i++;
        while (i < lines.length) {
          const close = lines[i].match(/^ {0,3}(`{3,}|~{3,})\s*$/);
          if (close && close[1][0] === fence[0] && close[1].length >= fence.length) { i++; break; }
          code.push(lines[i].replace(new RegExp('^ {0,' + indent + '}'), ''));
          i++;
        }
        parent.append(codeBlock(code.join('\n'), m[2]));
      } else if ((m = line.match(HEADING))) {
        const h = el('h' + m[1].length);
        inline(m[2] ?? '', h);
        parent.append(h);
        i++;
      } else if (RULE.test(line)) {
        parent.append(el('hr'));
        i++;
      } else if (QUOTE.test(line)) {
        const inner = [];
        while (i < lines.length && (m = lines[i].match(QUOTE))) { inner.push(m[1]); i++; }
        const q = el('blockquote');
        blocks(inner, q);
        parent.append(q);
      } else if (ITEM.test(line)) {
        i = list(lines, i, parent);
      } else {
        const para = [line.trim()];
        i++;
        while (i < lines.length && lines[i].trim() !== '' && !interrupts(lines[i])) para.push(lines[i++].trim());
        const p = el('p');
        inline(para.join('\n'), p);
        parent.append(p);
      }
    }
  }

  // render(text) -> DocumentFragment; the page and the tests use it as window.ztvmMarkdown.render.
  function render(text) {
    const frag = document.createDocumentFragment();
    blocks(String(text ?? '').replace(/\r\n?/g, '\n').replace(/\t/g, '    ').split('\n'), frag);
    return frag;
  }

  window.ztvmMarkdown = { render };
})();
