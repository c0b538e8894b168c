"""CSR sparse x dense multiply, ``Y = A @ X``, with ``fastnips.ops.spmm`` against scipy (and torch.sparse).

Builds a random 200,000 x 200,000 CSR matrix with about 16 nonzeros per row (float32) and a dense right-hand
side with 32 columns, checks that fastnips and scipy agree, and times both (median of a few runs): the
milliseconds per product, the effective GFLOP/s (2 flops per nonzero and column) and the ratio. Also shows the
three-array form, a Zipf-skewed matrix (a few very long rows), and which backends can run here.

Run: ``python examples/spmm.py`` (numpy/scipy only; torch is used when installed). Seeded; the
times depend on the machine and its load.
"""

from __future__ import annotations

import statistics
import time
import warnings

import numpy as np

import fastnips
from fastnips.data import random_csr
from fastnips.ops import spmm

N, DEG, K, REPS = 200_000, 16, 32, 5


def median_ms(fn) -> float:
    fn()  # warm-up
    times = []
    for _ in range(REPS):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)


def compare(name: str, A, X) -> None:
    Y = spmm(A, X)
    ref = A @ X
    err = float(np.abs(Y - ref).max() / np.abs(ref).max())
    ms_ours, ms_scipy = median_ms(lambda: spmm(A, X)), median_ms(lambda: A @ X)
    gflops = lambda ms: 2.0 * A.nnz * X.shape[1] / (ms * 1e-3) / 1e9
    print(f"{name}: {A.shape[0]:,} x {A.shape[1]:,}, {A.nnz:,} nonzeros, X has {X.shape[1]} columns; "
          f"max relative difference to scipy {err:.1e}")
    print(f"  fastnips (backend auto) {ms_ours:8.2f} ms  {gflops(ms_ours):6.2f} GFLOP/s")
    print(f"  scipy A @ X             {ms_scipy:8.2f} ms  {gflops(ms_scipy):6.2f} GFLOP/s  "
          f"(scipy time / fastnips time = {ms_scipy / ms_ours:.1f})")


def main() -> None:
    print("backends available here:", ", ".join(fastnips.available_backends()))
    X = np.random.default_rng(0).standard_normal((N, K), dtype=np.float32)
    A = random_csr(N, N, avg_degree=DEG, seed=0, dtype=np.float32)
    compare("uniform rows", A, X)
    compare("skewed rows ", random_csr(N, N, avg_degree=DEG, seed=1, skew=True, dtype=np.float32), X)

    Y3 = spmm(A.indptr, A.indices, A.data, X)  # the same product from the three CSR arrays
    print("three-array form equals the matrix form:", bool(np.array_equal(Y3, spmm(A, X))))
    try:
        import torch
    except ImportError:
        print("torch not installed: skipping torch.sparse")
        return
    with warnings.catch_warnings():  # torch calls sparse CSR "beta" on every construction
        warnings.simplefilter("ignore", UserWarning)
        At = torch.sparse_csr_tensor(torch.from_numpy(A.indptr), torch.from_numpy(A.indices), torch.from_numpy(A.data),
                                     size=A.shape, check_invariants=False)
    Xt = torch.from_numpy(X)
    Yt = spmm(At, Xt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ms_ours, ms_torch = median_ms(lambda: spmm(At, Xt)), median_ms(lambda: At @ Xt)
        same = bool(torch.allclose(Yt, At @ Xt, rtol=1e-4, atol=1e-4))
    print(f"torch CSR tensor in, {type(Yt).__module__}.{type(Yt).__name__} out, equal to torch.sparse: {same}")
    print(f"  fastnips {ms_ours:.2f} ms, torch.sparse {ms_torch:.2f} ms")


if __name__ == "__main__":
    main()
