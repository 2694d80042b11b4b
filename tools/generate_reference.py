#!/usr/bin/python3
"""A float64 reference of transformers' `generate` for encoder-decoder models (greedy and beam
search, on next-token logits only), and the writer of tests/data/generate-toy (run by hand; the
project never runs it). Needs Debian 12's python3-torch and python3-numpy.

Written from transformers' src/transformers/generation/utils.py as stored at commit 000034a4
(a 4.5x development version: after the beam-search rewrite of v4.51, which replaced
generation/beam_search.py's BeamSearchScorer by the vectorised `_beam_search`, and before the
deprecations it announces for v4.62), logits_process.py at 00857b6c, configuration_utils.py at
008f5c8c and stopping_criteria.py (MaxLengthCriteria, EosTokenCriteria). What it follows:

- Preparation (`generate`, `_prepare_special_tokens`, `_prepare_generated_length`): the decoder
  starts from `decoder_start_token_id`, else `bos_token_id` (neither: an error); `eos_token_id` is
  an int or a list; `pad_token_id` falls back to the first eos id. The prompt is the start token
  alone (length 1), so `max_new_tokens` gives max_length = max_new_tokens + 1, and the default
  max_length 20 (when `max_new_tokens` is unset and max_length is the GenerationConfig default
  20) becomes 21 (VisionEncoderDecoderConfig has no max_position_embeddings to cap it). A caller
  wanting 20 tokens in all passes max_new_tokens=19. `min_new_tokens` sets min_length =
  min_new_tokens + 1. max_length <= 1 is an error ("Input length of decoder_input_ids is 1").
- Logits processors, in `_get_logits_processor`'s order for these keys: NoRepeatNGram (n-grams of
  the whole sequence, start token included), MinLength (eos masked while len(ids) < min_length),
  MinNewTokens (while len(ids) - 1 < min_new_tokens), ForcedBOS (len(ids) == 1: all -inf, the
  token 0), ForcedEOS (len(ids) == max_length - 1: likewise). Only those whose key is set.
- Greedy (`_sample`, num_beams 1): processors on the raw logits, the first argmax, finished rows
  get pad_token_id, a row finishes on an eos id or at max_length, the loop ends when every row
  has finished (always at least one step).
- Beam search (`_beam_search`): log_softmax of the logits, then the processors, plus the running
  beam scores (beam 0 starts at 0, the others at -1e9); per batch item the top K = max(2, 1 +
  number of eos ids) * num_beams of num_beams * vocab; a candidate "hits" when its token is an
  eos id or the sequence reaches max_length; the next running beams are the top num_beams after
  adding -1e9 to hitting candidates; hitting candidates among the first num_beams of the K enter
  the finished list with score / (generated length, eos included) ** length_penalty, unless the
  item's finished list is full under early_stopping=True or the early-stop heuristic already
  said no improvement is possible (both by adding -1e9); the finished list keeps the top
  num_beams of old and new. The heuristic: the best running score / L ** length_penalty against
  the worst finished score (-1e9 while a slot is empty), L = the current generated length, or
  max_length - 1 under early_stopping="never" with length_penalty > 0. The loop stops when no
  item can improve, or (early_stopping=True) every slot of every item is finished, or every
  candidate hit (max_length). The result is each item's best finished hypothesis and its score
  (`sequences_scores`).
- Ties: torch.topk and torch.argmax themselves, on float64 tensors (see tie_cases below for
  torch.topk's CPU order of equal values, which the C copies).

Older versions differ: BeamSearchScorer (beam_search.py, up to v4.50) walked the candidates in
rank order, skipped an eos candidate ranked at or past num_beams, filled the running beams with
the next non-eos candidates, and at max_length added the running beams in `finalize`; and before
about v4.35 the length penalty divided by the whole hypothesis length with the decoder start token
(hyp.shape[-1]) instead of the generated length.

Scores. Beam search returns HF's `sequences_scores`. For greedy, which has none in HF, this
reference (and the C) returns the sum, over the item's generated tokens (its eos included, the
padding after it not), of the value beam search would add for that token: log_softmax of the
logits, then the processors (a forced token adds 0), without a length penalty.

API: generate(next_logits, batch_size, cfg) -> [(ids, score)] per batch item, ids starting with
the start token and ending at the item's eos (or at max_length), without the batch's padding.
next_logits(seqs) -> np.ndarray [rows, V] float64: the next-token logits of each running row
given its whole id sequence (rows = batch * num_beams, row r belonging to item r // num_beams;
batch rows for greedy). cfg: GenerationConfig keys (see DEFAULTS).

  /usr/bin/python3 tools/generate_reference.py     writes tests/data/generate-toy/:
      tables.safetensors  toy language models, per table set S (those the cases use; a case
                          takes the first of 8 seeds on which all its choices are clear by
                          1e-4): S/A [V, V] (by last token),
                          S/P [positions, V] (by generated length), S/C [3, V] (by batch item);
                          logits = A[last] + P[min(len(ids) - 1, positions - 1)] + C[item]
      cases.json          per case: config, batch, table set, the number of model calls, and
                          each item's ids and score; plus torch.topk's order of ties for the
                          C's copy of it
"""
import json
import math
import os
import sys

