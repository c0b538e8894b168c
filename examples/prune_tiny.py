"""LLM pruning with local reconstruction (``fastnips.prune``) on the shipped 0.87M-parameter byte-level decoder.

Prunes every linear of the decoder blocks to 50 % per row with magnitude, Wanda and SparseGPT (calibration:
the standard library's docstrings, nothing downloads), reports held-out perplexity (lower is better) after
pruning alone and after window-by-window reconstruction against the dense model, then 2:4 (keep 2 of every
4) with Wanda + reconstruction, saved packed and read back.

Run: ``python examples/prune_tiny.py`` (needs torch and safetensors; about 20 s on 2 cores). Seeded; one
torch thread, so the numbers repeat for a given torch build.
"""

from __future__ import annotations

import os
import tempfile
import time

import torch

import fastnips.prune as fp
from fastnips.data.text import docstring_token_ids

SEQLEN, CALIB_N, EVAL_N = 64, 16, 32


def main() -> None:
    torch.set_num_threads(1)  # a 0.87M-parameter model: more threads only add synchronisation
    t0 = time.perf_counter()
    train, held = docstring_token_ids(split="train"), docstring_token_ids(split="held_out")
    calib = fp.Calibration.from_token_ids(train, seqlen=SEQLEN, n=CALIB_N, seed=0)
    val = fp.Calibration.from_token_ids(held, seqlen=SEQLEN, n=8, seed=0)
    held = held[: EVAL_N * SEQLEN]
    ppl = lambda m: fp.perplexity(m, held, seqlen=SEQLEN)
    dense = ppl(fp.load_causal_lm("tiny")[0])
    print(f"calibration {calib.num_tokens:,} tokens, held-out {held.numel():,} tokens (bytes of stdlib docstrings)")
    print(f"dense perplexity {dense:.3f} (lower is better)")
    print(f"{'50 % per row':<14} {'pruned':>8} {'+ reconstruction':>17} {'time s':>7}")
    for criterion in ("magnitude", "wanda", "sparsegpt"):
        t = time.perf_counter()
        model = fp.load_causal_lm("tiny")[0]
        fp.prune_and_reconstruct(model, calib, criterion=criterion, sparsity=0.5, window="block", epochs=0)
        pruned = ppl(model)
        model = fp.load_causal_lm("tiny")[0]
        fp.prune_and_reconstruct(model, calib, criterion=criterion, sparsity=0.5, window="block", epochs=2,
                                 lr=1e-3)
        print(f"{criterion:<14} {pruned:>8.3f} {ppl(model):>17.3f} {time.perf_counter() - t:>7.1f}")

    model = fp.load_causal_lm("tiny")[0]
    rep = fp.prune_and_reconstruct(model, calib, criterion="wanda", pattern=fp.NM(keep=2, group=4),
                                   window="attn_mlp", epochs=2, lr=1e-3, validation=val)
    print("2:4 Wanda, attention and MLP windows (losses: MSE to the dense outputs, calibration and held-out):")
    print(rep.table())
    path = os.path.join(tempfile.mkdtemp(), "tiny-2of4.safetensors")
    fp.save_sparse(model, path, fmt="nm", pattern=fp.NM(2, 4))
    fresh = fp.load_causal_lm("tiny")[0]
    fp.load_sparse(path, fresh)
    n_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    print(f"2:4 perplexity {ppl(model):.3f}; saved packed: {os.path.getsize(path) / 1024:.0f} KiB "
          f"(dense float32 parameters {n_bytes / 1024:.0f} KiB); reloaded perplexity {ppl(fresh):.3f}")
    print(f"total {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
