"""SpMM: fastnips cpp vs scipy vs torch.sparse (CSR), one group per (size, k); float32, as in GNNs.

Each group also carries a memory-copy row measured in the same run (``memcpy``: copy of an array as
large as the SpMM's minimal traffic), so achieved bandwidth can be read against what the machine does.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from fastnips.data import random_csr
from fastnips.ops import spmm

SIZES = {  # name: (n_rows = n_cols, average nonzeros per row)
    "n=1e4,nnz=1e5": (10_000, 10),
    "n=1e5,nnz=1e6": (100_000, 10),
    "n=1e6,nnz=1e7": (1_000_000, 10),
}
KS = [1, 16, 64]
IMPLS = ["fastnips-cpp", "scipy", "torch.sparse", "memcpy",
         # GPU rows: run where a CUDA device is usable, skip with the reason elsewhere
         "fastnips-cuda", "fastnips-triton", "torch.sparse-cuda"]


@functools.lru_cache(maxsize=2)
def problem(size: str, k: int):
    n, deg = SIZES[size]
    A = random_csr(n, n, avg_degree=deg, seed=0, skew=True, dtype=np.float32)
    X = np.random.default_rng(1).standard_normal((n, k), dtype=np.float32)
    return A, X


def traffic_bytes(A, X) -> int:
    """Minimal bytes an SpMM must move: the CSR arrays, X once, Y once."""
    s = X.dtype.itemsize
    return A.indptr.nbytes + A.indices.nbytes + A.data.nbytes + X.nbytes + A.shape[0] * X.shape[1] * s


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("size", list(SIZES))
def test_spmm(machine_facts, memcpy_row, size, k, impl):
    benchmark = machine_facts
    benchmark.group = f"spmm float32 {size} k={k}"
    A, X = problem(size, k)
    nbytes = traffic_bytes(A, X)
    benchmark.extra_info.update(traffic_bytes=nbytes, nnz=int(A.nnz), k=k)
    if impl.endswith(("-cuda", "-triton")):
        run_gpu(benchmark, impl, A, X)
        return
    if impl == "memcpy":
        memcpy_row(benchmark, nbytes)
        return
    if impl == "fastnips-cpp":
        run = lambda: spmm(A, X, backend="cpp")
    elif impl == "scipy":
        run = lambda: A @ X
    else:
        torch = pytest.importorskip("torch")
        At = torch.sparse_csr_tensor(torch.from_numpy(A.indptr.astype(np.int64)),
                                     torch.from_numpy(A.indices.astype(np.int64)), torch.from_numpy(A.data),
                                     size=A.shape, check_invariants=False)
        Xt = torch.from_numpy(X)
        run = lambda: (At @ Xt).numpy()
    Y = benchmark(run)
    # Every run checks ours and the peers against one oracle (scipy, float64 accumulation).
    ref = (A.astype(np.float64) @ X.astype(np.float64))
    np.testing.assert_allclose(Y, ref, rtol=1e-4, atol=1e-4 * float(np.abs(ref).max()))


def run_gpu(benchmark, impl, A, X):
    """The same product on the GPU, timed with a device synchronisation; checked against scipy."""
    from fastnips import _backend

    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    backend = {"fastnips-cuda": "cuda", "fastnips-triton": "triton"}.get(impl)
    if backend and not _backend.backend_available(backend):
        pytest.skip(f"backend {backend!r} not available: {_backend.why_unavailable(backend)}")
    dev = torch.device("cuda")
    indptr, indices = (torch.from_numpy(a.astype(np.int64)).to(dev) for a in (A.indptr, A.indices))
    data, Xd = torch.from_numpy(A.data).to(dev), torch.from_numpy(X).to(dev)
    if backend:
        def run():
            Y = spmm(indptr, indices, data, Xd, backend=backend)
            torch.cuda.synchronize()
            return Y
    else:
        At = torch.sparse_csr_tensor(indptr, indices, data, size=A.shape, check_invariants=False)

        def run():
            Y = At @ Xd
            torch.cuda.synchronize()
            return Y
    Y = benchmark(run).cpu().numpy()
    ref = A.astype(np.float64) @ X.astype(np.float64)
    np.testing.assert_allclose(Y, ref, rtol=1e-4, atol=1e-4 * float(np.abs(ref).max()))
