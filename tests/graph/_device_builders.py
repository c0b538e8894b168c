"""Builders and markers shared by the device Tikhonov tests (test_tikhonov_device.py,
test_tikhonov_device_api.py): graphs, tensors, tolerances, the backend skip markers."""

from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.sparse as sp

from fastnips import _backend
from fastnips.data.graphs import undirected_edge_index as undirected
from fastnips.graph import normalized_laplacian

from . import _builders
from ._builders import erdos_renyi, grid

torch = pytest.importorskip("torch")

_TRITON_WHY = _backend.why_unavailable("triton")
needs_triton = pytest.mark.skipif(bool(_TRITON_WHY), reason=f"triton backend not available: {_TRITON_WHY}")
_INTERPRETED = os.environ.get("TRITON_INTERPRET", "") not in ("", "0")
DEV = "cpu" if (_INTERPRETED or not torch.cuda.is_available()) else "cuda"  # where the Triton tests run

_NATIVE = _backend.native()
_CUDA_WHY = _backend.why_unavailable("cuda")
needs_cuda = pytest.mark.skipif(bool(_CUDA_WHY), reason=f"cuda backend not available: {_CUDA_WHY}")

REL = {np.float64: 1e-12, np.float32: 1e-5}
SOLVE_REL = {np.float64: 1e-10, np.float32: 1e-5}
SOLVE_TOL = {np.float64: 1e-12, np.float32: 1e-6}
TDT = {np.float64: torch.float64, np.float32: torch.float32}


def _kernels():
    from fastnips.kernels import tikhonov as tk  # lazy: after conftest set TRITON_INTERPRET

    return tk


def _device():
    from fastnips.graph import _device

    return _device


# ---------------------------------------------------------------------------------------------------
# graphs


def empty_rows(L: sp.csr_matrix, nodes) -> sp.csr_matrix:
    """L with the rows/columns of `nodes` emptied (isolated nodes whose L_ii = 1 is dropped too)."""
    L = L.tolil()
    for i in nodes:
        L[i, :] = 0
        L[:, i] = 0
    L = L.tocsr()
    L.eliminate_zeros()
    return L


def _isolated():
    ei, n = erdos_renyi(60, 0.08, 2)
    L = normalized_laplacian(ei, n + 7)  # nodes 60..66 isolated: L_ii = 1, nothing else in the row
    return empty_rows(L, [61, 63, 65])  # and three truly empty rows


def _disconnected():
    a, na = erdos_renyi(50, 0.15, 3)
    g, ng = grid(6, 7)
    return normalized_laplacian(np.concatenate([a, g + na], axis=1), na + ng)


GRAPHS = {
    "erdos-renyi": lambda: normalized_laplacian(*erdos_renyi(120, 0.05, 1)),
    "isolated+empty-rows": _isolated,
    "disconnected": _disconnected,
    "star": lambda: normalized_laplacian(undirected([(0, i) for i in range(1, 40)]), 40),
    "self-loops": lambda: normalized_laplacian(*erdos_renyi(80, 0.06, 4), add_self_loops=True),
}


def t(a, dtype=None, device=DEV):
    """A fresh tensor (never sharing the caller's numpy memory: the kernels update in place)."""
    out = torch.from_numpy(np.array(a, copy=True, order="C")).to(device)
    return out if dtype is None else out.to(TDT.get(dtype, dtype))


def csr_tensors(L, dtype, index_dtype=np.int32, device=DEV):
    return (t(L.indptr.astype(index_dtype), device=device), t(L.indices.astype(index_dtype), device=device),
            t(L.data, dtype, device=device))


def problem(n, F, seed, K=4, q_range=(0.3, 3.0)):
    return _builders.problem(n, F, seed, K, q_range)


def chebyshev_blocks(L, V, K):
    """Dense T_0 V ... T_K V with T_{k+1} = 2 M T_k - T_{k-1}, M = L - I (repeats in L add up)."""
    M = L.toarray().astype(np.float64) - np.eye(L.shape[0])
    T = [np.asarray(V, dtype=np.float64), M @ V]
    for _ in range(2, K + 1):
        T.append(2 * M @ T[-1] - T[-2])
    return T[: K + 1]
