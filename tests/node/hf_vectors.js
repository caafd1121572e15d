// Writes tokenizer reference vectors from Hugging Face `tokenizers` (npm, pinned in package.json):
//   node hf_vectors.js TOKENIZER_JSON OUT_JSONL COUNT SEED
// Each output line is {"text", "ids" (no special tokens added), "ids_special" (with them),
// "decoded" (decode(ids_special), special tokens kept)}. The texts are generated from a seeded PRNG
// so a failure reproduces: mixed scripts, emoji, whitespace runs, digits, contractions, code and the
// tokenizer's own special tokens (HF always matches those in text).
'use strict';
const fs = require('fs');
const { Tokenizer } = require('tokenizers');

const [jsonPath, outPath, countArg, seedArg] = process.argv.slice(2);
if (!jsonPath || !outPath) {
  console.error('usage: node hf_vectors.js TOKENIZER_JSON OUT_JSONL [COUNT] [SEED]');
  process.exit(2);
}
const count = Number(countArg || 2000);
let state = Number(seedArg || 1) >>> 0;

// mulberry32: a small, well-mixed 32-bit PRNG, so runs are reproducible from the seed.
function rand() {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (arr) => arr[Math.floor(rand() * arr.length)];
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const fromRange = (lo, hi, n) => Array.from({ length: n }, () => String.fromCodePoint(int(lo, hi))).join('');

const tok = Tokenizer.fromFile(jsonPath);
// Added-token texts of the vocabularies we test: <|...|> (Qwen, Llama 3), <think>, <s>, </s>, <unk>.
const specials = Object.keys(tok.getVocab(true)).filter((t) => /^<\|.*\|>$|^<\/?think>$|^<tool_call>$|^<\/?s>$|^<unk>$/.test(t));

const words = ['the', 'The', 'HELLO', 'world', 'Tokenizer', 'naïve', 'café', 'über', 'straße', 'ﬁne', 'x',
  'a', 'I', 'don', 'can', 'won', 'Ölçek', 'ĳs', 'ſtill', 'KELVIN', 'ǅemal'];
const contractions = ["'s", "'S", "'t", "'T", "'re", "'RE", "'ve", "'Ve", "'m", "'M", "'ll", "'LL", "'d", "'D",
  "n't", "'", "''", "'x"];
const spaces = [' ', '  ', '   ', '\t', '\n', '\n\n', '\r\n', ' \n', '\n ', '\u00a0', '\u3000', '\u2009', '\u200b',
  '\u2028', '\u0085', '    ', '\t\t', ' \t ', '\n\n\n  '];
const punct = ['.', ',', '!', '?', '...', '—', '–', '(', ')', '[', ']', '{', '}', '"', '«', '»', '“', '”', '#',
  '$', '%', '&', '*', '+', '=', '<', '>', '/', '\\', '|', '~', '`', '^', '@', ';', ':', '-', '_', '<|', '|>',
  '<|im', '</', '::', '->', '!='];
const emoji = ['😀', '👍🏽', '👨‍👩‍👧‍👦', '🇫🇷', '❤️', '🦙', '🤖', '✅', '☺', '🏳️‍🌈', '1️⃣', '🫠'];
const scripts = [
  () => fromRange(0x0430, 0x044f, int(1, 8)),  // Cyrillic
  () => fromRange(0x03b1, 0x03c9, int(1, 8)),  // Greek
  () => fromRange(0x05d0, 0x05ea, int(1, 6)),  // Hebrew
  () => fromRange(0x0627, 0x064a, int(1, 6)),  // Arabic
  () => 'नमस्ते दुनिया'.slice(0, int(1, 13)),      // Devanagari with marks
  () => 'สวัสดีชาวโลก'.slice(0, int(1, 12)),       // Thai with marks
  () => fromRange(0x4e00, 0x9fa5, int(1, 6)),  // CJK
  () => fromRange(0xac00, 0xd7a3, int(1, 5)),  // Hangul
  () => fromRange(0x3041, 0x3096, int(1, 6)),  // Hiragana
  () => fromRange(0x30a1, 0x30fa, int(1, 6)),  // Katakana
  () => 'e\u0301' + pick(['', 'te\u0301', '\u0300\u0323']),  // decomposed accents (NFC matters)
  () => 'A\u030a' + 'ngstro\u0308m',
  () => fromRange(0x00c0, 0x00ff, int(1, 5)),  // Latin-1 letters
  () => fromRange(0x2200, 0x22ff, int(1, 4)),  // math operators
  () => fromRange(0x2460, 0x24ff, int(1, 3)),  // enclosed numbers
  () => fromRange(0x0660, 0x0669, int(1, 4)),  // Arabic-Indic digits
  () => fromRange(0xff01, 0xff5e, int(1, 4)),  // full-width forms
];
const code = ['def f(x):\n    return x + 1\n', 'if (a && b) {\n\tfoo();\n}', 'for i in range(10):', '    ',
  'https://example.com/a?b=c&d=1', 'x = [1, 2, 3]', '#include <stdio.h>', '  // comment', '<div class="a">'];

function digits() {
  const n = int(1, 12);
  let s = '';
  for (let i = 0; i < n; i++) s += String(int(0, 9));
  return s;
}

function piece() {
  const r = rand();
  if (r < 0.22) return pick(words);
  if (r < 0.32) return pick(contractions);
  if (r < 0.46) return pick(spaces);
  if (r < 0.56) return pick(punct);
  if (r < 0.63) return digits();
  if (r < 0.68) return pick(emoji);
  if (r < 0.82) return pick(scripts)();
  if (r < 0.87) return pick(code);
  if (r < 0.93 && specials.length) return pick(specials);
  return ' ' + pick(words);
}

function text() {
  const n = int(1, 24);
  let s = '';
  for (let i = 0; i < n; i++) s += piece();
  return s;
}

(async () => {
  const lines = [];
  for (let i = 0; i < count; i++) {
    const t = text();
    const plain = await tok.encode(t, null, { addSpecialTokens: false });
    const withSpecial = await tok.encode(t, null, { addSpecialTokens: true });
    const decoded = await tok.decode(withSpecial.getIds(), false);
    lines.push(JSON.stringify({ text: t, ids: plain.getIds(), ids_special: withSpecial.getIds(), decoded }));
  }
  fs.writeFileSync(outPath, lines.join('\n') + '\n');
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
