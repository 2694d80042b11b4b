// The tokenizers library's own ids for tests/test_tokenizer_json.c: writes four small
// tokenizer.json fixtures under tests/data/tokenizer-json/ and, for each, golden.json with the
// ids the library's encode gives many texts (and its decode of them).
//
//   cd tools && npm install --no-save tokenizers && cd .. && node tools/tokenizer_json_reference.mjs [NAME...]
//
// (tools/node_modules is git-ignored: the library is a test-time reference only.) The fixtures:
//   bert-wordpiece   BertNormalizer, BertPreTokenizer, WordPiece over 6,000 entries of
//                    bert-sst2-tiny's vocab.txt, BertProcessing, the WordPiece decoder;
//   roberta-bpe      byte-level BPE trained here on SST-2's train sentences (GPT-2's pattern),
//                    RobertaProcessing, the ByteLevel decoder, <mask> with lstrip;
//   xlmr-unigram     tests/data/xlmr-micro's SentencePiece Unigram converted as transformers'
//                    XLMRobertaConverter does: Precompiled (its charsmap), Replace " {2,}",
//                    Metaspace, TemplateProcessing <s> $A </s>;
//   clip-bpe         CLIP's real merges (the first 4,000 of ../shared/data/clip/merges.txt) as
//                    transformers' CLIPConverter writes them: NFC, Replace \s+, Lowercase, CLIP's
//                    Split, ByteLevel, BPE with "</w>", RobertaProcessing;
//   gpt2-split       roberta-bpe's model behind the Nmt and ByteLevel normalizers and a Split on
//                    "Ġ" (MergedWithNext), no post-processor;
//   mixed-wordpiece, unigram-first, clip-variants: the other components on those vocabularies
//                    (NFKD, NFD, StripAccents, Strip, WhitespaceSplit, Whitespace, Split's other
//                    behaviours, Punctuation, Digits, Metaspace "first", Unigram byte_fallback,
//                    ignore_merges, the ByteLevel post-processor, BPEDecoder);
//   bpe-prefix       BPE with continuing_subword_prefix "##" trained here, Digits Contiguous;
//   llama-bpe        Metaspace BPE with byte_fallback (a Gemma/Llama-like one, trained here):
//                    Prepend/Replace normalizers, no pre-tokenizer, the Sequence decoder of
//                    Replace, ByteFallback, Fuse and Strip, and added tokens of every flag.
// bert-wordpiece and roberta-bpe also get offsets.json: each valid UTF-8 text's encoding.offsets (the npm binding
// counts code points, as Python's does; vit's are bytes, which the test converts).
// Texts: the first 400 SST-2 dev sentences and hard cases (accents, CJK, emoji, invalid UTF-8,
// white-space runs, added tokens glued to words, empty text), each stored as base64 bytes; 67
// pairs; and 2,000 generated texts (generated-texts.json, random mixes of words, white-space runs,
// accents, scripts, emoji, control characters, special tokens, long words), whose ids and
// decodes' FNV-1a hashes go to each fixture's generated.json.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(new URL('./', import.meta.url));
const { Tokenizer } = require('tokenizers');

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const out = path.join(root, 'tests/data/tokenizer-json');
const shared = path.join(root, '../shared');

function sst2(file, n) {
  return fs.readFileSync(path.join(shared, 'data/sst2', file), 'utf8').split('\n').slice(1)
    .filter((l) => l.includes('\t')).slice(0, n).map((l) => l.split('\t')[0]);
}