import numpy as np
import torch

NEG = -1.0e9  # HF's "very large negative value" of beam search

DEFAULTS = dict(max_length=20, max_new_tokens=None, min_length=0, min_new_tokens=None,
                num_beams=1, length_penalty=1.0, early_stopping=False, no_repeat_ngram_size=0,
                decoder_start_token_id=None, bos_token_id=None, eos_token_id=None,
                pad_token_id=None, forced_bos_token_id=None, forced_eos_token_id=None)
DEFAULT_MAX_LENGTH = 20


def prepare(cfg):
    """generate()'s preparation of a generation config (no kwargs to generate()): a dict with
    the resolved start, eos list, pad, max_length, min_length and the rest."""
    unknown = set(cfg) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown keys {sorted(unknown)}")
    p = dict(DEFAULTS, **cfg)
    if p["early_stopping"] not in (True, False, "never"):
        raise ValueError("`early_stopping` must be a boolean or 'never'")
    if p["max_new_tokens"] is not None and p["max_new_tokens"] <= 0:
        raise ValueError("`max_new_tokens` must be greater than 0")
    start = p["decoder_start_token_id"]
    p["start"] = start if start is not None else p["bos_token_id"]
    if p["start"] is None:
        raise ValueError("`decoder_start_token_id` or `bos_token_id` has to be defined")
    eos = p["eos_token_id"]
    p["eos"] = None if eos is None else ([eos] if isinstance(eos, int) else list(eos))
    if p["pad_token_id"] is None and p["eos"] is not None:
        p["pad_token_id"] = p["eos"][0]
    prompt = 1
    if p["max_new_tokens"] is not None:
        p["max_length"] = p["max_new_tokens"] + prompt
    elif p["max_length"] == DEFAULT_MAX_LENGTH:
        p["max_length"] = DEFAULT_MAX_LENGTH + prompt
    if p["min_new_tokens"] is not None:
        p["min_length"] = p["min_new_tokens"] + prompt
    if prompt >= p["max_length"]:
        raise ValueError(f"Input length of decoder_input_ids is {prompt}, but `max_length` is set "
                         f"to {p['max_length']}")
    if p["num_beams"] < 1:
        raise ValueError("`num_beams` must be at least 1")
    return p


# ---- logits processors (logits_process.py), on a [rows, V] tensor given ids [rows, len] ----

def no_repeat_ngram(n, ids, scores):
    """Bans each token that would complete an n-gram already in the row (start token included)."""
    cur_len = ids.shape[1]
    if cur_len < n:
        return scores
    out = scores.clone()
    for r in range(ids.shape[0]):
        row = ids[r].tolist()
        prefix = row[cur_len + 1 - n:]
        for i in range(cur_len - n + 1):
            if row[i:i + n - 1] == prefix:
                out[r, row[i + n - 1]] = -math.inf
    return out


def mask_eos(eos, scores):
    out = scores.clone()
    out[:, eos] = -math.inf
    return out


def force(token_ids, scores):
    out = torch.full_like(scores, -math.inf)
    out[:, token_ids] = 0
    return out


