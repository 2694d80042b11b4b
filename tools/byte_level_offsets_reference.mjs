// Offsets of byte-level BPE with add_prefix_space (what RoBERTa token classifiers trained on
// words use), for tests/test_token_offsets.c: writes tests/data/tokenizer-json/roberta-prefix
// (ByteLevel and RobertaProcessing with add_prefix_space and trim_offsets) and
// roberta-prefix-untrimmed (add_prefix_space, no trim_offsets), each the roberta-bpe fixture's
// tokenizer.json with those settings, and offsets.json: the npm tokenizers library's ids and
// encoding.offsets (code points) of roberta-bpe's offset texts.
//
//   cd tools && npm install --no-save tokenizers && cd .. && node tools/byte_level_offsets_reference.mjs
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

for (const [name, trim] of [['roberta-prefix', true], ['roberta-prefix-untrimmed', false]]) {
  const json = structuredClone(saved);
  json.pre_tokenizer.add_prefix_space = true;
  json.pre_tokenizer.trim_offsets = trim;
  json.post_processor.add_prefix_space = true;
  json.post_processor.trim_offsets = trim;
  const dir = path.join(base, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(json));
  const tok = Tokenizer.fromString(JSON.stringify(json));
  const cases = [];
  for (const bytes of texts) {
    const enc = await tok.encode(bytes.toString('utf8'));
    cases.push({ text: bytes.toString('base64'), ids: enc.getIds(), offsets: enc.getOffsets() });
  }
  fs.writeFileSync(path.join(dir, 'offsets.json'), JSON.stringify({ source: 'tokenizers (npm) ' +
    require('tokenizers/package.json').version + ', roberta-bpe with add_prefix_space' +
    (trim ? ' and trim_offsets' : '') + ', encode(text).getOffsets() (code points)', cases }) + '\n');
  console.log(name, cases.length, 'texts');
}
