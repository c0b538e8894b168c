"""Per-layer pruning kernels: fastnips vs plain PyTorch peers (bench/prune/reference.py), float32.

Groups:

* ``sparsegpt (d_out x d_in) <pattern>``: one SparseGPT layer update (preparation + OBS column sweep, blocksize 128,
  percdamp 0.01) on SmolLM2-like shapes: d_in 576 (d_out 1536, the MLP up/gate shape), 1536 (d_out 576, the MLP
  down shape) and 4096 (d_out 1536, marked slow). Rows: ``fastnips-cpp`` (defaults: mask per block over all rows,
  float64 preparation), ``fastnips-cpp-f32prep`` (``prep_dtype=torch.float32``), ``torch-reference`` (the
  reference algorithm as it runs, float32 preparation and its threshold block mask: reference.py
  ``sparsegpt_as_run``), ``sparsegpt-real`` (IST-DASLab/sparsegpt's own ``SparseGPT.fasterprune``, only when
  ``FASTNIPS_SPARSEGPT_REPO`` names a local checkout; its ``torch.cuda.synchronize`` is a no-op without CUDA),
  ``fastnips-triton`` (CUDA only). H comes from 2 d_in random correlated tokens.
* ``nm-select 2:4 (4096 x 4096)``: N:M keep-mask selection on distinct random scores. Rows: ``fastnips-cpp``,
  ``torch-loop-topk`` (Wanda's loop over column groups), ``torch-sort`` (one vectorised sort).
* ``row-select 50% (4096 x 4096)``: per-row unstructured selection. Rows: ``fastnips-cpp``, ``torch-sort``.

Every run checks ours against the reference as it runs: N:M masks identical up to float32 near-ties (at most
1e-4 of the entries, recorded as ``mask_mismatch``) and weights equal to 1e-3 of their norm; unstructured, the
reference prunes at least one entry more per block (its ``<=`` threshold, plus float32 ties) and ours exactly
``floor(s * rows * i2) - floor(s * rows * i1)``, and our layer error ``tr((W0 - W) H (W0 - W)^T)`` is at most 1.01x
the reference's. ``sparsegpt-real`` must equal ``torch-reference`` bit for bit.

Timings: ``OMP_NUM_THREADS=1 pytest bench/prune/bench_layer.py --benchmark-only`` (and without the variable for
threaded numbers); smoke: ``pytest bench/prune --benchmark-disable``.
"""

from __future__ import annotations

import functools
import importlib.util
import math
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
SGPT_IMPLS = ["fastnips-cpp", "fastnips-cpp-f32prep", "torch-reference", "sparsegpt-real", "fastnips-triton"]


@functools.lru_cache(maxsize=2)
def layer(d_out: int, d_in: int):
    g = torch.Generator().manual_seed(0)
    n = 2 * d_in
    mix = torch.eye(d_in) + torch.randn(d_in, d_in, generator=g) / d_in**0.5 * 0.3
    X = torch.randn(n, d_in, generator=g) @ mix
    Xs = math.sqrt(2 / n) * X.T
    H = Xs @ Xs.T  # 2/n X^T X, rounded as the reference accumulates it from n one-token samples
    W = torch.randn(d_out, d_in, generator=g) / d_in**0.5
    return W, H, X


def _as_run_args(pattern: str) -> dict:
    nm = SGPT_PATTERNS[pattern].get("pattern")
    return dict(zero_n=nm.group - nm.keep, of_m=nm.group) if nm else dict(sparsity=0.5)


@functools.lru_cache(maxsize=4)
def peer_result(d_out: int, d_in: int, pattern: str):
    W, H, _ = layer(d_out, d_in)
    return peers.sparsegpt_as_run(W.clone(), H, **_as_run_args(pattern))


def real_sparsegpt():
    """IST-DASLab/sparsegpt's module from FASTNIPS_SPARSEGPT_REPO (a local checkout; nothing is downloaded)."""
    import os

    repo = os.environ.get("FASTNIPS_SPARSEGPT_REPO")
    if not repo:
        pytest.skip("set FASTNIPS_SPARSEGPT_REPO to a checkout of IST-DASLab/sparsegpt to time its own code")
    pytest.importorskip("transformers")
    if not torch.cuda.is_available():
        torch.cuda.synchronize = lambda *a, **k: None  # its fasterprune synchronises unconditionally
    sys.path.insert(0, repo)
    try:
        import sparsegpt as real
    finally:
        sys.path.remove(repo)
    return real