// ---- texts ----
const hard = [
  '', ' ', '   ', 'Hello world!', 'Hello   world', '  leading and trailing  ', 'tab\there\nnew line',
  'Café déjà vu, naïve façade', 'ÀÉÎÕÜ ñ Ç', 'İstanbul', 'ﬁne ｆｕｌｌｗｉｄｔｈ ①②③', 'x² H₂O',
  '日本語のテキスト', '中文分词测试', '한국어 텍스트', 'Привет мир', 'مرحبا بالعالم',
  'emoji 😀👍🏽 👨‍👩‍👧 🇫🇷', 'numbers 12345 3.14159 1,000,000', "don't won't it's I'm they're",
  'a\u00a0b\u2003c', 'zero\u200bwidth', 'control\u0007char', '----====____', '<<<>>>',
  'ALLCAPS lowercase MiXeD', 'supercalifragilisticexpialidocious', 'x'.repeat(300),
  '<mask> is glued<mask>here', 'a <s> b </s> c', '<|tag|>word', 'word<|tag|>', 'the <|tag|> end',
  '[CLS] already [SEP]', 'hello [MASK] world', '<special>inside</special>', '▁metaspace▁char',
];
const invalid = [
  Buffer.from([0x61, 0xff, 0x62]), Buffer.from([0xe2, 0x82, 0x41]), Buffer.from([0xc3]),
  Buffer.from([0x63, 0x61, 0x66, 0xc3, 0xa9, 0xed, 0xa0, 0x80, 0x21]),
];
const texts = [...sst2('dev.tsv', 400), ...hard].map((t) => Buffer.from(t, 'utf8')).concat(invalid);
// pairs (encode(a, b)): consecutive dev sentences, then empty, long and glued ones
const dev = sst2('dev.tsv', 61);
const pairs = [...dev.slice(0, 60).map((a, i) => [a, dev[i + 1]]), ['', ''], ['', 'x'], ['hello', ''],
  ['x'.repeat(300), 'short one'], [dev.slice(0, 8).join(' '), dev.slice(8, 12).join(' ')],
  ['<mask> a <|tag|>b', 'b <mask> [MASK]'], ['Café déjà', '日本語 😀']];

// ---- generated texts: random mixes of what tokenizers stumble on (seeded, so the same each run) ----
function generatedTexts(n) {
  let seed = 42;
  const rand = () => { // mulberry32
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = (a) => a[Math.floor(rand() * a.length)];
  const words = sst2('train.tsv', 3000).join(' ').split(' ').filter((w) => w);
  const pieces = [
    () => pick(words), () => pick(words).toUpperCase(), () => pick(words) + pick(words),
    () => ' '.repeat(1 + Math.floor(rand() * 5)), () => pick(['\t', '\n', '\r\n', '\u00a0', '\u3000', '\u2028']),
    () => pick(['é', 'e\u0301', 'ñ', 'n\u0303', 'Å', 'ø', 'ß', 'İ', 'ı', 'Σ', 'ς', 'ﬁ', 'Ǆ', '²', '½', 'Ⅻ', 'ｆｕｌｌ']),
    () => pick(['日本語', '中文', '한국어', 'Ελληνικά', 'русский', 'العربية', 'हिन्दी', 'ไทย', 'עברית']),
    () => pick(['😀', '👍🏽', '👨‍👩‍👧', '🇫🇷', '❤️', '🤖', '\u200b', '\u200d', '\ufeff', '\u0007', '\u0001', '\ufffd']),
    () => pick(['[CLS]', '[SEP]', '[MASK]', '[PAD]', '<mask>', '<s>', '</s>', '<pad>', '<unk>', '<|tag|>', '<special>',
      '</special>', '<|startoftext|>', '<|endoftext|>', '<0x41>', '▁', '##ing']),
    () => pick(["'s", "'t", "'re", "'ll", "n't", '...', '--', '!?', '(', ')', '"', "''", '``', ',', '.']),
    () => String(Math.floor(rand() * 1e6)), () => 'x'.repeat(90 + Math.floor(rand() * 30)),
  ];
  const out = [];
  for (let i = 0; i < n; i++) {
    let t = '';
    const k = Math.floor(rand() * 12);
    for (let j = 0; j < k; j++) t += pick(pieces)() + (rand() < 0.5 ? ' ' : '');
    out.push(t);
  }
  return out;
}

// FNV-1a over the UTF-8 bytes: a decode's text, compared without storing it
function fnv(text) {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(text, 'utf8')) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h;
}

