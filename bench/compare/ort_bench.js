#!/usr/bin/env node
// ONNX Runtime (onnxruntime-node, CPU execution provider) timing of one .onnx model, the
// counterpart of `vit bench --json`: warm-up runs, then N timed runs of one batch of random
// input, and one JSON line with the median.
//
// usage: node ort_bench.js MODEL.onnx [-b BATCH] [-t THREADS] [-n RUNS] [-w WARMUP]
//                          [--config KEY=VALUE ...] [--logits PIXELS.f32]
//
// --config adds a session configuration entry (e.g. session.intra_op.allow_spinning=0).
// --logits runs the model once on the raw little-endian float32 [3,224,224] pixels in the file
//          and prints {"logits": [...]} instead of timing (used by check_logits.py).
// --cold   times a cold start instead: the session's creation and its first run (batch 1), and
//          the process's whole life up to that answer (node's start and loading ORT included);
//          used by cold_start.
//
// onnxruntime-node is looked up in $VIT_BENCH_ORT_DIR (default ~/.cache/vit-bench/ort), where
// the driver script `run` installs it, then in the usual node_modules folders.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

function usage(msg) {
  if (msg) process.stderr.write(`ort_bench.js: ${msg}\n`);
  process.stderr.write('usage: node ort_bench.js MODEL.onnx [-b BATCH] [-t THREADS] [-n RUNS] [-w WARMUP] ' +
                       '[--config KEY=VALUE ...] [--logits PIXELS.f32]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const a = { model: null, batch: 1, threads: 2, runs: 10, warmup: 3, config: {}, logits: null };
  const int = (v, name) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) usage(`${name} wants a whole number, got '${v}'`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i], next = () => (i + 1 < argv.length ? argv[++i] : usage(`${arg} needs a value`));
    switch (arg) {
      case '-b': case '--batch': a.batch = int(next(), arg); break;
      case '-t': case '--threads': a.threads = int(next(), arg); break;
      case '-n': case '--runs': a.runs = int(next(), arg); break;
      case '-w': case '--warmup': a.warmup = int(next(), arg); break;
      case '--config': {
        const kv = next(), eq = kv.indexOf('=');
        if (eq <= 0) usage(`--config wants KEY=VALUE, got '${kv}'`);
        a.config[kv.slice(0, eq)] = kv.slice(eq + 1);
        break;
      }
      case '--logits': a.logits = next(); break;
      case '--cold': a.cold = true; break;
      case '-h': case '--help': usage();
      default:
        if (arg.startsWith('-') || a.model) usage(`unexpected argument '${arg}'`);
        a.model = arg;
    }
  }
  if (!a.model) usage('no model given');
  if (a.batch < 1 || a.runs < 1 || a.threads < 1) usage('batch, runs and threads must be at least 1');
  return a;
}

function loadOrt() {
  const dir = process.env.VIT_BENCH_ORT_DIR || path.join(os.homedir(), '.cache', 'vit-bench', 'ort');
  const paths = [path.join(dir, 'node_modules'), ...module.paths];
  let where;
  try {
    where = require.resolve('onnxruntime-node', { paths });
  } catch (e) {
    process.stderr.write(`ort_bench.js: onnxruntime-node not found in ${dir}/node_modules (the driver 'run' installs it)\n`);
    process.exit(1);
  }
  const ort = require(where);
  const pkg = require(require.resolve('onnxruntime-node/package.json', { paths }));
  return { ort, version: pkg.version };
}

const median = (xs) => {
  const s = [...xs].sort((x, y) => x - y), m = s.length >> 1;
  return s.length % 2 ? s[m] : 0.5 * (s[m - 1] + s[m]);
};

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const { ort, version } = loadOrt();
  const options = {
    executionProviders: ['cpu'],
    intraOpNumThreads: args.threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
  };
  if (Object.keys(args.config).length) options.extra = args.config; // flattened to session config entries
  const created = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(args.model, options);
  const createMs = Number(process.hrtime.bigint() - created) / 1e6;
  const input = session.inputNames[0], output = session.outputNames[0];
  const per = 3 * 224 * 224;

  if (args.cold) {
    const px = new Float32Array(per).fill(0.5);
    const t0 = process.hrtime.bigint();
    await session.run({ [input]: new ort.Tensor('float32', px, [1, 3, 224, 224]) });
    const firstMs = Number(process.hrtime.bigint() - t0) / 1e6;
    console.log(JSON.stringify({
      model: path.basename(args.model, '.onnx'), threads: args.threads,
      create_ms: Number(createMs.toFixed(1)), first_run_ms: Number(firstMs.toFixed(1)),
      process_ms: Number((process.uptime() * 1000).toFixed(1)), ort_version: version,
    }));
    return;
  }

  if (args.logits) {
    const buf = fs.readFileSync(args.logits);
    if (buf.length !== per * 4) throw new Error(`${args.logits}: ${buf.length} bytes, expected ${per * 4}`);
    const px = new Float32Array(per);
    for (let i = 0; i < per; i++) px[i] = buf.readFloatLE(4 * i);
    const out = await session.run({ [input]: new ort.Tensor('float32', px, [1, 3, 224, 224]) });
    console.log(JSON.stringify({ ort_version: version, logits: Array.from(out[output].data) }));
    return;
  }

  // uniform in [-1, 1], like vit bench's input (what normalised pixels look like)
  const data = new Float32Array(args.batch * per);
  let seed = 1;
  for (let i = 0; i < data.length; i++) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    data[i] = (seed / 4294967296) * 2 - 1;
  }
  const feeds = { [input]: new ort.Tensor('float32', data, [args.batch, 3, 224, 224]) };
  for (let i = 0; i < args.warmup; i++) await session.run(feeds);
  const ms = [];
  for (let i = 0; i < args.runs; i++) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const m = median(ms);
  console.log(JSON.stringify({
    model: path.basename(args.model, '.onnx'),
    batch: args.batch,
    threads: args.threads,
    ms_per_batch: Number(m.toFixed(3)),
    images_per_second: Number((args.batch * 1000 / m).toFixed(2)),
    runs: args.runs,
    ort_version: version,
    config: args.config,
  }));
  if (session.release) await session.release();
}

main().catch((e) => {
  process.stderr.write(`ort_bench.js: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
