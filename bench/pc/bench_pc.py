"""PC inference inner loop: the autograd reference vs the hand-fused torch path (CPU and CUDA) vs the Triton
kernels (CUDA only), on tanh MLPs of the evaluation's shapes, float32, 20 steps, soft clamp gamma = 1.

One benchmark.group per shape; every run checks its final states against the reference's (max abs 1e-4).
No peer runs here: pcx and ngclearn are JAX libraries (not installed beside the pinned torch), so the
reference stands in for "the torch code a user would write" (autograd on the energy).
"""

from __future__ import annotations

import functools

import pytest
import torch

from fastnips import _backend
from fastnips.pc import PCNet
from fastnips.pc._fused import pc_infer_fused
from fastnips.pc.reference import pc_infer

SHAPES = {"digits 64-128-128-10 B=64": ([64, 128, 128, 10], 64),
          "mnist 784-256-256-10 B=128": ([784, 256, 256, 10], 128)}
STEPS, LR, GAMMA = 20, 0.1, 1.0
IMPLS = ["reference", "fused", "fused-cuda", "triton"]


@functools.lru_cache(maxsize=4)
def problem(shape: str, device: str = "cpu"):
    sizes, B = SHAPES[shape]
    net = PCNet(sizes, activation="tanh", seed=0).to(device)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(B, sizes[0], generator=g).to(device)
    y = torch.nn.functional.one_hot(torch.randint(0, sizes[-1], (B,), generator=g), sizes[-1]).float().to(device)
    return net, x, y


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("shape", list(SHAPES))
def test_pc_inference(benchmark, shape, impl):
    torch.set_num_threads(1)
    benchmark.group = f"pc inference {shape}"
    cuda = impl in ("fused-cuda", "triton")
    if cuda and not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    if impl == "triton" and _backend.why_unavailable("triton"):
        pytest.skip(_backend.why_unavailable("triton"))
    net, x, y = problem(shape, "cuda" if cuda else "cpu")
    if impl == "reference":
        run = lambda: pc_infer(net, x, y, gamma=GAMMA, steps=STEPS, lr=LR)
    else:
        run = lambda: pc_infer_fused(net, x, y, gamma=GAMMA, steps=STEPS, lr=LR, triton=impl == "triton")

    def timed():
        out = run()
        if cuda:
            torch.cuda.synchronize()
        return out

    out = benchmark(timed)
    ref = pc_infer(net, x, y, gamma=GAMMA, steps=STEPS, lr=LR)
    assert max(float((a - b).abs().max()) for a, b in zip(out.states, ref.states)) < 1e-4