// ---- a small BPE trainer over symbol lists (the fixtures need merges, not a good vocab) ----
function trainBpe(words, merges, alphabet) {
  const vocab = new Map();
  for (const s of alphabet) if (!vocab.has(s)) vocab.set(s, vocab.size);
  let seqs = [...words.entries()].map(([w, c]) => [[...w], c]);
  for (const [w] of seqs) for (const s of w) if (!vocab.has(s)) vocab.set(s, vocab.size);
  const list = [];
  for (let m = 0; m < merges; m++) {
    const counts = new Map();
    for (const [w, c] of seqs)
      for (let i = 0; i + 1 < w.length; i++) {
        const k = w[i] + '\u0000' + w[i + 1];
        counts.set(k, (counts.get(k) || 0) + c);
      }
    let best = null, bestCount = 1;
    for (const [k, c] of counts) if (c > bestCount || (c === bestCount && best !== null && k < best)) best = k, bestCount = c;
    if (!best) break;
    const [a, b] = best.split('\u0000');
    list.push([a, b]);
    if (!vocab.has(a + b)) vocab.set(a + b, vocab.size);
    seqs = seqs.map(([w, c]) => {
      const o = [];
      for (let i = 0; i < w.length; i++)
        if (i + 1 < w.length && w[i] === a && w[i + 1] === b) o.push(a + b), i++;
        else o.push(w[i]);
      return [o, c];
    });
  }
  return { vocab: Object.fromEntries(vocab), merges: list };
}

// The same over words whose later characters carry a "##" prefix: a merge (a, ##b) makes a + b.
function trainBpePrefix(words, merges, alphabet) {
  const vocab = new Map();
  for (const s of alphabet) if (!vocab.has(s)) vocab.set(s, vocab.size);
  let seqs = [...words.entries()].map(([w, c]) => [[...w].map((ch, i) => (i ? '##' + ch : ch)), c]);
  for (const [w] of seqs) for (const s of w) if (!vocab.has(s)) vocab.set(s, vocab.size);
  const list = [];
  for (let m = 0; m < merges; m++) {
    const counts = new Map();
    for (const [w, c] of seqs)
      for (let i = 0; i + 1 < w.length; i++) {
        const k = w[i] + '\u0000' + w[i + 1];
        counts.set(k, (counts.get(k) || 0) + c);
      }
    let best = null, bestCount = 1;
    for (const [k, c] of counts) if (c > bestCount || (c === bestCount && best !== null && k < best)) best = k, bestCount = c;
    if (!best) break;
    const [a, b] = best.split('\u0000');
    const joined = a + b.slice(2);
    list.push([a, b]);
    if (!vocab.has(joined)) vocab.set(joined, vocab.size);
    seqs = seqs.map(([w, c]) => {
      const o = [];
      for (let i = 0; i < w.length; i++)
        if (i + 1 < w.length && w[i] === a && w[i + 1] === b) o.push(joined), i++;
        else o.push(w[i]);
      return [o, c];
    });
  }
  return { vocab: Object.fromEntries(vocab), merges: list };
}

function byteChars() {
  const bs = [];
  for (let b = 33; b <= 126; b++) bs.push(b);
  for (let b = 161; b <= 172; b++) bs.push(b);
  for (let b = 174; b <= 255; b++) bs.push(b);
  const map = new Array(256);
  let n = 0;
  for (let b = 0; b < 256; b++) map[b] = bs.includes(b) ? String.fromCodePoint(b) : String.fromCodePoint(256 + n++);
  return map;
}

const GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

// ---- the fixtures ----
function bertWordpiece() {
  const lines = fs.readFileSync(path.join(shared, 'models/bert-sst2-tiny/vocab.txt'), 'utf8').split('\n');
  const vocab = {};
  lines.slice(0, 6000).forEach((t, i) => { if (t && !(t in vocab)) vocab[t] = Object.keys(vocab).length; });
  const id = (t) => vocab[t];
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'].map((t) => ({
      id: id(t), content: t, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: { type: 'BertProcessing', sep: ['[SEP]', id('[SEP]')], cls: ['[CLS]', id('[CLS]')] },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab },
  };
}

