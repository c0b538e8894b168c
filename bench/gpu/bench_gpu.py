r"""GPU-only benchmark rows that the field benches do not have; the rest of the GPU table comes from the GPU rows
of bench/ops, bench/diffusion, bench/prune and bench/vision (ids with ``cuda`` / ``triton``). Run by
``bench/gpu/run.py``; every row skips with the reason where no CUDA device is usable.

Rows (ours and the peer in one ``benchmark.group``, results checked equal in every run):

* ``tikhonov solve``: :func:`fastnips.graph.tikhonov_solve` with the ``cuda`` and ``triton`` backends vs a
  plain torch CG (torch sparse CSR products, i.e. cuSPARSE, and torch vector ops: what a torch user writes),
  monomial :math:`p(L) = c_0 + c_1 L + c_2 L^2`, float32, relative residual 1e-5;
* ``tikhonov layer``: forward + backward of :func:`fastnips.graph.tikhonov_prop` (implicit differentiation,
  one adjoint solve) vs autograd through the same torch CG unrolled for as many iterations as its forward
  needed;
* ``masked LoRA step``: forward + backward + AdamW of :class:`fastnips.prune.MaskedLoRALinear` (Triton, the
  masked product never formed) vs the reference code's ``W + s (B A).masked_fill(W == 0, 0)``;
* ``reconstruction memory``: ``torch.cuda.max_memory_allocated`` of :func:`fastnips.prune.reconstruct` window
  by window (``window="block"``) vs the whole model as one window (``Blocks(n_layers)``); the benchmark time
  is one epoch and the memory is in ``extra_info`` (peak_bytes).

``FASTNIPS_GPU_SIZE=quick`` shrinks every problem (the ``--quick`` mode of run.py); ``FASTNIPS_GPU_SIZE=tiny``
with ``FASTNIPS_GPU_DEVICE=cpu`` (and ``TRITON_INTERPRET=1``) runs the same code on the CPU at toy sizes: the
dry run of tests/test_gpu_script.py, so the rows' API use is checked before GPU time is spent on them.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

DEV = os.environ.get("FASTNIPS_GPU_DEVICE", "cuda")
SIZE = os.environ.get("FASTNIPS_GPU_SIZE", "full")
pytestmark = pytest.mark.skipif(DEV == "cuda" and not torch.cuda.is_available(), reason="needs a CUDA device")


def _size(full, quick, tiny):
    return {"full": full, "quick": quick}.get(SIZE, tiny)


def _sync() -> None:
    if DEV == "cuda":
        torch.cuda.synchronize()


def _peak() -> int:
    return int(torch.cuda.max_memory_allocated()) if DEV == "cuda" else 0
COEFFS = np.array([0.1, 1.0, 0.5])  # monomial p(L) = 0.1 + L + 0.5 L^2 >= 0.1 on [0, 2]
TOL = 1e-5


def _synced(fn):
    def run():
        out = fn()
        _sync()
        return out

    return run


def _graph(n: int, deg: int = 10, seed: int = 0):
    """A random graph's normalized Laplacian on the host (scipy CSR) and on the device (torch sparse CSR)."""
    from fastnips.graph import normalized_laplacian

    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, size=n * deg // 2)
    dst = rng.integers(0, n, size=n * deg // 2)
    L = normalized_laplacian(np.stack([src, dst]), num_nodes=n).tocsr().astype(np.float32)
    Ld = torch.sparse_csr_tensor(torch.from_numpy(L.indptr.astype(np.int64)),
                                 torch.from_numpy(L.indices.astype(np.int64)), torch.from_numpy(L.data),
                                 size=L.shape, check_invariants=False).to(DEV)
    return L, Ld


def torch_cg(Ld, q, B, *, tol: float = TOL, maxiter: int = 10_000):
    """Independent CG per column for (c0 + c1 L + c2 L^2 + diag(q)) Y = B, in torch ops (the peer); returns
    (Y, iterations). Differentiable by autograd (unrolled) when its inputs require grad."""
    c0, c1, c2 = (float(c) for c in COEFFS)

    def A(V):
        LV = Ld @ V
        return c0 * V + c1 * LV + c2 * (Ld @ LV) + q[:, None] * V

    Y = torch.zeros_like(B)
    R = B - A(Y)
    P = R
    rr = (R * R).sum(0)
    stop = (tol ** 2) * (B * B).sum(0)
    it = 0
    while it < maxiter and bool((rr > stop).any()):
        AP = A(P)
        alpha = rr / (P * AP).sum(0).clamp_min(1e-30)
        Y = Y + alpha * P
        R = R - alpha * AP
        rr_new = (R * R).sum(0)
        P = R + (rr_new / rr.clamp_min(1e-30)) * P
        rr = rr_new
        it += 1
    return Y, it


@pytest.mark.parametrize("impl", ["fastnips-cuda", "fastnips-triton", "torch-cg"])
def test_tikhonov_solve_gpu(machine_facts, impl):
    from fastnips import _backend
    from fastnips.graph import tikhonov_solve

    n, F = _size((200_000, 16), (20_000, 8), (300, 3))
    benchmark = machine_facts
    benchmark.group = f"tikhonov solve gpu float32 n={n} deg=10 F={F}"
    _L, Ld = _graph(n)
    g = torch.Generator(device=DEV).manual_seed(1)
    X = torch.randn(n, F, device=DEV, generator=g)
    q = torch.rand(n, device=DEV, generator=g) + 0.5
    if impl == "torch-cg":
        run = _synced(lambda: torch_cg(Ld, q, q[:, None] * X)[0])
    else:
        backend = impl.split("-")[1]
        if _backend.why_unavailable(backend):
            pytest.skip(f"backend {backend}: {_backend.why_unavailable(backend)}")
        run = _synced(lambda: tikhonov_solve(Ld, COEFFS, q, X, basis="monomial", backend=backend,
                                             tol=TOL))
    Y = benchmark(run)
    ref, _ = torch_cg(Ld.double(), q.double(), (q[:, None] * X).double(), tol=1e-10)
    err = ((Y.double() - ref).norm(dim=0) / ref.norm(dim=0)).max().item()
    benchmark.extra_info.update(rel_err=err)
    assert err < 1e-3


@pytest.mark.parametrize("impl", ["fastnips-cuda", "fastnips-triton", "torch-cg-unrolled"])
def test_tikhonov_layer_gpu(machine_facts, impl):
    from fastnips import _backend
    from fastnips.graph import tikhonov_prop

    n, F = _size((100_000, 16), (20_000, 8), (300, 3))
    benchmark = machine_facts
    benchmark.group = f"tikhonov layer forward+backward gpu float32 n={n} F={F}"
    _L, Ld = _graph(n, seed=2)
    g = torch.Generator(device=DEV).manual_seed(3)
    X0 = torch.randn(n, F, device=DEV, generator=g)
    W = torch.randn(n, F, device=DEV, generator=g)
    q = torch.rand(n, device=DEV, generator=g) + 0.5

    def step(solve):
        X = X0.clone().requires_grad_(True)
        (solve(X) * W).sum().backward()
        return X.grad

    if impl == "torch-cg-unrolled":
        run = _synced(lambda: step(lambda X: torch_cg(Ld, q, q[:, None] * X)[0]))
    else:
        backend = impl.split("-")[1]
        if _backend.why_unavailable(backend):
            pytest.skip(f"backend {backend}: {_backend.why_unavailable(backend)}")
        c = torch.tensor(COEFFS, device=DEV, dtype=torch.float32)
        run = _synced(lambda: step(lambda X: tikhonov_prop(X, q, c, Ld, basis="monomial", backend=backend,
                                                           method="cg", tol=TOL)))
    grad = benchmark(run)
    # dl/dX = Q A^{-1} W (A symmetric): one solve in float64 is the oracle for every row
    ref = q.double()[:, None] * torch_cg(Ld.double(), q.double(), W.double(), tol=1e-10)[0]
    err = ((grad.double() - ref).norm() / ref.norm()).item()
    benchmark.extra_info.update(rel_err=err)
    assert err < 1e-2


@pytest.mark.parametrize("impl", ["fastnips-masked-lora", "materialised-lora"])
def test_masked_lora_step_gpu(machine_facts, impl):
    from torch import nn

    from fastnips.prune import LoRA, MaskedLinear, MaskedLoRALinear

    d, tokens = _size((4096, 4096), (1024, 512), (64, 32))
    benchmark = machine_facts
    benchmark.group = f"masked LoRA step gpu bf16 {d}x{d} r=16 tokens={tokens}"
    torch.manual_seed(0)
    lin = nn.Linear(d, d).to(DEV)
    mask = torch.rand(d, d, device=DEV) >= 0.5
    x = torch.randn(tokens, d, device=DEV)
    dy = torch.randn(tokens, d, device=DEV)
    if impl == "fastnips-masked-lora":
        layer = MaskedLoRALinear(MaskedLinear.from_linear(lin, mask), LoRA(r=16),
                                 generator=torch.Generator().manual_seed(0)).to(DEV)
        params = [layer.lora_A, layer.lora_B]
        fwd = layer
    else:
        W = (lin.weight.detach() * mask).requires_grad_(False)
        A = nn.Parameter(torch.empty(16, d, device=DEV))
        nn.init.kaiming_uniform_(A, a=5 ** 0.5)
        B = nn.Parameter(torch.zeros(d, 16, device=DEV))
        params = [A, B]
        fwd = lambda t: t @ (W + 2.0 * (B @ A).masked_fill(W == 0, 0)).T + lin.bias.detach()
    opt = torch.optim.AdamW(params, lr=1e-4)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(DEV, dtype=torch.bfloat16):
            y = fwd(x)
        y.float().backward(dy)
        opt.step()
        return y.detach().float()

    y = benchmark(_synced(step))
    benchmark.extra_info.update(peak_bytes=_peak())
    assert torch.isfinite(y).all()


@pytest.mark.parametrize("window", ["block", "whole-model"])
def test_reconstruction_memory_gpu(machine_facts, window):
    from fastnips.prune import Blocks, Calibration, TinyConfig, TinyDecoder, magnitude, reconstruct

    cfg = _size(TinyConfig(d_model=576, n_layers=12, d_ff=1536, max_seq=256),
                TinyConfig(d_model=256, n_layers=4, d_ff=704), TinyConfig(d_model=32, n_layers=2, d_ff=64, max_seq=16))
    benchmark = machine_facts
    benchmark.group = f"reconstruction memory gpu (d_model={cfg.d_model}, {cfg.n_layers} layers), one epoch"
    torch.manual_seed(0)
    model = TinyDecoder(cfg)
    tokens = torch.randint(0, cfg.vocab, (_size(64, 32, 4), cfg.max_seq), generator=torch.Generator().manual_seed(1))
    calib = Calibration(tokens)
    masks = magnitude(model, sparsity=0.5, inplace=False)
    win = "block" if window == "block" else Blocks(cfg.n_layers)

    def run():
        m = TinyDecoder(cfg)
        m.load_state_dict(model.state_dict())
        if DEV == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        rep = reconstruct(m, calib, masks, window=win, epochs=1, device=DEV, seed=0)
        _sync()
        return rep, _peak()

    rep, peak = benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(peak_bytes=int(peak))
    assert rep is not None
    assert (peak > 0 or DEV != "cuda")