def processors(p):
    """The processors generate() builds for p, as functions (ids, scores) -> scores."""
    procs = []
    if p["no_repeat_ngram_size"] and p["no_repeat_ngram_size"] > 0:
        procs.append(lambda ids, s: no_repeat_ngram(p["no_repeat_ngram_size"], ids, s))
    if p["min_length"] and p["eos"] is not None and p["min_length"] > 0:
        procs.append(lambda ids, s: mask_eos(p["eos"], s) if ids.shape[1] < p["min_length"] else s)
    if p["min_new_tokens"] and p["eos"] is not None and p["min_new_tokens"] > 0:
        procs.append(lambda ids, s: mask_eos(p["eos"], s)
                     if ids.shape[1] - 1 < p["min_new_tokens"] else s)
    if p["forced_bos_token_id"] is not None:
        procs.append(lambda ids, s: force(p["forced_bos_token_id"], s) if ids.shape[1] == 1 else s)
    if p["forced_eos_token_id"] is not None:
        feos = p["forced_eos_token_id"]
        feos = [feos] if isinstance(feos, int) else list(feos)
        procs.append(lambda ids, s: force(feos, s) if ids.shape[1] == p["max_length"] - 1 else s)

    def apply(ids, scores):
        for f in procs:
            scores = f(ids, scores)
        return scores
    return apply


# ---- the decision margins (how far each choice is from flipping), for the golden writer ----

def real(v):
    return math.isfinite(v) and v > NEG / 10


class Margins:
    """The smallest gap seen between a value that was chosen and one that was not (between
    finite values above -1e8 only: the -1e9 placeholders of beam search and -inf are never
    compared with real scores)."""

    def __init__(self):
        self.smallest = math.inf

    def gap(self, a, b):
        if real(a) and real(b):
            self.smallest = min(self.smallest, abs(a - b))

    def topk_boundary(self, values, k):
        v = sorted(values.tolist(), reverse=True)
        if k < len(v):
            self.gap(v[k - 1], v[k])


# ---- greedy (_sample without sampling) ----

def greedy(next_logits, batch_size, p, margins=None):
    process = processors(p)
    eos = torch.tensor(p["eos"]) if p["eos"] is not None else None
    ids = torch.full((batch_size, 1), p["start"], dtype=torch.long)
    unfinished = torch.ones(batch_size, dtype=torch.long)
    lengths = [None] * batch_size
    score = torch.zeros(batch_size, dtype=torch.float64)
    while True:
        logits = torch.from_numpy(np.asarray(next_logits(ids.tolist()), dtype=np.float64))
        scores = process(ids, logits)
        tokens = torch.argmax(scores, dim=-1)
        step_lp = process(ids, torch.log_softmax(logits, dim=-1))
        for r in range(batch_size):
            if unfinished[r] and margins is not None:
                margins.topk_boundary(scores[r], 1)
            if unfinished[r]:
                score[r] += step_lp[r, tokens[r]]
        if eos is not None:
            tokens = tokens * unfinished + p["pad_token_id"] * (1 - unfinished)
        ids = torch.cat([ids, tokens[:, None]], dim=-1)
        done = torch.full((batch_size,), ids.shape[1] >= p["max_length"])
        if eos is not None:
            done |= torch.isin(tokens, eos)
        for r in range(batch_size):
            if unfinished[r] and done[r]:
                lengths[r] = ids.shape[1]
        unfinished = unfinished & ~done
        if unfinished.max() == 0:
            break
    return [(ids[r, :lengths[r]].tolist(), score[r].item()) for r in range(batch_size)]


# ---- beam search (_beam_search and its helpers), static shapes as HF keeps them ----

def gather_beams(tensor, indices):
    while indices.dim() < tensor.dim():
        indices = indices.unsqueeze(-1)
    return torch.take_along_dim(tensor, indices, dim=1)


