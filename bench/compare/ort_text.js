#!/usr/bin/env node
// The ONNX Runtime side of bench/compare/text: what fastembed and TEI's CPU path do, end to end.
// Reads a text file (one text per line), tokenizes it with the npm `tokenizers` library on the
// model folder's tokenizer.json, runs batches of B padded to their longest through
// onnxruntime-node (CPU execution provider), mean-pools last_hidden_state over the attention
// mask (sentence-transformers' Pooling mean) and writes the embeddings as a float32 .npy [n, dim].
//
// usage: node ort_text.js MODEL.onnx TOKENIZER.json TEXTS.txt -o OUT.npy [-b BATCH] [-t THREADS]
//                         [--config KEY=VALUE ...]
//
// One JSON line goes to stdout: the texts, tokens (padding included and not), and times in ms
// from the process's start (node's own start included, process.uptime): ort_loaded_ms (node and
// the two libraries loaded), ready_ms (session created, tokenizer read), first_ms (the first
// batch's embeddings computed), done_ms (all written).
//
// onnxruntime-node and tokenizers are looked up in $VIT_BENCH_ORT_DIR (default
// ~/.cache/vit-bench/ort), where bench/compare/text installs them.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

const uptimeMs = () => process.uptime() * 1000;

function usage(msg) {
  if (msg) process.stderr.write(`ort_text.js: ${msg}\n`);
  process.stderr.write('usage: node ort_text.js MODEL.onnx TOKENIZER.json TEXTS.txt -o OUT.npy [-b BATCH] ' +
                       '[-t THREADS] [--config KEY=VALUE ...]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const a = { files: [], out: null, batch: 32, threads: 2, config: {} };
  const int = (v, name) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) usage(`${name} wants a whole number above 0, got '${v}'`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i], next = () => (i + 1 < argv.length ? argv[++i] : usage(`${arg} needs a value`));
    switch (arg) {
      case '-b': a.batch = int(next(), arg); break;
      case '-t': a.threads = int(next(), arg); break;
      case '-o': a.out = next(); break;
      case '--config': {
        const kv = next(), eq = kv.indexOf('=');
        if (eq <= 0) usage(`--config wants KEY=VALUE, got '${kv}'`);
        a.config[kv.slice(0, eq)] = kv.slice(eq + 1);
        break;
      }
      case '-h': case '--help': usage();
      default:
        if (arg.startsWith('-')) usage(`unexpected argument '${arg}'`);
        a.files.push(arg);
    }
  }
  if (a.files.length !== 3) usage('wants MODEL.onnx TOKENIZER.json TEXTS.txt');
  if (!a.out) usage('no -o OUT.npy');
  return a;
}

function load(name) {
  const dir = process.env.VIT_BENCH_ORT_DIR || path.join(os.homedir(), '.cache', 'vit-bench', 'ort');
  const paths = [path.join(dir, 'node_modules'), ...module.paths];
  try {
    const where = require.resolve(name, { paths });
    return { lib: require(where), version: require(require.resolve(`${name}/package.json`, { paths })).version };
  } catch (e) {
    process.stderr.write(`ort_text.js: ${name} not found in ${dir}/node_modules (bench/compare/text installs it)\n`);
    process.exit(1);
  }
}

function npyHeader(n, dim) {
  let h = `{'descr': '<f4', 'fortran_order': False, 'shape': (${n}, ${dim}), }`;
  const total = 10 + h.length + 1;
  h += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const b = Buffer.alloc(10 + h.length);
  b.write('\x93NUMPY', 0, 'latin1');
  b[6] = 1; b[7] = 0;
  b.writeUInt16LE(h.length, 8);
  b.write(h, 10, 'latin1');
  return b;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const [modelPath, tokPath, textPath] = args.files;
  const { lib: ort, version: ortVersion } = load('onnxruntime-node');
  const { lib: tk, version: tkVersion } = load('tokenizers');
  const ortLoaded = uptimeMs();
  const options = {
    executionProviders: ['cpu'],
    intraOpNumThreads: args.threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
  };
  if (Object.keys(args.config).length) options.extra = args.config;
  const session = await ort.InferenceSession.create(modelPath, options);
  const tokenizer = tk.Tokenizer.fromFile(tokPath);
  const ready = uptimeMs();

  const raw = fs.readFileSync(textPath, 'utf8').split('\n');
  if (raw.length && raw[raw.length - 1] === '') raw.pop();
  const texts = raw.map((t) => t.replace(/\r$/, ''));
  if (!texts.length) throw new Error(`${textPath}: no texts`);

  let dim = 0, first = 0, tokens = 0, padded = 0, out = null;
  for (let start = 0; start < texts.length; start += args.batch) {
    const chunk = texts.slice(start, start + args.batch);
    const encs = await tokenizer.encodeBatch(chunk);
    const B = encs.length, T = Math.max(...encs.map((e) => e.getIds().length));
    const ids = new BigInt64Array(B * T), mask = new BigInt64Array(B * T), types = new BigInt64Array(B * T);
    const lens = new Int32Array(B);
    encs.forEach((e, b) => {
      const eIds = e.getIds(), eTypes = e.getTypeIds();
      lens[b] = eIds.length;
      for (let t = 0; t < eIds.length; t++) {
        ids[b * T + t] = BigInt(eIds[t]);
        mask[b * T + t] = 1n;
        types[b * T + t] = BigInt(eTypes[t]);
      }
    });
    tokens += lens.reduce((x, y) => x + y, 0);
    padded += B * T;
    const feeds = {
      input_ids: new ort.Tensor('int64', ids, [B, T]),
      attention_mask: new ort.Tensor('int64', mask, [B, T]),
      token_type_ids: new ort.Tensor('int64', types, [B, T]),
    };
    const res = await session.run(feeds);
    const h = res.last_hidden_state;
    if (!dim) {
      dim = h.dims[2];
      out = new Float32Array(texts.length * dim);
    }
    const data = h.data;
    for (let b = 0; b < B; b++) {  // mean over the attended tokens (the mask is 1 for the first lens[b])
      const row = out.subarray((start + b) * dim, (start + b + 1) * dim);
      for (let t = 0; t < lens[b]; t++) {
        const off = (b * T + t) * dim;
        for (let d = 0; d < dim; d++) row[d] += data[off + d];
      }
      for (let d = 0; d < dim; d++) row[d] /= lens[b];
    }
    if (!first) first = uptimeMs();
  }
  const fd = fs.openSync(args.out, 'w');
  fs.writeSync(fd, npyHeader(texts.length, dim));
  fs.writeSync(fd, Buffer.from(out.buffer, out.byteOffset, out.byteLength));
  fs.closeSync(fd);
  const done = uptimeMs();
  console.log(JSON.stringify({
    texts: texts.length, tokens, padded_tokens: padded, batch: args.batch, threads: args.threads,
    ort_loaded_ms: Number(ortLoaded.toFixed(1)), ready_ms: Number(ready.toFixed(1)),
    first_ms: Number(first.toFixed(1)), done_ms: Number(done.toFixed(1)),
    ort_version: ortVersion, tokenizers_version: tkVersion, config: args.config,
  }));
  if (session.release) await session.release();
}

main().catch((e) => {
  process.stderr.write(`ort_text.js: ${e && e.message ? e.message : e}\n`);
  process.exit(1);
});