let robertaModel = null; // trained once: gpt2-split reuses it
function robertaBpe() {
  const bc = byteChars();
  const words = new Map();
  const re = new RegExp(GPT2, 'gu');
  for (const s of sst2('train.tsv', 20000))
    for (const w of (' ' + s).match(re) || []) {
      const sym = [...Buffer.from(w, 'utf8')].map((b) => bc[b]).join('');
      words.set(sym, (words.get(sym) || 0) + 1);
    }
  const specials = ['<s>', '<pad>', '</s>', '<unk>'];
  robertaModel = robertaModel || trainBpe(words, 1500, [...specials, ...bc]);
  const { vocab: v, merges } = robertaModel;
  const vocab = { ...v, '<mask>': Object.keys(v).length };
  const tok = (t, o = {}) => ({ id: vocab[t], content: t, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true, ...o });
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [tok('<s>'), tok('<pad>'), tok('</s>'), tok('<unk>'), tok('<mask>', { lstrip: true })],
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: { type: 'RobertaProcessing', sep: ['</s>', 2], cls: ['<s>', 0], trim_offsets: true, add_prefix_space: false },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '',
      fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges },
  };
}

// SentencePiece's ModelProto, just the fields the converter reads.
function readSpm(file) {
  const buf = fs.readFileSync(file);
  const varint = (b, p) => { let r = 0n, s = 0n; for (;;) { const x = b[p.i++]; r |= BigInt(x & 127) << s; s += 7n; if (!(x & 128)) return Number(r); } };
  const fields = (b) => {
    const p = { i: 0 }, o = [];
    while (p.i < b.length) {
      const key = varint(b, p), f = key >> 3, w = key & 7;
      if (w === 0) o.push([f, varint(b, p)]);
      else if (w === 1) { o.push([f, b.subarray(p.i, p.i + 8)]); p.i += 8; }
      else if (w === 5) { o.push([f, b.readFloatLE(p.i)]); p.i += 4; }
      else if (w === 2) { const n = varint(b, p); o.push([f, b.subarray(p.i, p.i + n)]); p.i += n; }
      else throw new Error('wire type ' + w);
    }
    return o;
  };
  const pieces = [];
  let charsmap = null;
  for (const [f, v] of fields(buf)) {
    if (f === 1) {
      const pf = fields(v);
      const piece = pf.find(([k]) => k === 1)[1].toString('utf8');
      const score = (pf.find(([k]) => k === 2) || [0, 0])[1];
      pieces.push([piece, score]);
    }
    if (f === 3) for (const [k, x] of fields(v)) if (k === 2) charsmap = Buffer.from(x);
  }
  return { pieces, charsmap };
}

function xlmrUnigram() {
  const { pieces, charsmap } = readSpm(path.join(root, 'tests/data/xlmr-micro/sentencepiece.bpe.model'));
  // fairseq's ids: <s> <pad> </s> <unk>, then the pieces after SentencePiece's first three
  const vocab = [['<s>', 0], ['<pad>', 0], ['</s>', 0], ['<unk>', 0], ...pieces.slice(3), ['<mask>', 0]];
  const tok = (t, id, o = {}) => ({ id, content: t, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true, ...o });
  const normalizers = [{ type: 'Replace', pattern: { String: '``' }, content: '"' },
    { type: 'Replace', pattern: { String: "''" }, content: '"' }];
  if (charsmap) normalizers.push({ type: 'Precompiled', precompiled_charsmap: charsmap.toString('base64') });
  normalizers.push({ type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' });
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [tok('<s>', 0), tok('<pad>', 1), tok('</s>', 2), tok('<unk>', 3), tok('<mask>', vocab.length - 1, { lstrip: true })],
    normalizer: { type: 'Sequence', normalizers },
    pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true },
    post_processor: { type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } }],
      pair: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } },
        { SpecialToken: { id: '</s>', type_id: 0 } }, { Sequence: { id: 'B', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } }],
      special_tokens: { '<s>': { id: '<s>', ids: [0], tokens: ['<s>'] }, '</s>': { id: '</s>', ids: [2], tokens: ['</s>'] } } },
    decoder: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true },
    model: { type: 'Unigram', unk_id: 3, vocab, byte_fallback: false },
  };
}