def beam_search(next_logits, batch_size, p, margins=None):
    process = processors(p)
    nb, max_length, lp, early = p["num_beams"], p["max_length"], p["length_penalty"], \
        p["early_stopping"]
    eos = torch.tensor(p["eos"]) if p["eos"] is not None else None
    keep = max(2, 1 + (len(p["eos"]) if eos is not None else 0)) * nb
    top_mask = torch.cat([torch.ones(nb, dtype=torch.bool), torch.zeros(keep - nb, dtype=torch.bool)])
    cur_len = prompt = 1
    fill = p["pad_token_id"] if p["pad_token_id"] is not None else -1
    running = torch.full((batch_size, nb, max_length), fill, dtype=torch.long)
    running[:, :, 0] = p["start"]
    sequences = running.clone()
    running_scores = torch.zeros((batch_size, nb), dtype=torch.float64)
    running_scores[:, 1:] = NEG
    beam_scores = torch.full((batch_size, nb), NEG, dtype=torch.float64)
    finished = torch.zeros((batch_size, nb), dtype=torch.bool)
    unsatisfied = torch.ones((batch_size, 1), dtype=torch.bool)
    running_idx = torch.full((batch_size, nb, max_length - prompt), -1, dtype=torch.long)
    beam_idx = running_idx.clone()
    while True:
        flat = running[:, :, :cur_len].reshape(batch_size * nb, cur_len)
        logits = torch.from_numpy(np.asarray(next_logits(flat.tolist()), dtype=np.float64))
        vocab = logits.shape[1]
        log_probs = process(flat, torch.log_softmax(logits, dim=-1))
        log_probs = log_probs.reshape(batch_size, nb, vocab) + running_scores[:, :, None]
        log_probs = log_probs.reshape(batch_size, nb * vocab)
        # c. the top K continuations of all beams
        top_lp, top_i = torch.topk(log_probs, k=keep)
        parent = top_i // vocab
        top_seq = gather_beams(running, parent)
        top_idx = gather_beams(running_idx, parent)
        top_seq[:, :, cur_len] = top_i % vocab
        top_idx[:, :, cur_len - prompt] = parent + torch.arange(batch_size)[:, None] * nb
        # d. which of them finish
        hits = torch.full((batch_size, keep), cur_len + 1 >= max_length)
        if eos is not None:
            hits |= torch.isin(top_seq[:, :, cur_len], eos)
        # e. the next running beams
        top_running = top_lp + hits.to(torch.float64) * NEG
        next_i = torch.topk(top_running, k=nb)[1]
        # f. the finished ones
        just = hits & top_mask[None, :]
        fin = top_lp / ((cur_len + 1 - prompt) ** lp)
        full = torch.all(finished, dim=-1, keepdim=True) & (early is True)
        fin = fin + full.to(torch.float64) * NEG + (~unsatisfied).to(torch.float64) * NEG
        fin = fin + (~just).to(torch.float64) * NEG
        merged = torch.cat([beam_scores, fin], dim=1)
        merged_i = torch.topk(merged, k=nb)[1]
        if margins is not None:
            for b in range(batch_size):
                if unsatisfied[b]:
                    margins.topk_boundary(log_probs[b], keep)
                    margins.topk_boundary(top_lp[b], nb)
                    margins.topk_boundary(top_running[b], nb)
                    margins.topk_boundary(merged[b], nb)
        running = gather_beams(top_seq, next_i)
        running_scores = gather_beams(top_running, next_i)
        running_idx = gather_beams(top_idx, next_i)
        sequences = gather_beams(torch.cat([sequences, top_seq], dim=1), merged_i)
        beam_scores = gather_beams(merged, merged_i)
        beam_idx = gather_beams(torch.cat([beam_idx, top_idx], dim=1), merged_i)
        finished = gather_beams(torch.cat([finished, just], dim=1), merged_i)
        # g. the stopping condition
        cur_len += 1
        best_len = (max_length if early == "never" and lp > 0.0 else cur_len) - prompt
        best = running_scores[:, :1] / (best_len ** lp)
        worst = torch.where(finished, torch.min(beam_scores, dim=1, keepdim=True)[0],
                            torch.tensor(NEG, dtype=torch.float64))
        if margins is not None:
            for b in range(batch_size):
                if unsatisfied[b]:
                    for w in worst[b].tolist():
                        margins.gap(best[b, 0].item(), w)
        unsatisfied = unsatisfied & torch.any(best > worst, dim=-1, keepdim=True)
        open_beam = not (bool(torch.all(finished)) and early is True)
        if not (bool(torch.any(unsatisfied)) and open_beam and not bool(torch.all(hits))):
            break
    out = []
    for b in range(batch_size):
        if margins is not None:
            margins.gap(beam_scores[b, 0].item(), beam_scores[b, 1].item() if nb > 1 else NEG)
        n = int((beam_idx[b, 0] >= 0).sum())
        out.append((sequences[b, 0, :prompt + n].tolist(), beam_scores[b, 0].item()))
    return out


