// Offsets of an XLMRobertaTokenizer folder's SentencePiece model as XLMRobertaTokenizerFast gives
// them, for tests/test_token_offsets.c: tests/data/tokenizer-json/xlmr-unigram-model holds a
// Unigram model (spm-micro's spiece.model, as sentencepiece.bpe.model) and tokenizer_config.json;
// this writes its offsets.json: the ids and encoding.offsets (code points) the npm tokenizers
// library gives roberta-bpe's offset texts through the tokenizer.json transformers'
// XLMRobertaConverter builds of the model (Unigram over <s> <pad> </s> <unk>, the pieces after
// the model's first three and <mask>; Replace `` and '', Precompiled (its charsmap), Replace
// " {2,}"; Metaspace "always"; <s> $A </s>).
//
//   cd tools && npm install --no-save tokenizers && cd .. && node tools/spm_offsets_reference.mjs
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(new URL('./', import.meta.url));
const { Tokenizer } = require('tokenizers');

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const base = path.join(root, 'tests/data/tokenizer-json');
const texts = JSON.parse(fs.readFileSync(path.join(base, 'roberta-bpe/offsets.json'), 'utf8'))
  .cases.map((c) => Buffer.from(c.text, 'base64'));

// protobuf's wire format: [field, value] pairs (length-delimited values as bytes)
function fields(b) {
  let i = 0;
  const varint = () => { let r = 0, m = 1; for (;;) { const x = b[i++]; r += (x & 127) * m; m *= 128; if (!(x & 128)) return r; } };
  const out = [];
  while (i < b.length) {
    const key = varint(), f = Math.floor(key / 8), w = key % 8;
    if (w === 0) out.push([f, varint()]);
    else if (w === 1) { out.push([f, b.subarray(i, i + 8)]); i += 8; }
    else if (w === 5) { out.push([f, b.readFloatLE(i)]); i += 4; }
    else if (w === 2) { const n = varint(); out.push([f, b.subarray(i, i + n)]); i += n; }
    else throw new Error('wire type ' + w);
  }
  return out;
}

const dir = path.join(base, 'xlmr-unigram-model');
const model = fs.readFileSync(path.join(dir, 'sentencepiece.bpe.model'));
const pieces = [];
let charsmap = null;
for (const [f, v] of fields(model)) {
  if (f === 1) {
    const pf = fields(v);
    pieces.push([pf.find(([k]) => k === 1)[1].toString('utf8'), (pf.find(([k]) => k === 2) || [0, 0])[1]]);
  }
  if (f === 3) for (const [k, x] of fields(v)) if (k === 2) charsmap = Buffer.from(x);
}
const vocab = [['<s>', 0], ['<pad>', 0], ['</s>', 0], ['<unk>', 0], ...pieces.slice(3), ['<mask>', 0]];
const tok = (t, id, o = {}) => ({ id, content: t, single_word: false, lstrip: false, rstrip: false,
  normalized: false, special: true, ...o });
const normalizers = [{ type: 'Replace', pattern: { String: '``' }, content: '"' },
  { type: 'Replace', pattern: { String: "''" }, content: '"' }];
if (charsmap) normalizers.push({ type: 'Precompiled', precompiled_charsmap: charsmap.toString('base64') });
normalizers.push({ type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' });
const json = {
  version: '1.0', truncation: null, padding: null,
  added_tokens: [tok('<s>', 0), tok('<pad>', 1), tok('</s>', 2), tok('<unk>', 3),
    tok('<mask>', vocab.length - 1, { lstrip: true })],
  normalizer: { type: 'Sequence', normalizers },
  pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true },
  post_processor: { type: 'RobertaProcessing', sep: ['</s>', 2], cls: ['<s>', 0], trim_offsets: false,
    add_prefix_space: false },
  decoder: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true },
  model: { type: 'Unigram', unk_id: 3, vocab, byte_fallback: false },
};
const t = Tokenizer.fromString(JSON.stringify(json));
const cases = [];
for (const bytes of texts) {
  const enc = await t.encode(bytes.toString('utf8'));
  cases.push({ text: bytes.toString('base64'), ids: enc.getIds(), offsets: enc.getOffsets() });
}
fs.writeFileSync(path.join(dir, 'offsets.json'), JSON.stringify({ source: 'tokenizers (npm) ' +
  require('tokenizers/package.json').version + ', XLMRobertaConverter\'s tokenizer.json of the model, ' +
  'encode(text).getOffsets() (code points)', cases }) + '\n');
console.log('xlmr-unigram-model', cases.length, 'texts');