// GPT-2's vocabulary another way: the ByteLevel normalizer (bytes as symbols before anything),
// then Split on the space's symbol merged with the next, no post-processor.
function gpt2Split() {
  const r = robertaBpe();
  return { ...r, added_tokens: r.added_tokens.slice(0, 4), post_processor: null,
    normalizer: { type: 'Sequence', normalizers: [{ type: 'Nmt' }, { type: 'ByteLevel' }] },
    pre_tokenizer: { type: 'Split', pattern: { String: 'Ġ' }, behavior: 'MergedWithNext', invert: false } };
}

// The other components, on vocabularies made above: NFKD, StripAccents, Strip, WhitespaceSplit,
// Split (String, MergedWithPrevious), Punctuation (MergedWithNext), Digits, a Sequence of
// ByteLevel and TemplateProcessing, the WordPiece decoder without clean-up.
function mixedWordpiece() {
  const b = bertWordpiece();
  return { ...b,
    normalizer: { type: 'Sequence', normalizers: [{ type: 'NFKD' }, { type: 'StripAccents' }, { type: 'Lowercase' },
      { type: 'Strip', strip_left: true, strip_right: true }] },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'WhitespaceSplit' },
      { type: 'Split', pattern: { String: '-' }, behavior: 'MergedWithPrevious', invert: false },
      { type: 'Punctuation', behavior: 'MergedWithNext' }, { type: 'Digits', individual_digits: true }] },
    post_processor: { type: 'Sequence', processors: [{ type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
      { type: 'TemplateProcessing',
        single: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } }],
        pair: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } },
          { Sequence: { id: 'B', type_id: 1 } }, { SpecialToken: { id: '[SEP]', type_id: 1 } }],
        special_tokens: { '[CLS]': { id: '[CLS]', ids: [b.model.vocab['[CLS]']], tokens: ['[CLS]'] },
          '[SEP]': { id: '[SEP]', ids: [b.model.vocab['[SEP]']], tokens: ['[SEP]'] } } }] },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: false },
  };
}

// Unigram with byte_fallback (XLM-R's pieces and the 256 byte pieces), NFD, white space removed
// by Split, then Metaspace "first" without splitting; ByteFallback then Metaspace to decode.
function unigramFirst() {
  const x = xlmrUnigram();
  const bytes = [...Array(256).keys()].map((b) => ['<0x' + b.toString(16).toUpperCase().padStart(2, '0') + '>', -20]);
  const vocab = [...x.model.vocab.slice(0, -1), ...bytes, x.model.vocab[x.model.vocab.length - 1]];
  return { ...x,
    added_tokens: x.added_tokens.map((t) => (t.content === '<mask>' ? { ...t, id: vocab.length - 1 } : t)),
    normalizer: { type: 'NFD' },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Split', pattern: { Regex: '\\s+' }, behavior: 'Removed', invert: false },
      { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: false }] },
    decoder: { type: 'Sequence', decoders: [{ type: 'ByteFallback' }, { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: false }] },
    model: { type: 'Unigram', unk_id: 3, vocab, byte_fallback: true },
  };
}