def generate(next_logits, batch_size, cfg, margins=None):
    p = prepare(cfg)
    if p["num_beams"] == 1:
        return greedy(next_logits, batch_size, p, margins)
    return beam_search(next_logits, batch_size, p, margins)


def hf_sequences(results, cfg):
    """The batch tensor HF returns: rows padded to the longest with pad_token_id (greedy) or with
    beam search's filler (`pad_token_id or eos_token_id[0]`: a pad id of 0 gives the eos id)."""
    p = prepare(cfg)
    if p["num_beams"] == 1:
        fill = p["pad_token_id"]
    else:
        fill = (p["pad_token_id"] or p["eos"][0]) if p["eos"] is not None else -1
    n = max(len(ids) for ids, _ in results)
    return [ids + [fill] * (n - len(ids)) for ids, _ in results]


# ---- the toy language model and tests/data/generate-toy ----

VOCAB = 24
POSITIONS = 12
ITEMS = 3
TABLE_SETS = 8
START, PAD, EOS, EOS2, BOS = 0, 1, 2, 5, 3


def toy_tables(seed):
    """float32 tables: A by last token, P by generated length (the eos ids made likelier as the
    sequence grows), C by batch item."""
    g = np.random.default_rng(seed)
    a = g.normal(0, 1.0, (VOCAB, VOCAB)).astype(np.float32)
    pos = g.normal(0, 0.7, (POSITIONS, VOCAB)).astype(np.float32)
    for t in range(POSITIONS):
        pos[t, EOS] += np.float32(-1.0 + 0.7 * t)
        pos[t, EOS2] += np.float32(-2.0 + 0.7 * t)
    c = g.normal(0, 1.0, (ITEMS, VOCAB)).astype(np.float32)
    c[:, EOS] += np.float32([2.5, 0.0, -2.5])  # the items end at different lengths
    return a, pos, c


