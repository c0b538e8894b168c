"""Held-out perplexity of pruning criteria x reconstruction windows x sparsity patterns, plus masked LoRA and
global retraining with the same masks (issue 7, item 6; paper arXiv 2510.14444).

Slow tier, not collected by pytest. Every finished configuration is appended to a JSON file, so a long run can
be stopped and resumed (configurations already in the file are skipped) and the table printed at any time:

    OMP_NUM_THREADS=2 python bench/prune/eval_prune.py --model smollm2 --out bench/prune/results_smollm2.json
    python bench/prune/eval_prune.py --table bench/prune/results_smollm2.json
    python bench/prune/eval_prune.py --model tiny --out /tmp/tiny.json          # minutes, the shipped tiny model

Data: calibration from the training split, perplexity on the held-out split of the standard library's
docstrings (fastnips.data.text), split by document. One seed (the budget on 2 cores); the calibration set,
batch order and LoRA init are seeded, so reruns repeat exactly on the same machine.
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import sys
import time
from pathlib import Path

import torch

from fastnips.data.text import corpus_split, stdlib_docstrings
from fastnips.prune import (
    NM,
    Blocks,
    Calibration,
    LoRA,
    block_linears,
    magnitude,
    prune_and_reconstruct,
    retrain,
    sparsegpt,
    wanda,
)
from fastnips.prune.hf import load_causal_lm, perplexity, token_ids

WINDOWS = {"none": None, "matrix": "matrix", "attn_mlp": "attn_mlp", "block": "block", "2 blocks": Blocks(2)}
PATTERNS = {"50%": dict(sparsity=0.5), "2:4": dict(pattern=NM(2, 4))}
CRITERIA = {"magnitude": magnitude, "wanda": wanda, "sparsegpt": sparsegpt}


def _key(**kw) -> str:
    return json.dumps(kw, sort_keys=True)


def _load(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {"runs": {}}


def _save(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    tmp.replace(path)


def table(data: dict) -> str:
    runs = data["runs"]
    meta = data.get("meta", {})
    lines = [f"model {meta.get('model')}, dense ppl {meta.get('ppl_dense', float('nan')):.3f}, "
             f"calibration {meta.get('calib_tokens')} tokens, held-out {meta.get('eval_tokens')} tokens, "
             f"epochs {meta.get('epochs')}, lr {meta.get('lr')}, {meta.get('threads')} threads, {meta.get('date')}"]
    head = f"| criterion | pattern | {' | '.join(WINDOWS)} |"
    lines += ["", head, "|" + "---|" * (2 + len(WINDOWS))]
    for pat in PATTERNS:
        for crit in CRITERIA:
            cells = []
            for w in WINDOWS:
                r = runs.get(_key(kind="window", criterion=crit, pattern=pat, window=w))
                cells.append("" if r is None else f"{r['ppl']:.2f}")
            lines.append(f"| {crit} | {pat} | {' | '.join(cells)} |")
    extra = [(k, v) for k, v in runs.items() if json.loads(k)["kind"] != "window"]
    if extra:
        lines += ["", "| run | ppl | tokens seen | seconds |", "|---|---|---|---|"]
        for k, v in sorted(extra):
            d = json.loads(k)
            name = ", ".join(f"{a}={b}" for a, b in d.items() if a != "kind")
            lines.append(f"| {d['kind']}: {name} | {v['ppl']:.2f} | {v.get('tokens', '')} | {v['seconds']:.0f} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--table", type=Path, help="Print the table of a results file and exit.")
    ap.add_argument("--calib-n", type=int, default=32)
    ap.add_argument("--eval-n", type=int, default=16)
    ap.add_argument("--seqlen", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--criteria", default=",".join(CRITERIA))
    ap.add_argument("--patterns", default=",".join(PATTERNS))
    ap.add_argument("--windows", default=",".join(WINDOWS))
    ap.add_argument("--grid", choices=("minimal", "full"), default="minimal",
                    help="minimal: all windows for Wanda at 50 %%, none/block for the other cells; full: all")
    ap.add_argument("--extras", default="lora,retrain,retrain-dense",
                    help="lora, retrain (wanda, 50 %%, block), retrain-dense (the dense model retrained the same way), "
                         "or none")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    if a.table:
        print(table(_load(a.table)))
        return
    if a.out is None:
        ap.error("--out is required (results are appended there)")
    data = _load(a.out)
    t0 = time.perf_counter()
    model, tok = load_causal_lm(a.model)
    pristine = copy.deepcopy(model.state_dict())
    train_docs, test_docs = corpus_split(stdlib_docstrings(), held_out=0.1, seed=a.seed)
    train_ids = token_ids(tok, train_docs)
    calib = Calibration.from_token_ids(train_ids, seqlen=a.seqlen, n=a.calib_n, seed=a.seed)
    eval_ids = token_ids(tok, test_docs)[: a.eval_n * a.seqlen]

    def ppl():
        return perplexity(model, eval_ids, seqlen=a.seqlen, batch_size=a.batch_size)

    def reset():
        model.load_state_dict(pristine)

    if "meta" not in data:
        data["meta"] = {"model": a.model, "ppl_dense": ppl(), "calib_tokens": calib.num_tokens,
                        "eval_tokens": int(eval_ids.numel()), "epochs": a.epochs, "lr": a.lr,
                        "threads": torch.get_num_threads(), "torch": torch.__version__,
                        "machine": platform.processor() or platform.machine(), "date": time.strftime("%Y-%m-%d"),
                        "load_s": round(time.perf_counter() - t0, 1)}
        _save(a.out, data)
    print(f"dense ppl {data['meta']['ppl_dense']:.3f}", flush=True)

    def record(key, ppl_value, seconds, **extra):  # seconds: pruning/training, then perplexity is measured
        data["runs"][key] = {"ppl": ppl_value, "seconds": seconds, **extra}
        _save(a.out, data)
        print(f"{key} -> ppl {ppl_value:.3f} ({seconds:.0f} s)", flush=True)

    grid = [(p, c, w) for p in a.patterns.split(",") for c in a.criteria.split(",") for w in a.windows.split(",")]
    if a.grid == "minimal":  # the claims' cells: every window for Wanda at 50 %, none/block for the rest
        grid = [(p, c, w) for p, c, w in grid if w in ("none", "block") or (c == "wanda" and p == "50%")]
    for pat, crit, w in grid:
        key = _key(kind="window", criterion=crit, pattern=pat, window=w)
        if key in data["runs"]:
            continue
        reset()
        t = time.perf_counter()
        if WINDOWS[w] is None:
            fn = CRITERIA[crit]
            if crit == "magnitude":
                fn(model, **PATTERNS[pat])
            else:
                fn(model, calib, batch_size=a.batch_size, **PATTERNS[pat])
            extra = {}
        else:
            rep = prune_and_reconstruct(model, calib, criterion=crit, window=WINDOWS[w], epochs=a.epochs,
                                        lr=a.lr, batch_size=a.batch_size, seed=a.seed, **PATTERNS[pat])
            extra = {"window_loss_before": sum(x.loss_before for x in rep.windows) / len(rep.windows),
                     "window_loss_after": sum(x.loss_after for x in rep.windows) / len(rep.windows),
                     "peak_bytes_max": max((x.peak_bytes or 0) for x in rep.windows)}
        seconds = time.perf_counter() - t
        record(key, ppl(), seconds, **extra)
    extras = a.extras.split(",")
    if "lora" in extras:
        key = _key(kind="masked LoRA r=16", criterion="wanda", pattern="50%", window="block")
        if key not in data["runs"]:
            reset()
            t = time.perf_counter()
            prune_and_reconstruct(model, calib, criterion="wanda", sparsity=0.5, window="block", epochs=a.epochs,
                                  lr=10 * a.lr, batch_size=a.batch_size, seed=a.seed, peft=LoRA(16, 32))
            seconds = time.perf_counter() - t
            record(key, ppl(), seconds, tokens=calib.num_tokens * a.epochs)
    if "retrain" in extras:
        for mult in (1, 10):
            key = _key(kind="global retraining", criterion="wanda", pattern="50%", tokens_x=mult)
            if key in data["runs"]:
                continue
            reset()
            t = time.perf_counter()
            masks = wanda(model, calib, sparsity=0.5, batch_size=a.batch_size)
            data_cal = calib if mult == 1 else Calibration.from_token_ids(
                train_ids, seqlen=a.seqlen, n=a.calib_n * mult, seed=a.seed + 1)
            retrain(model, data_cal, masks, epochs=a.epochs, lr=a.lr, batch_size=a.batch_size, seed=a.seed)
            seconds = time.perf_counter() - t
            record(key, ppl(), seconds, tokens=data_cal.num_tokens * a.epochs)
    if "retrain-dense" in extras:  # how much of retraining's gain is adaptation to the calibration text's domain
        key = _key(kind="dense model, global retraining", criterion="none", pattern="dense", tokens_x=1)
        if key not in data["runs"]:
            reset()
            t = time.perf_counter()
            ones = {n: torch.ones_like(m.weight, dtype=torch.bool) for n, m in block_linears(model).items()}
            retrain(model, calib, ones, epochs=a.epochs, lr=a.lr, batch_size=a.batch_size, seed=a.seed)
            seconds = time.perf_counter() - t
            record(key, ppl(), seconds, tokens=calib.num_tokens * a.epochs)
    print()
    print(table(data))


if __name__ == "__main__":
    sys.exit(main())