// BPE with continuing_subword_prefix "##" (trained here, lower-cased SST-2 words) behind BERT's
// normalizer and pre-tokenizer; Digits grouped (Contiguous).
function bpePrefix() {
  const words = new Map();
  for (const s of sst2('train.tsv', 20000))
    for (const w of s.toLowerCase().split(/\s+/).filter((x) => x)) words.set(w, (words.get(w) || 0) + 1);
  const specials = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
  const { vocab, merges } = trainBpePrefix(words, 1500, specials);
  const tok = (t) => ({ id: vocab[t], content: t, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: specials.map(tok),
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'BertPreTokenizer' }, { type: 'Digits', individual_digits: false }] },
    post_processor: { type: 'BertProcessing', sep: ['[SEP]', vocab['[SEP]']], cls: ['[CLS]', vocab['[CLS]']] },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'BPE', dropout: null, unk_token: '[UNK]', continuing_subword_prefix: '##', end_of_word_suffix: null,
      fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges },
  };
}

// CLIP's merges again: Whitespace words, ByteLevel without its regex, ignore_merges, the
// decoders ByteLevel then BPEDecoder.
function clipVariants() {
  const c = clipBpe();
  return { ...c,
    normalizer: { type: 'Lowercase' },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Whitespace' },
      { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false }] },
    decoder: { type: 'Sequence', decoders: [{ type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false }, { type: 'BPEDecoder', suffix: '</w>' }] },
    model: { ...c.model, ignore_merges: true },
  };
}

function clipBpe() {
  const bc = byteChars();
  const lines = fs.readFileSync(path.join(shared, 'data/clip/merges.txt'), 'utf8').split('\n');
  const merges = lines.slice(1, 4001).map((l) => l.split(' '));
  const vocab = {};
  const add = (t) => { if (!(t in vocab)) vocab[t] = Object.keys(vocab).length; };
  bc.forEach((c) => add(c));
  bc.forEach((c) => add(c + '</w>'));
  merges.forEach(([a, b]) => add(a + b));
  add('<|startoftext|>');
  add('<|endoftext|>');
  const tok = (t) => ({ id: vocab[t], content: t, single_word: false, lstrip: false, rstrip: false, normalized: true, special: true });
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [tok('<|startoftext|>'), tok('<|endoftext|>')],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'NFC' }, { type: 'Replace', pattern: { Regex: '\\s+' }, content: ' ' }, { type: 'Lowercase' }] },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [
      { type: 'Split', pattern: { Regex: "'s|'t|'re|'ve|'m|'ll|'d|[\\p{L}]+|[\\p{N}]|[^\\s\\p{L}\\p{N}]+" }, behavior: 'Removed', invert: true },
      { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true }] },
    post_processor: { type: 'RobertaProcessing', sep: ['<|endoftext|>', vocab['<|endoftext|>']], cls: ['<|startoftext|>', vocab['<|startoftext|>']], trim_offsets: false, add_prefix_space: false },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: '<|endoftext|>', continuing_subword_prefix: '', end_of_word_suffix: '</w>',
      fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges },
  };
}

function llamaBpe() {
  const words = new Map();
  for (const s of sst2('train.tsv', 20000)) {
    const sym = '▁' + s.replace(/ /g, '▁');
    for (const w of sym.split(/(?=▁)/u)) words.set(w, (words.get(w) || 0) + 1);
  }
  const specials = ['<unk>', '<s>', '</s>'];
  const bytes = [...Array(256).keys()].map((b) => '<0x' + b.toString(16).toUpperCase().padStart(2, '0') + '>');
  const { vocab, merges } = trainBpe(words, 1500, [...specials, ...bytes]);
  const n = Object.keys(vocab).length;
  const tok = (t, id, o = {}) => ({ id, content: t, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true, ...o });
  return {
    version: '1.0', truncation: { direction: 'Right', max_length: 64, strategy: 'LongestFirst', stride: 0 },
    padding: { strategy: { Fixed: 48 }, direction: 'Left', pad_to_multiple_of: null, pad_id: 0, pad_type_id: 0, pad_token: '<unk>' },
    added_tokens: [tok('<unk>', 0), tok('<s>', 1), tok('</s>', 2),
      tok('<|tag|>', n, { rstrip: true }), tok('<special>', n + 1, { single_word: true }),
      tok('</special>', n + 2, { special: false }), tok('[MASK]', n + 3, { normalized: true, special: false })],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: '▁' }, { type: 'Replace', pattern: { String: ' ' }, content: '▁' }] },
    pre_tokenizer: null,
    post_processor: { type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '<s>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] } } },
    decoder: { type: 'Sequence', decoders: [{ type: 'Replace', pattern: { String: '▁' }, content: ' ' },
      { type: 'ByteFallback' }, { type: 'Fuse' }, { type: 'Strip', content: ' ', start: 1, stop: 0 }] },
    model: { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null, end_of_word_suffix: null,
      fuse_unk: true, byte_fallback: true, ignore_merges: false, vocab, merges },
  };
}