def toy_model(tables, num_beams):
    a, pos, c = (t.astype(np.float64) for t in tables)

    def next_logits(seqs):
        return np.stack([a[s[-1]] + pos[min(len(s) - 1, POSITIONS - 1)] + c[r // num_beams]
                         for r, s in enumerate(seqs)])
    return next_logits


def toy_cases():
    """(name, batch, config) of every case the C is checked on."""
    base = dict(decoder_start_token_id=START, eos_token_id=EOS, pad_token_id=PAD)
    cases = [("greedy batch 1", 1, dict(base)),
             ("greedy batch 3", 3, dict(base)),
             ("greedy max_new_tokens 4", 3, dict(base, max_new_tokens=4)),
             ("greedy min_length 7", 3, dict(base, min_length=7)),
             ("greedy min_new_tokens 5", 3, dict(base, min_new_tokens=5)),
             ("greedy no_repeat_ngram_size 2", 3, dict(base, no_repeat_ngram_size=2)),
             ("greedy no eos", 2, dict(decoder_start_token_id=START, max_length=9)),
             ("greedy two eos ids", 3, dict(base, eos_token_id=[EOS, EOS2])),
             ("greedy start is eos, pad from eos", 3,
              dict(decoder_start_token_id=EOS, eos_token_id=EOS)),
             ("greedy forced bos and eos", 3,
              dict(base, forced_bos_token_id=BOS, forced_eos_token_id=EOS, max_new_tokens=6)),
             ("greedy bos as start", 2, dict(bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD))]
    for ngram in (0, 2):  # num_beams 1 is greedy: length_penalty and early_stopping unused
        cases.append((f"beams 1 ngram {ngram}", 3, dict(base, num_beams=1, length_penalty=2.0,
                                                        no_repeat_ngram_size=ngram,
                                                        max_new_tokens=10)))
    for nb in (2, 3, 4):
        for lp in (1.0, 0.5, 2.0):
            for early in (False, True, "never"):
                for ngram in (0, 2):
                    cfg = dict(base, num_beams=nb, length_penalty=lp, early_stopping=early,
                               no_repeat_ngram_size=ngram, max_new_tokens=10)
                    cases.append((f"beams {nb} lp {lp} early {early} ngram {ngram}", 3, cfg))
    beam = dict(base, num_beams=3)
    cases += [("beams 3 batch 1", 1, dict(beam)),
              ("beams 3 default max_length", 2, dict(beam)),
              ("beams 3 min_length 8", 3, dict(beam, min_length=8, max_length=12)),
              ("beams 2 min_new_tokens 6", 3, dict(beam, num_beams=2, min_new_tokens=6)),
              ("beams 4 max_new_tokens 3", 3, dict(beam, num_beams=4, max_new_tokens=3)),
              ("beams 3 two eos ids", 3, dict(beam, eos_token_id=[EOS, EOS2], max_new_tokens=9)),
              ("beams 2 no eos", 2, dict(decoder_start_token_id=START, num_beams=2,
                                         max_length=7)),
              ("beams 3 forced bos and eos", 3,
               dict(beam, forced_bos_token_id=BOS, forced_eos_token_id=EOS, max_new_tokens=7)),
              ("beams 3 start is eos", 3, dict(beam, decoder_start_token_id=EOS, pad_token_id=None)),
              ("beams 4 lp -1 never", 3, dict(beam, num_beams=4, length_penalty=-1.0,
                                              early_stopping="never", max_new_tokens=8)),
              ("beams 2 lp 0 never ngram 3", 3, dict(beam, num_beams=2, length_penalty=0.0,
                                                     early_stopping="never",
                                                     no_repeat_ngram_size=3))]
    return cases


def tie_cases():
    """torch.topk's order of equal values on the CPU: both of its paths (partial_sort when
    k * 64 <= n, else nth_element and a sort of the first k - 1), on float32 rows full of ties
    (-inf written as null)."""
    g = np.random.default_rng(7)
    out = []
    for n, k, levels in [(6, 4, 3), (12, 4, 2), (40, 8, 3), (40, 8, 40), (96, 8, 5), (200, 3, 4),
                         (300, 4, 2), (600, 8, 3), (600, 8, 1), (1000, 12, 6), (24, 24, 3),
                         (17, 1, 2), (2, 2, 1), (1, 1, 1), (64, 1, 3), (130, 2, 1), (700, 10, 2)]:
        v = g.integers(0, levels, n).astype(np.float32) - np.float32(levels)
        if n > 2:
            v[g.integers(0, n, 2)] = -np.inf
        idx = torch.topk(torch.from_numpy(v), k=k).indices
        out.append(dict(values=[None if x == -np.inf else float(x) for x in v], k=k,
                        indices=idx.tolist()))
    return out


def write_safetensors(path, tensors):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from hf_reference import write_safetensors as write
    write(path, tensors)


def main():
    out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data",
                           "generate-toy")
    os.makedirs(out_dir, exist_ok=True)
    sets = [toy_tables(1001 + s) for s in range(TABLE_SETS)]
    cases, smallest = [], math.inf
    for name, batch, cfg in toy_cases():
        nb = cfg.get("num_beams", 1)
        for s, tables in enumerate(sets):
            m, model, steps = Margins(), toy_model(tables, nb), []
            results = generate(lambda seqs: steps.append(1) or model(seqs), batch, cfg, m)
            if m.smallest > 1e-4:
                break
        else:
            raise SystemExit(f"{name}: every table set has a decision closer than 1e-4")
        smallest = min(smallest, m.smallest)
        cases.append(dict(name=name, batch=batch, tables=s, config=cfg, steps=len(steps),
                          items=[dict(ids=ids, score=score) for ids, score in results],
                          hf_sequences=hf_sequences(results, cfg)))
        print(f"{name}: table set {s}, margin {m.smallest:.2e}, lengths "
              f"{[len(ids) for ids, _ in results]}")
    tensors = {}
    for s in sorted({c["tables"] for c in cases} | {0}):
        a, pos, c = sets[s]
        tensors.update({f"{s}/A": a, f"{s}/P": pos, f"{s}/C": c})
    write_safetensors(os.path.join(out_dir, "tables.safetensors"), tensors)
    head = dict(vocab=VOCAB, positions=POSITIONS, items=ITEMS)
    with open(os.path.join(out_dir, "cases.json"), "w") as f:  # one case a line
        f.write(json.dumps(head)[:-1] + ',\n"cases": [\n')
        f.write(",\n".join(json.dumps(c) for c in cases))
        f.write('],\n"topk_ties": [\n')
        f.write(",\n".join(json.dumps(c) for c in tie_cases()))
        f.write("]}\n")
    print(f"{len(cases)} cases, smallest decision margin {smallest:.2e}")


if __name__ == "__main__":
    main()
