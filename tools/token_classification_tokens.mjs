// The tokenizers library's side of tools/token_classification_reference.py: one JSON request a
// line on standard input, one answer a line on standard output.
//   {"load": DIR}            a vocab.txt folder through BertConverter's tokenizer.json
//                            (tools/wordpiece_offsets_reference.mjs), else DIR/tokenizer.json
//   {"encode": TEXT}         -> {ids, tokens, offsets (code points), special (special_tokens_mask)}
//   {"join": [TOKEN, ...]}   -> {text}: the decoder's decode(tokens), what transformers' fast
//                            convert_tokens_to_string gives
//   {"prefix": true}         -> {prefix}: the model's continuing_subword_prefix, "" when none
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { createRequire } from 'node:module';
import { converted } from './wordpiece_offsets_reference.mjs';

const require = createRequire(new URL('./', import.meta.url));
const { Tokenizer } = require('tokenizers');

let tok = null, json = null;
const rl = readline.createInterface({ input: process.stdin });
for await (const line of rl) {
  const req = JSON.parse(line);
  let out = {};
  if (req.load) {
    const dir = req.load;
    if (fs.existsSync(path.join(dir, 'tokenizer.json'))) {
      json = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8'));
    } else {
      const config = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer_config.json'), 'utf8'));
      const tokens = fs.readFileSync(path.join(dir, 'vocab.txt'), 'utf8').split('\n');
      if (tokens[tokens.length - 1] === '') tokens.pop();
      json = converted(config, tokens);
    }
    tok = Tokenizer.fromString(JSON.stringify(json));
  } else if ('encode' in req) {
    const enc = await tok.encode(req.encode);
    out = { ids: enc.getIds(), tokens: enc.getTokens(), offsets: enc.getOffsets(),
      special: enc.getSpecialTokensMask() };
  } else if (req.join) {
    const d = tok.getDecoder();
    out = { text: d ? d.decode(req.join) : req.join.join(' ') };
  } else if (req.prefix) {
    out = { prefix: json.model.continuing_subword_prefix || '' };
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}
