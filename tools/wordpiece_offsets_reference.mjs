// Offsets of a vocab.txt WordPiece tokenizer as BertTokenizerFast gives them, for
// tests/test_token_offsets.c: writes tests/data/tokenizer-json/vocab-uncased and vocab-cased
// (vocab.txt: the bert-wordpiece fixture's 6,000 tokens; tokenizer_config.json: do_lower_case
// true / false) and, for each, offsets.json: the ids and encoding.offsets (code points) the
// tokenizers library gives bert-wordpiece's offset texts through the tokenizer.json that
// transformers' BertConverter builds of those files (BertNormalizer(clean_text, handle_chinese_chars
// = tokenize_chinese_chars, strip_accents, lowercase = do_lower_case), BertPreTokenizer, WordPiece
// with "##" and 100 characters, BertProcessing, the special tokens as added tokens).
//
//   cd tools && npm install --no-save tokenizers && cd .. && node tools/wordpiece_offsets_reference.mjs
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(new URL('./', import.meta.url));
const { Tokenizer } = require('tokenizers');

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const base = path.join(root, 'tests/data/tokenizer-json');
const saved = JSON.parse(fs.readFileSync(path.join(base, 'bert-wordpiece/tokenizer.json'), 'utf8'));
const tokens = [];
for (const [tok, id] of Object.entries(saved.model.vocab)) tokens[id] = tok;
const texts = JSON.parse(fs.readFileSync(path.join(base, 'bert-wordpiece/offsets.json'), 'utf8'))
  .cases.map((c) => Buffer.from(c.text, 'base64'));

// What BertConverter.converted() writes for a BertTokenizer with this config.
export function converted(config, tokens) {
  const vocab = {};
  tokens.forEach((t, i) => { vocab[t] = i; });
  const special = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: special.map((s) => ({ id: vocab[s], content: s, single_word: false, lstrip: false,
      rstrip: false, normalized: false, special: true })),
    normalizer: { type: 'BertNormalizer', clean_text: true,
      handle_chinese_chars: config.tokenize_chinese_chars ?? true,
      strip_accents: config.strip_accents ?? null, lowercase: config.do_lower_case ?? true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: { type: 'BertProcessing', sep: ['[SEP]', vocab['[SEP]']], cls: ['[CLS]', vocab['[CLS]']] },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##',
      max_input_chars_per_word: 100, vocab },
  };
}

const main = process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname);
for (const [name, config] of main ? [['vocab-uncased', { do_lower_case: true }],
  ['vocab-cased', { do_lower_case: false }]] : []) {
  const dir = path.join(base, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'vocab.txt'), tokens.join('\n') + '\n');
  fs.writeFileSync(path.join(dir, 'tokenizer_config.json'),
    JSON.stringify({ tokenizer_class: 'BertTokenizer', ...config }, null, 2) + '\n');
  const tok = Tokenizer.fromString(JSON.stringify(converted(config, tokens)));
  const cases = [];
  for (const bytes of texts) {
    const enc = await tok.encode(bytes.toString('utf8'));
    cases.push({ text: bytes.toString('base64'), ids: enc.getIds(), offsets: enc.getOffsets() });
  }
  fs.writeFileSync(path.join(dir, 'offsets.json'), JSON.stringify({ source: 'tokenizers (npm) ' +
    require('tokenizers/package.json').version + ', BertConverter\'s tokenizer.json of vocab.txt, ' +
    'encode(text).getOffsets() (code points)', cases }) + '\n');
  console.log(name, cases.length, 'texts');
}