const generated = generatedTexts(2000);
fs.mkdirSync(out, { recursive: true });
fs.writeFileSync(path.join(out, 'generated-texts.json'), JSON.stringify(generated) + '\n');

const fixtures = { 'bert-wordpiece': bertWordpiece, 'roberta-bpe': robertaBpe, 'xlmr-unigram': xlmrUnigram,
  'clip-bpe': clipBpe, 'llama-bpe': llamaBpe, 'gpt2-split': gpt2Split, 'mixed-wordpiece': mixedWordpiece,
  'unigram-first': unigramFirst, 'clip-variants': clipVariants, 'bpe-prefix': bpePrefix };
const wanted = process.argv.slice(2);

for (const [name, make] of Object.entries(fixtures)) {
  if (wanted.length && !wanted.includes(name)) continue;
  const dir = path.join(out, name);
  fs.mkdirSync(dir, { recursive: true });
  const json = JSON.stringify(make());
  const tok = Tokenizer.fromString(json); // the library must read it as written
  tok.save(path.join(dir, 'tokenizer.json'));
  const saved = Tokenizer.fromFile(path.join(dir, 'tokenizer.json'));
  const cases = [];
  for (const bytes of texts) {
    const text = bytes.toString('utf8'); // invalid UTF-8 read with U+FFFD, as vit reads it
    const enc = await saved.encode(text);
    const ids = enc.getIds();
    cases.push({ text: bytes.toString('base64'), ids,
      decoded: await saved.decode(ids, true), decoded_special: await saved.decode(ids, false) });
  }
  const pairCases = [];
  for (const [a, b] of pairs) {
    const enc = await saved.encode(a, b);
    pairCases.push({ a, b, ids: enc.getIds(), type_ids: enc.getTypeIds() });
  }
  const gen = [];
  for (const text of generated) {
    const ids = (await saved.encode(text)).getIds();
    gen.push([ids, fnv(await saved.decode(ids, true)), fnv(await saved.decode(ids, false))]);
  }
  fs.writeFileSync(path.join(dir, 'golden.json'), JSON.stringify({ source: 'tokenizers (npm) ' +
    require('tokenizers/package.json').version + ', Tokenizer.encode(text) and encode(a, b) as saved; decode(ids, true/false)',
    cases, pairs: pairCases }) + '\n');
  if (name === 'bert-wordpiece' || name === 'roberta-bpe') { // encoding.offsets, in characters (code points) of the text
    const offs = [];
    for (const bytes of texts) {
      const text = bytes.toString('utf8');
      if (!Buffer.from(text, 'utf8').equals(bytes)) continue; // offsets are taken of valid UTF-8
      const enc = await saved.encode(text);
      offs.push({ text: bytes.toString('base64'), ids: enc.getIds(), offsets: enc.getOffsets() });
    }
    fs.writeFileSync(path.join(dir, 'offsets.json'), JSON.stringify({ source: 'tokenizers (npm) ' +
      require('tokenizers/package.json').version + ', Tokenizer.encode(text).getOffsets() (code points)',
      cases: offs }) + '\n');
  }
  // generated-texts.json's texts: [ids, FNV-1a of decode(ids, true), of decode(ids, false)]
  fs.writeFileSync(path.join(dir, 'generated.json'), JSON.stringify(gen) + '\n');
  console.log(name, cases.length, 'texts', fs.statSync(path.join(dir, 'tokenizer.json')).size, 'bytes');
}
