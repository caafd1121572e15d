// Writes a Hugging Face tokenizer.json for a SentencePiece-style BPE vocabulary read from llama2.c's
// tokenizer.bin, laid out like the files HF publishes for Llama 2 / Phi-3 (Prepend + Replace
// normalizers, no pre-tokenizer, BPE with byte_fallback, Replace/ByteFallback/Fuse/Strip decoder).
//   node spm_json.js TOKENIZER_BIN OUT_JSON
// The merges are every split of a piece into two pieces, best merged-piece score first. The test
// compares our loader with HF's on this same file, so HF stays the judge of how it is read. Three
// extra added tokens carry the lstrip / rstrip / single_word flags.
'use strict';
const fs = require('fs');

const [binPath, outPath] = process.argv.slice(2);
if (!binPath || !outPath) {
  console.error('usage: node spm_json.js TOKENIZER_BIN OUT_JSON');
  process.exit(2);
}

// tokenizer.bin: int32 max_token_length, then per token: float32 score, int32 length, bytes.
const buf = fs.readFileSync(binPath);
const pieces = [];
const scores = [];
for (let pos = 4; pos + 8 <= buf.length;) {
  const score = buf.readFloatLE(pos);
  const len = buf.readInt32LE(pos + 4);
  pos += 8;
  pieces.push(buf.subarray(pos, pos + len).toString('utf8'));
  scores.push(score);
  pos += len;
}
// llama2.c writes spaces where SentencePiece has "▁", and wraps BOS/EOS in newlines.
const vocab = Object.create(null);  // no prototype: pieces such as "constructor" are plain keys
pieces.forEach((p, id) => {
  let piece = p.replace(/ /g, '\u2581');
  if (id === 1) piece = '<s>';
  if (id === 2) piece = '</s>';
  pieces[id] = piece;
  if (!(piece in vocab)) vocab[piece] = id;
});

const isByte = (p) => /^<0x[0-9A-F]{2}>$/.test(p);
const merges = [];
pieces.forEach((piece, id) => {
  if (id < 3 || isByte(piece)) return;
  const chars = Array.from(piece);
  for (let k = 1; k < chars.length; k++) {
    const left = chars.slice(0, k).join('');
    const right = chars.slice(k).join('');
    if (left in vocab && right in vocab) merges.push([left, right, id]);
  }
});
merges.sort((a, b) => scores[b[2]] - scores[a[2]] || a[2] - b[2] || vocab[a[0]] - vocab[b[0]]);

const special = (id, content, flags = {}) => ({ id, content, single_word: false, lstrip: false, rstrip: false,
  normalized: false, special: true, ...flags });
// Chat-style added tokens exercising lstrip / rstrip / single_word (as Phi-3's files use them).
const n = pieces.length;
const extra = [special(n, '<|user|>', { rstrip: true }), special(n + 1, '<|end|>', { lstrip: true }),
  special(n + 2, '<|word|>', { single_word: true, special: false })];
const tokenizer = {
  version: '1.0',
  truncation: null,
  padding: null,
  added_tokens: [special(0, '<unk>'), special(1, '<s>'), special(2, '</s>'), ...extra],
  normalizer: {
    type: 'Sequence',
    normalizers: [{ type: 'Prepend', prepend: '\u2581' }, { type: 'Replace', pattern: { String: ' ' }, content: '\u2581' }],
  },
  pre_tokenizer: null,
  post_processor: {
    type: 'TemplateProcessing',
    single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
    pair: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
      { SpecialToken: { id: '<s>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
    special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] } },
  },
  decoder: {
    type: 'Sequence',
    decoders: [{ type: 'Replace', pattern: { String: '\u2581' }, content: ' ' }, { type: 'ByteFallback' },
      { type: 'Fuse' }, { type: 'Strip', content: ' ', start: 1, stop: 0 }],
  },
  model: {
    type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null, end_of_word_suffix: null,
    fuse_unk: true, byte_fallback: true, ignore_merges: false, vocab, merges: merges.map((m) => [m[0], m[1]]),
  },
};
fs.writeFileSync(outPath, JSON.stringify(tokenizer));
