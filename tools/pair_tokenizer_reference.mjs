// The tokenizers library's pairs for tests/test_rerank.c: bert-pair-micro's cross-encoder with a
// tokenizer.json instead of vocab.txt (tests/data/bert-pair-fast-micro: the same config.json and
// weights, linked), and golden.json with the ids and type ids the library's encode(a, b) gives the
// reference's pairs, truncated to model_max_length 40 longest first as transformers' fast
// tokenizer truncates them (BertTokenizerFast(a, b, truncation=True)).
//
//   cd tools && npm install --no-save tokenizers && cd .. && node tools/pair_tokenizer_reference.mjs
//
// (tools/node_modules is git-ignored: the library is a test-time reference only;
// TOKENIZERS_FROM=DIR/ takes it from DIR/node_modules instead.)
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(process.env.TOKENIZERS_FROM || new URL('./', import.meta.url));
const { Tokenizer } = require('tokenizers');

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const slow = path.join(root, 'tests/data/bert-pair-micro');
const out = path.join(root, 'tests/data/bert-pair-fast-micro');

// BertTokenizerFast's tokenizer.json of a vocab.txt (transformers' BertConverter)
const vocab = {};
fs.readFileSync(path.join(slow, 'vocab.txt'), 'utf8').split('\n')
  .forEach((t) => { if (t && !(t in vocab)) vocab[t] = Object.keys(vocab).length; });
const id = (t) => vocab[t];
const json = {
  version: '1.0', truncation: null, padding: null,
  added_tokens: ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'].map((t) => ({
    id: id(t), content: t, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
  normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
  pre_tokenizer: { type: 'BertPreTokenizer' },
  post_processor: { type: 'TemplateProcessing',
    single: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } }],
    pair: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } },
      { Sequence: { id: 'B', type_id: 1 } }, { SpecialToken: { id: '[SEP]', type_id: 1 } }],
    special_tokens: { '[CLS]': { id: '[CLS]', ids: [id('[CLS]')], tokens: ['[CLS]'] }, '[SEP]': { id: '[SEP]', ids: [id('[SEP]')], tokens: ['[SEP]'] } } },
  decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
  model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab },
};
fs.mkdirSync(out, { recursive: true });
Tokenizer.fromString(JSON.stringify(json)).save(path.join(out, 'tokenizer.json'));
fs.writeFileSync(path.join(out, 'tokenizer_config.json'), JSON.stringify({
  do_lower_case: true, model_max_length: 40, tokenizer_class: 'BertTokenizerFast', unk_token: '[UNK]',
  sep_token: '[SEP]', pad_token: '[PAD]', cls_token: '[CLS]', mask_token: '[MASK]' }, null, 2) + '\n');
for (const f of ['config.json', 'model.safetensors']) {
  const link = path.join(out, f);
  if (fs.existsSync(link)) fs.unlinkSync(link);
  fs.symlinkSync(path.join('..', 'bert-pair-micro', f), link);
}

// the reference's pairs, from golden.safetensors' metadata
const bytes = fs.readFileSync(path.join(slow, 'golden.safetensors'));
const header = JSON.parse(bytes.subarray(8, 8 + Number(bytes.readBigUInt64LE(0))).toString('utf8'));
const pairs = JSON.parse(header.__metadata__.pairs);
const tok = Tokenizer.fromFile(path.join(out, 'tokenizer.json'));
tok.setTruncation(40); // longest first, transformers' default
const cases = [];
for (const [a, b] of pairs) {
  const enc = await tok.encode(a, b);
  cases.push({ a, b, ids: enc.getIds(), type_ids: enc.getTypeIds() });
}
fs.writeFileSync(path.join(out, 'golden.json'), JSON.stringify({
  tokenizers: require('tokenizers/package.json').version, pairs: cases }) + '\n');
console.log(out, cases.length, 'pairs');
