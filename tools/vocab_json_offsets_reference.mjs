// Offsets of RobertaTokenizer's files (vocab.json, merges.txt) as RobertaTokenizerFast gives them,
// for tests/test_token_offsets.c: writes tests/data/tokenizer-json/vocab-json-roberta and
// vocab-json-roberta-prefix (the roberta-bpe fixture's vocabulary and merges as the slow files,
// tokenizer_config.json with add_prefix_space false / true and <mask> with lstrip) and, for each,
// offsets.json: the ids and encoding.offsets (code points) the npm tokenizers library gives
// roberta-bpe's offset texts through the tokenizer.json transformers' RobertaConverter builds of
// those files (BPE without prefix or suffix, ByteLevel(add_prefix_space), RobertaProcessing(cls,
// sep, add_prefix_space, trim_offsets true), the special tokens as added tokens).
//
//   cd tools && npm install --no-save tokenizers && cd .. && node tools/vocab_json_offsets_reference.mjs
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(new URL('./', import.meta.url));
const { Tokenizer } = require('tokenizers');

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const base = path.join(root, 'tests/data/tokenizer-json');
const saved = JSON.parse(fs.readFileSync(path.join(base, 'roberta-bpe/tokenizer.json'), 'utf8'));
const texts = JSON.parse(fs.readFileSync(path.join(base, 'roberta-bpe/offsets.json'), 'utf8'))
  .cases.map((c) => Buffer.from(c.text, 'base64'));
const merges = saved.model.merges.map((m) => (Array.isArray(m) ? m.join(' ') : m));
const specials = saved.added_tokens.map((a) => ({ id: a.id, content: a.content,
  lstrip: a.content === '<mask>', rstrip: false }));

// What RobertaConverter.converted() writes for these files.
function converted(vocab, mergeLines, config) {
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: specials.map((s) => ({ ...s, single_word: false, normalized: false, special: true })),
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: config.add_prefix_space, trim_offsets: true, use_regex: true },
    post_processor: { type: 'RobertaProcessing', sep: ['</s>', vocab['</s>']], cls: ['<s>', vocab['<s>']],
      trim_offsets: true, add_prefix_space: config.add_prefix_space },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '',
      fuse_unk: false, byte_fallback: false, vocab, merges: mergeLines.map((m) => m.split(' ')) },
  };
}

for (const [name, prefix] of [['vocab-json-roberta', false], ['vocab-json-roberta-prefix', true]]) {
  const dir = path.join(base, name);
  fs.mkdirSync(dir, { recursive: true });
  const vocab = { ...saved.model.vocab };
  for (const s of specials) vocab[s.content] = s.id;
  fs.writeFileSync(path.join(dir, 'vocab.json'), JSON.stringify(vocab));
  fs.writeFileSync(path.join(dir, 'merges.txt'), '#version: 0.2\n' + merges.join('\n') + '\n');
  const config = { tokenizer_class: 'RobertaTokenizer', add_prefix_space: prefix, trim_offsets: true,
    bos_token: '<s>', eos_token: '</s>', sep_token: '</s>', cls_token: '<s>', unk_token: '<unk>',
    pad_token: '<pad>', mask_token: '<mask>',
    added_tokens_decoder: Object.fromEntries(specials.map((s) => [String(s.id),
      { content: s.content, lstrip: s.lstrip, rstrip: false, normalized: false, single_word: false, special: true }])) };
  fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify(config, null, 2) + '\n');
  const tok = Tokenizer.fromString(JSON.stringify(converted(vocab, merges, config)));
  const cases = [];
  for (const bytes of texts) {
    const enc = await tok.encode(bytes.toString('utf8'));
    cases.push({ text: bytes.toString('base64'), ids: enc.getIds(), offsets: enc.getOffsets() });
  }
  fs.writeFileSync(path.join(dir, 'offsets.json'), JSON.stringify({ source: 'tokenizers (npm) ' +
    require('tokenizers/package.json').version + ', RobertaConverter\'s tokenizer.json of vocab.json and ' +
    'merges.txt, encode(text).getOffsets() (code points)', cases }) + '\n');
  console.log(name, cases.length, 'texts');
}
