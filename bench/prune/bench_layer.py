"""Per-layer pruning kernels: fastnips vs plain PyTorch peers (bench/prune/reference.py), float32.

Groups:

* ``sparsegpt (d_out x d_in) <pattern>``: one SparseGPT layer update (Cholesky preparation + OBS column sweep,
  blocksize 128, percdamp 0.01) on SmolLM2-like shapes: d_in 576 (d_out 1536, the MLP up/gate shape), 1536
  (d_out 576, the MLP down shape) and 4096 (d_out 1536, marked slow). Rows: ``fastnips-cpp``, ``torch-loop``
  (the Python column loop), ``fastnips-triton`` (CUDA only). H comes from 2 d_in random correlated tokens.
* ``nm-select 2:4 (4096 x 4096)``: N:M keep-mask selection on distinct random scores. Rows: ``fastnips-cpp``,
  ``torch-loop-topk`` (Wanda's loop over column groups), ``torch-sort`` (one vectorised sort).
* ``row-select 50% (4096 x 4096)``: per-row unstructured selection. Rows: ``fastnips-cpp``, ``torch-sort``.

Every run checks ours against the peer: selection masks identical; SparseGPT masks identical up to float32
near-ties (the two accumulate the lazy GEMMs in different orders, so a row's k-th and (k+1)-th scores that
agree to ~1e-7 may swap: at most 1e-4 of the entries may differ, 0 here so far; the count is recorded as
``mask_mismatch``) and weights equal to 1e-3 of their norm (1e-5 where the masks agree).

Timings: ``OMP_NUM_THREADS=1 pytest bench/prune/bench_layer.py --benchmark-only`` (and without the variable for
threaded numbers); smoke: ``pytest bench/prune --benchmark-disable``.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from fastnips import _backend  # noqa: E402
from fastnips.prune.masks import NM, select_mask  # noqa: E402
from fastnips.prune.sparsegpt_layer import sparsegpt_prune_  # noqa: E402


def _peers():
    """bench/prune/reference.py (importlib mode does not put this folder on sys.path)."""
    name = "fastnips_bench_prune_reference"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("reference.py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


peers = _peers()


def _need_cpp() -> None:
    if not _backend.backend_available("cpp"):
        pytest.skip(_backend.why_unavailable("cpp"))

SGPT_SHAPES = [
    pytest.param((1536, 576), id="1536x576"),
    pytest.param((576, 1536), id="576x1536"),
    pytest.param((1536, 4096), id="1536x4096", marks=pytest.mark.slow),
]
SGPT_PATTERNS = {"50%": dict(sparsity=0.5), "2:4": dict(pattern=NM(2, 4))}
SGPT_IMPLS = ["fastnips-cpp", "torch-loop", "fastnips-triton"]


@functools.lru_cache(maxsize=2)
def layer(d_out: int, d_in: int):
    g = torch.Generator().manual_seed(0)
    n = 2 * d_in
    mix = torch.eye(d_in) + torch.randn(d_in, d_in, generator=g) / d_in**0.5 * 0.3
    X = torch.randn(n, d_in, generator=g) @ mix
    H = (2.0 / n) * (X.T @ X)
    W = torch.randn(d_out, d_in, generator=g) / d_in**0.5
    return W, H


@functools.lru_cache(maxsize=4)
def peer_result(d_out: int, d_in: int, pattern: str):
    W, H = layer(d_out, d_in)
    spec = SGPT_PATTERNS[pattern]
    nm = spec.get("pattern")
    return peers.sparsegpt_loop(W.clone(), H, sparsity=spec.get("sparsity"), keep=nm.keep if nm else 0,
                                group=nm.group if nm else 0)


@pytest.mark.parametrize("impl", SGPT_IMPLS)
@pytest.mark.parametrize("pattern", list(SGPT_PATTERNS))
@pytest.mark.parametrize("shape", SGPT_SHAPES)
def test_sparsegpt_layer(machine_facts, shape, pattern, impl):
    benchmark = machine_facts
    d_out, d_in = shape
    benchmark.group = f"sparsegpt ({d_out} x {d_in}) {pattern}"
    benchmark.extra_info.update(d_out=d_out, d_in=d_in, pattern=pattern, blocksize=128)
    W0, H = layer(d_out, d_in)
    spec = SGPT_PATTERNS[pattern]
    if impl == "fastnips-triton":
        if not torch.cuda.is_available() or not _backend.backend_available("triton"):
            pytest.skip("no CUDA device for the triton backend")
        Wd, Hd = W0.cuda(), H.cuda()
        run = lambda: (lambda W: (W, sparsegpt_prune_(W, Hd, backend="triton", **spec).mask))(Wd.clone())
    elif impl == "fastnips-cpp":
        _need_cpp()
        run = lambda: (lambda W: (W, sparsegpt_prune_(W, H, backend="cpp", **spec).mask))(W0.clone())
    else:
        nm = spec.get("pattern")
        run = lambda: peers.sparsegpt_loop(W0.clone(), H, sparsity=spec.get("sparsity"), keep=nm.keep if nm else 0,
                                           group=nm.group if nm else 0)
    W, mask = benchmark(run)
    W, mask = W.cpu(), mask.cpu()
    W_peer, mask_peer = peer_result(d_out, d_in, pattern)
    mismatch = int((mask != mask_peer).sum())
    benchmark.extra_info.update(mask_mismatch=mismatch)
    assert mismatch <= 1e-4 * mask.numel()
    assert float(torch.linalg.norm(W - W_peer)) <= 1e-3 * float(torch.linalg.norm(W_peer))
    same = (mask == mask_peer).all(dim=1)
    torch.testing.assert_close(W[same], W_peer[same], rtol=0, atol=1e-5 * float(W_peer.abs().max()))
    assert (W[~mask] == 0).all()


@functools.lru_cache(maxsize=1)
def scores(rows=4096, cols=4096):
    """Distinct scores (a random permutation of k / 2^24, exact in float32): every selection has one answer."""
    n = rows * cols
    return torch.randperm(n, generator=torch.Generator().manual_seed(1)).reshape(rows, cols).float() / 2**24


@pytest.mark.parametrize("impl", ["fastnips-cpp", "torch-loop-topk", "torch-sort"])
def test_nm_select(machine_facts, impl):
    benchmark = machine_facts
    benchmark.group = "nm-select 2:4 (4096 x 4096)"
    S = scores()
    if impl == "fastnips-cpp":
        _need_cpp()
        run = lambda: select_mask(S, pattern=NM(2, 4), backend="cpp")
    elif impl == "torch-loop-topk":
        run = lambda: peers.nm_mask_loop(S, 2, 4)
    else:
        run = lambda: peers.nm_mask_sort(S, 2, 4)
    mask = benchmark(run)
    assert torch.equal(mask, peers.nm_mask_sort(S, 2, 4))
    assert (mask.reshape(S.shape[0], -1, 4).sum(-1) == 2).all()


@pytest.mark.parametrize("impl", ["fastnips-cpp", "torch-sort"])
def test_row_select(machine_facts, impl):
    benchmark = machine_facts
    benchmark.group = "row-select 50% (4096 x 4096)"
    S = scores()
    if impl == "fastnips-cpp":
        _need_cpp()
        run = lambda: select_mask(S, sparsity=0.5, backend="cpp")
    else:
        run = lambda: peers.row_mask_sort(S, 0.5)
    mask = benchmark(run)
    assert torch.equal(mask, peers.row_mask_sort(S, 0.5))