def real_layer(real, W0, X):
    """The reference's layer object with its Hessian accumulated (outside the timing, as ours gets H given)."""
    lin = torch.nn.Linear(W0.shape[1], W0.shape[0], bias=False)
    lin.weight.data = W0.clone()
    s = real.SparseGPT(lin)
    s.add_batch(X.unsqueeze(1), None)  # n samples of one token: H = 2/n X^T X
    return lin, s


def run_real(real, lin, s, W0, H, pattern: str):
    import contextlib
    import io

    lin.weight.data = W0.clone()
    s.H = H.clone()  # fasterprune consumes it
    a = _as_run_args(pattern)
    with contextlib.redirect_stdout(io.StringIO()):  # it prints its time and error
        s.fasterprune(a.get("sparsity", 0.5), prunen=a.get("zero_n", 0), prunem=a.get("of_m", 0))
    return lin.weight.data, lin.weight.data != 0


def _layer_error(W0, W, H) -> float:
    D = (W0 - W).double()
    return float(((D @ H.double()) * D).sum())


@pytest.mark.parametrize("impl", SGPT_IMPLS)
@pytest.mark.parametrize("pattern", list(SGPT_PATTERNS))
@pytest.mark.parametrize("shape", SGPT_SHAPES)
def test_sparsegpt_layer(machine_facts, shape, pattern, impl):
    benchmark = machine_facts
    d_out, d_in = shape
    benchmark.group = f"sparsegpt ({d_out} x {d_in}) {pattern}"
    benchmark.extra_info.update(d_out=d_out, d_in=d_in, pattern=pattern, blocksize=128)
    W0, H, X = layer(d_out, d_in)
    spec = SGPT_PATTERNS[pattern]
    if impl == "fastnips-triton":
        if not torch.cuda.is_available() or not _backend.backend_available("triton"):
            pytest.skip("no CUDA device for the triton backend")
        Wd, Hd = W0.cuda(), H.cuda()
        run = lambda: (lambda W: (W, sparsegpt_prune_(W, Hd, backend="triton", **spec).mask))(Wd.clone())
    elif impl.startswith("fastnips-cpp"):
        _need_cpp()
        prep = torch.float32 if impl.endswith("f32prep") else torch.float64
        run = lambda: (lambda W: (W, sparsegpt_prune_(W, H, backend="cpp", prep_dtype=prep, **spec).mask))(W0.clone())
    elif impl == "sparsegpt-real":
        real = real_sparsegpt()
        lin, obj = real_layer(real, W0, X)
        assert torch.equal(obj.H, H)  # the same Hessian, bit for bit
        run = lambda: run_real(real, lin, obj, W0, H, pattern)
    else:
        run = lambda: peers.sparsegpt_as_run(W0.clone(), H, **_as_run_args(pattern))
    W, mask = benchmark(run)
    W, mask = W.cpu(), mask.cpu()
    W_peer, mask_peer = peer_result(d_out, d_in, pattern)
    assert (W[~mask] == 0).all()
    if impl in ("torch-reference", "sparsegpt-real"):
        assert torch.equal(W, W_peer)  # our reading of the reference is its code, bit for bit
        return
    if "pattern" in spec:
        mismatch = int((mask != mask_peer).sum())
        benchmark.extra_info.update(mask_mismatch=mismatch)
        assert mismatch <= 1e-4 * mask.numel()
        assert float(torch.linalg.norm(W - W_peer)) <= 1e-3 * float(torch.linalg.norm(W_peer))
        return
    for b, i1 in enumerate(range(0, d_in, 128)):
        i2 = min(i1 + 128, d_in)
        ours, ref = int((~mask[:, i1:i2]).sum()), int((~mask_peer[:, i1:i2]).sum())
        assert ours == (d_out * i2) // 2 - (d_out * i1) // 2
        assert ref >= int(d_out * (i2 - i1) * 0.5) + 1, (b, ref)  # one more, and every float32 tie
    e_ours, e_ref = _layer_error(W0, W, H), _layer_error(W0, W_peer, H)
    benchmark.extra_info.update(layer_error_ratio=e_ours / e_ref)
    assert e_ours <= 1.01 * e_ref


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
