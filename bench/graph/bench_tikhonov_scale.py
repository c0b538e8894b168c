"""Tikhonov layer forward + backward at scale (issue 4, item 6): fastnips vs scipy CG vs APPNP-10.

Graphs (average degree about 8, node order as generated, i.e. no locality ordering):

* ``rgg``: random geometric graph in the unit square, radius sqrt(8 / (pi n)) (scipy cKDTree);
* ``sbm``: 10-block stochastic block model, 80 % of the edges inside blocks;
* ``regular``: 8-regular by the configuration model (self loops and repeated pairs dropped, so a few
  nodes have degree 6 or 7).

n = 1e3 ... 1e6, F = 16 and 128 channels, p of degree K = 4 (Bernstein, theta ~ U[0, 1]),
q ~ U[0.1, 1], float32 (what a GNN trains in), relative residual 1e-5 per column, forward and backward:

* ``fastnips``: ``fastnips.graph.tikhonov_prop`` forward, then ``.backward()`` for the gradients of x,
  q and theta: one forward solve, one adjoint solve with the same operator, K sparse products for the
  theta gradient (backend auto = cpp: block Jacobi-PCG, Chebyshev recurrence fused with its epilogue).
* ``scipy-cg``: ``scipy.sparse.linalg.cg`` column by column on a matrix-free ``LinearOperator`` (p(L)
  by Horner's rule, K sparse products), float32, rtol 1e-5: the forward solve and the adjoint solve
  (the gradient formulas themselves are not timed for scipy: they are cheap next to two solves).
* ``direct-superlu``: ``tikhonov_prop(..., method="direct")``: p(L) + Q assembled and factorised once
  by scipy's SuperLU (CHOLMOD where scikit-sparse is installed; it is not here), forward and adjoint
  solves with the one factor. Run only where p(L) has at most 5e6 nonzeros: the fill of p(L) grows like
  the K-hop neighbourhoods (d^K per row on expander-like graphs, far less on geometric ones), and the
  LU factor's fill on top of that.
* ``appnp-10``: ten APPNP steps forward and ten backward (20 SpMMs with ``fastnips.ops.spmm``), the
  cost floor of a fixed-depth propagation layer (not the same operator).
* ``memcpy``: a copy of as many bytes as one SpMM of the block moves.

The ``fastnips`` row records ``traffic_bytes`` = (number of SpMMs it ran) x (minimal bytes of one SpMM:
the CSR arrays once, the block in and out), so its GB/s column reads directly against ``memcpy``: the
bandwidth bound of its SpMMs. Checks: every column of our forward and adjoint solves reaches its true
residual 1e-5, the layer's forward equals that solve, and scipy's Y and dL/dX equal ours (relative 2e-3 in
float32, both solved to 1e-5).

Sizes n >= 1e5 at F = 128 and all of n = 1e6 are marked ``slow`` (not in CI's smoke run); scipy's
column-by-column CG is skipped where one round would exceed about 3 minutes (it is linear in F: read the
F = 16 row x 8). Run:

    OMP_NUM_THREADS=2 pytest bench/graph/bench_tikhonov_scale.py -m "" --benchmark-only \\
        --benchmark-json=scale.json && python bench/report.py scale.json
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
import scipy.sparse.linalg as spla

from fastnips.graph import normalized_laplacian, tikhonov_solve
from fastnips.graph.reference import poly_apply_reference
from fastnips.ops import spmm

torch = pytest.importorskip("torch")

SIZES = {"n=1e3": 1_000, "n=1e4": 10_000, "n=1e5": 100_000, "n=1e6": 1_000_000}
FAMILIES = ("rgg", "sbm", "regular")
CHANNELS = (16, 128)
AVG_DEGREE = 8
K = 4
TOL = 1e-5
ALPHA = 0.1
AGREE = 2e-3
IMPLS = ["fastnips", "scipy-cg", "direct-superlu", "appnp-10", "memcpy"]
#: the direct row runs where p(L) has at most this many nonzeros (estimated before forming it)
DIRECT_MAX_FILL = 5e6
#: scipy CG is run where (n * F) stays below this (one round of ~3 minutes on this machine)
SCIPY_MAX_NF = 1_000_000 * 16


def edges(family: str, n: int, rng) -> np.ndarray:
    if family == "rgg":
        from scipy.spatial import cKDTree

        pts = rng.random((n, 2))
        pairs = cKDTree(pts).query_pairs(math.sqrt(AVG_DEGREE / (math.pi * n)), output_type="ndarray").T
    elif family == "sbm":
        blocks, m = 10, n * AVG_DEGREE // 2
        intra = rng.random(m) < 0.8
        a = rng.integers(0, n, m)
        b = rng.integers(0, n, m)
        # inside a block: move b into a's block (blocks are the residues mod 10), staying below n
        same = b - b % blocks + a % blocks
        same = np.where(same < n, same, same - blocks)
        b = np.where(intra, same, b)
        pairs = np.stack([a, b])
    else:  # configuration model, 8 stubs per node
        stubs = rng.permutation(np.repeat(np.arange(n), AVG_DEGREE))
        pairs = stubs.reshape(-1, 2).T
    pairs = pairs[:, pairs[0] != pairs[1]]
    pairs = np.unique(np.sort(pairs, axis=0), axis=1)
    return np.concatenate([pairs, pairs[::-1]], axis=1)


@functools.lru_cache(maxsize=2)
def graph(family: str, size: str):
    n = SIZES[size]
    rng = np.random.default_rng(0)
    ei = edges(family, n, rng)
    L = normalized_laplacian(ei, n).astype(np.float32)
    Lhat = normalized_laplacian(ei, n, add_self_loops=True).astype(np.float32)
    An = (-Lhat).tocsr()
    An.setdiag(1.0 + An.diagonal())  # A_n = I - L_hat = D^-1/2 (A + I) D^-1/2
    theta = rng.uniform(0.0, 1.0, K + 1)
    q = rng.uniform(0.1, 1.0, n).astype(np.float32)
    return L, An, theta, q


def signals(n: int, F: int):
    rng = np.random.default_rng(1)
    return rng.standard_normal((n, F), dtype=np.float32), rng.standard_normal((n, F), dtype=np.float32)


def ours(L, theta, q, X, G, method="auto"):
    from fastnips.graph import tikhonov_prop

    x = torch.from_numpy(X).requires_grad_()
    qt = torch.from_numpy(q).requires_grad_()
    th = torch.from_numpy(theta).requires_grad_()
    y = tikhonov_prop(x, qt, th, L, tol=TOL, method=method)
    y.backward(torch.from_numpy(G))
    return y.detach().numpy(), x.grad.numpy()


def scipy_solve(L, theta, q, B) -> np.ndarray:
    n = L.shape[0]
    op = spla.LinearOperator((n, n), dtype=np.float32,
                             matvec=lambda v: poly_apply_reference(L, theta, "bernstein", v).astype(np.float32) + q * v)
    Y = np.empty_like(B)
    for c in range(B.shape[1]):
        Y[:, c], info = spla.cg(op, B[:, c], rtol=TOL, atol=0.0, maxiter=10_000)
        assert info == 0
    return Y


def scipy_fwd_bwd(L, theta, q, X, G):
    Y = scipy_solve(L, theta, q, q[:, None] * X)
    Lam = scipy_solve(L, theta, q, G)
    return Y, q[:, None] * Lam  # dL/dX = Q Lambda


def appnp_fwd_bwd(An, X, G):
    Z = X
    for _ in range(10):
        Z = (1 - ALPHA) * spmm(An, Z) + ALPHA * X
    # backward of the linear map: the same recurrence with A_n^T = A_n on G
    W, gx = G, ALPHA * G
    for _ in range(10):
        W = (1 - ALPHA) * spmm(An, W)
        gx = gx + ALPHA * W if _ < 9 else gx + W
    return Z, gx


def spmm_bytes(L, F: int) -> int:
    """Minimal bytes one float32 SpMM with F columns moves: the CSR arrays, the block once in, once out."""
    return L.indptr.nbytes + L.indices.nbytes + L.data.nbytes + 2 * 4 * L.shape[0] * F


def rel_err(a, b) -> float:
    return float(np.abs(a - b).max() / max(float(np.abs(b).max()), 1e-30))


def _slow(size: str, F: int) -> bool:
    return SIZES[size] >= 1_000_000 or (SIZES[size] >= 100_000 and F >= 128)


CASES = [pytest.param(fam, size, F, impl, marks=[pytest.mark.slow] if _slow(size, F) else [])
         for size in SIZES for fam in FAMILIES for F in CHANNELS for impl in IMPLS]


@pytest.mark.parametrize(("family", "size", "F", "impl"), CASES)
def test_tikhonov_fwd_bwd(machine_facts, memcpy_row, family, size, F, impl):
    benchmark = machine_facts
    benchmark.group = f"tikhonov fwd+bwd float32 {family} n={SIZES[size]} F={F} K={K}"
    L, An, theta, q = graph(family, size)
    n = L.shape[0]
    X, G = signals(n, F)
    nbytes = spmm_bytes(L, F)
    benchmark.extra_info.update(n=n, nnz=int(L.nnz), F=F, K=K, tol=TOL, spmm_bytes=nbytes, family=family)
    rounds = 1 if n * F >= 1_000_000 * 16 else 3
    run = functools.partial(benchmark.pedantic, rounds=rounds, iterations=1, warmup_rounds=0)
    if impl == "memcpy":
        memcpy_row(benchmark, nbytes)
        return
    if impl == "scipy-cg" and n * F > SCIPY_MAX_NF:
        pytest.skip(f"scipy CG column by column: one round would take minutes at n={n}, F={F} (linear in F)")
    key = (family, size, F)
    if impl == "fastnips":
        Y0, info = tikhonov_solve(L, theta, q, X, tol=TOL, return_info=True)
        _, info_b = tikhonov_solve(L, theta, q, G / q[:, None], tol=TOL, return_info=True)
        assert info.converged.all()
        assert info_b.converged.all()
        # SpMMs counted conservatively (the GB/s it implies is a lower bound): K per CG iteration, averaged
        # over the columns (converged ones leave the block), forward and adjoint, plus K for the theta gradient
        its = float(info.iterations.mean() + info_b.iterations.mean())
        spmms = int(K * its + K)
        benchmark.extra_info.update(iterations_fwd=int(info.iterations.max()),
                                    iterations_bwd=int(info_b.iterations.max()),
                                    spmms=spmms, traffic_bytes=spmms * nbytes, backend=info.backend)
        Y, gx = run(ours, args=(L, theta, q, X, G))
        assert rel_err(Y, Y0) < 1e-6  # the layer's forward is the checked solve
        RESULTS[key] = (Y, gx)
    elif impl == "direct-superlu":
        from fastnips.graph.factor import _poly_nnz_bound

        fill, _ = _poly_nnz_bound(L, K, DIRECT_MAX_FILL)
        if fill > DIRECT_MAX_FILL:
            pytest.skip(f"p(L) can have up to {fill:.2g} nonzeros (> {DIRECT_MAX_FILL:.0g}): the factor does not fit")
        benchmark.extra_info.update(poly_nnz=float(fill))
        Y, gx = run(ours, args=(L, theta, q, X, G), kwargs={"method": "direct"})
        Yr, gxr = RESULTS.get(key) or ref_fwd_bwd(family, size, F)
        assert rel_err(Y, Yr) < AGREE
        assert rel_err(gx, gxr) < AGREE
    elif impl == "scipy-cg":
        Y, gx = run(scipy_fwd_bwd, args=(L, theta, q, X, G))
        # ours and scipy agree (both columns solved to 1e-5; ours from the row above, else a float64 solve)
        Yr, gxr = RESULTS.get(key) or ref_fwd_bwd(family, size, F)
        assert rel_err(Y, Yr) < AGREE
        assert rel_err(gx, gxr) < AGREE
    else:  # appnp-10
        benchmark.extra_info.update(traffic_bytes=20 * nbytes)
        run(appnp_fwd_bwd, args=(An, X, G))


#: (family, size, F) -> (Y, dL/dX) of the fastnips row, for the scipy row's agreement check
RESULTS: dict = {}


def ref_fwd_bwd(family, size, F):
    """Tight float64 solves (cpp, rtol 1e-9): the yardstick when the fastnips row did not run."""
    L, _, theta, q = graph(family, size)
    X, G = signals(L.shape[0], F)
    L64, q64 = L.astype(np.float64), q.astype(np.float64)
    Y = tikhonov_solve(L64, theta, q64, X.astype(np.float64), tol=1e-9)
    Lam = tikhonov_solve(L64, theta, q64, G.astype(np.float64) / q64[:, None], tol=1e-9)
    return Y, q64[:, None] * Lam


def summary(paths) -> str:
    """One markdown row per (graph, n, F) from pytest-benchmark JSON files of this module: medians, ours vs
    scipy CG and vs APPNP-10, achieved GB/s of our SpMMs against the memory copy of the same run."""
    import json

    rows = {}
    for path in paths:
        with open(path) as fh:
            for b in json.load(fh)["benchmarks"]:
                p = b["params"]
                rows[(p["family"], SIZES[p["size"]], p["F"], p["impl"])] = (b["stats"]["median"], b["extra_info"])
    out = ["| graph | n | F | fastnips | scipy CG | scipy / fastnips | direct (SuperLU) | APPNP-10 "
           "| fastnips / APPNP-10 | fastnips GB/s | memcpy GB/s | x of the bandwidth bound | CG iterations fwd/bwd |",
           "|---" * 13 + "|"]

    def t(v):
        return "–" if v is None else (f"{v:.2f} s" if v >= 1 else f"{v * 1e3:.1f} ms")

    for fam, n, F, impl in sorted(rows, key=lambda k: (k[1], k[0], k[2])):
        if impl != "fastnips":
            continue
        med, e = rows[(fam, n, F, impl)]
        sc, di, ap, mc = (rows.get((fam, n, F, i), (None, {}))[0] for i in ("scipy-cg", "direct-superlu", "appnp-10",
                                                                          "memcpy"))
        gbs = e["traffic_bytes"] / med / 1e9
        mgbs = rows[(fam, n, F, "memcpy")][1]["traffic_bytes"] / mc / 1e9
        out.append(f"| {fam} | {n:.0e} | {F} | {t(med)} | {t(sc)} | {'–' if sc is None else f'{sc / med:.1f}x'} | "
                   f"{t(di)} | {t(ap)} | {med / ap:.1f} | {gbs:.1f} | {mgbs:.1f} | {mgbs / gbs:.1f} | "
                   f"{e['iterations_fwd']}/{e['iterations_bwd']} |")
    return "\n".join(out)


if __name__ == "__main__":
    import sys

    print(summary(sys.argv[1:]))
