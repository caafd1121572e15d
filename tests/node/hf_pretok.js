// Writes the pieces Hugging Face `tokenizers` (npm, pinned) cuts sample texts into, for each
// pre-tokenizer we implement: Split (every behaviour, inverted or not, literal patterns), Metaspace
// (prepend schemes, split on/off), Digits and ByteLevel.
//   node hf_pretok.js OUT_JSON
// Output: a JSON array of {kind, options..., text, pieces}.
'use strict';
const fs = require('fs');
const t = require('tokenizers');

const outPath = process.argv[2];
if (!outPath) {
  console.error('usage: node hf_pretok.js OUT_JSON');
  process.exit(2);
}

const texts = ['--a--b-c-', 'a-b', '-', 'abc', 'x\u2581\u2581y\u2581', 'ababab-ab', '  hello  world ', 'a1b22c333 44',
  'née  ü\u00a0x', "it's 12,345 ok?!\n\n  end", '\u2581lead', 'tail\u2581', '日本語 テキスト 123'];
const cases = [];
const pieces = (pre, text) => pre.preTokenizeString(text).map((p) => p[0]);

for (const pattern of ['-', '\u2581', 'ab', ' ']) {
  for (const behavior of ['removed', 'isolated', 'mergedWithPrevious', 'mergedWithNext', 'contiguous']) {
    for (const invert of [false, true]) {
      const pre = t.splitPreTokenizer(pattern, behavior, invert);
      for (const text of texts) cases.push({ kind: 'Split', pattern, behavior, invert, text, pieces: pieces(pre, text) });
    }
  }
}
for (const scheme of ['always', 'first', 'never']) {
  for (const split of [true, false]) {
    const pre = t.metaspacePreTokenizer('\u2581', scheme, split);
    for (const text of texts) cases.push({ kind: 'Metaspace', scheme, split, text, pieces: pieces(pre, text) });
  }
}
for (const individual of [true, false]) {
  const pre = t.digitsPreTokenizer(individual);
  for (const text of texts) cases.push({ kind: 'Digits', individual, text, pieces: pieces(pre, text) });
}
for (const addPrefixSpace of [true, false]) {
  for (const useRegex of [true, false]) {
    const pre = t.byteLevelPreTokenizer(addPrefixSpace, useRegex);
    for (const text of texts) cases.push({ kind: 'ByteLevel', addPrefixSpace, useRegex, text, pieces: pieces(pre, text) });
  }
}
fs.writeFileSync(outPath, JSON.stringify(cases));
