// Offsets of tokenizer.json's SentencePiece path (Precompiled and Replace normalizers,
// Metaspace, Unigram: XLM-RoBERTa's), for tests/test_token_offsets.c: writes
// tests/data/tokenizer-json/xlmr-unigram/offsets.json, the npm tokenizers library's ids and
// encoding.offsets (code points) of roberta-bpe's offset texts (the same 437 valid UTF-8 texts)
// through that fixture's tokenizer.json.
//
//   cd tools && npm install --no-save tokenizers && cd .. && node tools/unigram_offsets_reference.mjs
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(new URL('./', import.meta.url));
const { Tokenizer } = require('tokenizers');

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const base = path.join(root, 'tests/data/tokenizer-json');
const texts = JSON.parse(fs.readFileSync(path.join(base, 'roberta-bpe/offsets.json'), 'utf8'))
  .cases.map((c) => Buffer.from(c.text, 'base64'));

for (const name of ['xlmr-unigram']) {
  const dir = path.join(base, name);
  const tok = Tokenizer.fromFile(path.join(dir, 'tokenizer.json'));
  const cases = [];
  for (const bytes of texts) {
    const enc = await tok.encode(bytes.toString('utf8'));
    cases.push({ text: bytes.toString('base64'), ids: enc.getIds(), offsets: enc.getOffsets() });
  }
  fs.writeFileSync(path.join(dir, 'offsets.json'), JSON.stringify({ source: 'tokenizers (npm) ' +
    require('tokenizers/package.json').version + ', Tokenizer.encode(text).getOffsets() (code points)',
    cases }) + '\n');
  console.log(name, cases.length, 'texts');
}
