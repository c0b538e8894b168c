"""SparseGPT per layer: fastnips against IST-DASLab/sparsegpt's own ``SparseGPT.fasterprune``, interleaved.

Each round times the reference, fastnips with the default float64 preparation and fastnips with
``prep_dtype=torch.float32`` in turn (so a shared, loaded machine slows all three alike); prints medians and
ratios. The reference is imported from a local checkout named by ``FASTNIPS_SPARSEGPT_REPO`` (nothing is
downloaded or copied; its ``torch.cuda.synchronize`` is made a no-op without CUDA). Both get the same H
(``2/n X^T X`` rounded as the reference accumulates it); its Hessian accumulation is not timed. Correctness
of the same comparison is checked by ``bench_layer.py``.

Usage: ``FASTNIPS_SPARSEGPT_REPO=... OMP_NUM_THREADS=1 python bench/prune/sparsegpt_vs_reference.py
1536x576/7 576x1536/5 1536x4096/3`` (shape/rounds).
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import statistics
import sys
import time

import torch

from fastnips.prune import NM, sparsegpt_prune_


def layer(d_out: int, d_in: int):
    g = torch.Generator().manual_seed(0)
    n = 2 * d_in
    mix = torch.eye(d_in) + torch.randn(d_in, d_in, generator=g) / d_in**0.5 * 0.3
    X = torch.randn(n, d_in, generator=g) @ mix
    Xs = math.sqrt(2 / n) * X.T
    return torch.randn(d_out, d_in, generator=g) / d_in**0.5, Xs @ Xs.T


def main(argv: list[str]) -> None:
    repo = os.environ.get("FASTNIPS_SPARSEGPT_REPO")
    if not repo:
        sys.exit("set FASTNIPS_SPARSEGPT_REPO to a local checkout of IST-DASLab/sparsegpt")
    if not torch.cuda.is_available():
        torch.cuda.synchronize = lambda *a, **k: None
    sys.path.insert(0, repo)
    import sparsegpt as real

    print(f"torch {torch.__version__}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, "
          f"load average {os.getloadavg()[0]:.1f}")
    for spec in argv or ["1536x576/7", "576x1536/5"]:
        shape, reps = spec.split("/")
        d_out, d_in = map(int, shape.split("x"))
        W, H = layer(d_out, d_in)
        lin = torch.nn.Linear(d_in, d_out, bias=False)
        obj = real.SparseGPT(lin)
        for name, kw, ours in [("50%", dict(sparsity=0.5), dict(sparsity=0.5)),
                               ("2:4", dict(sparsity=0.5, prunen=2, prunem=4), dict(pattern=NM(2, 4)))]:
            t: dict[str, list[float]] = {"reference": [], "f64": [], "f32": []}
            for _ in range(int(reps) + 1):  # round 0 warms up (lazy imports, allocator) and is dropped
                lin.weight.data = W.clone()
                obj.H = H.clone()  # fasterprune consumes it
                with contextlib.redirect_stdout(io.StringIO()):
                    a = time.perf_counter()
                    obj.fasterprune(**kw)
                    t["reference"].append(time.perf_counter() - a)
                for key, dt in (("f64", torch.float64), ("f32", torch.float32)):
                    Wc = W.clone()
                    a = time.perf_counter()
                    sparsegpt_prune_(Wc, H, prep_dtype=dt, **ours)
                    t[key].append(time.perf_counter() - a)
            m = {k: statistics.median(v[1:]) for k, v in t.items()}
            print(f"{d_out}x{d_in} {name}: reference {m['reference'] * 1e3:.0f} ms | fastnips float64 prep "
                  f"{m['f64'] * 1e3:.0f} ms ({m['reference'] / m['f64']:.2f}x) | float32 prep "
                  f"{m['f32'] * 1e3:.0f} ms ({m['reference'] / m['f32']:.2f}x)", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
