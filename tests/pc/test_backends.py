"""The fused CPU path and the Triton kernels (under TRITON_INTERPRET=1 on CPU, small sizes) against the
autograd reference of PC inference, with asserted tolerances; dispatch."""

from __future__ import annotations

import pytest
import torch

from fastnips import _backend
from fastnips.pc import PC_BACKENDS, pc_inference
from fastnips.pc._fused import pc_infer_fused
from fastnips.pc.network import act, dact
from fastnips.pc.reference import pc_infer

from .conftest import make_batch


def _maxdiff(a, b):
    return max(float((s - t).abs().max()) for s, t in zip(a, b))


@pytest.mark.parametrize("activation", ["tanh", "relu", "linear"])
@pytest.mark.parametrize("clamp", ["soft", "hard"])
def test_fused_matches_reference_float64(activation, clamp):
    net, x, y = make_batch([7, 9, 8, 4], activation, B=5, seed=3)
    gamma = None if clamp == "hard" else 0.3
    ref = pc_infer(net, x, y, gamma=gamma, steps=25, lr=0.2)
    fu = pc_infer_fused(net, x, y, gamma=gamma, steps=25, lr=0.2)
    assert ref.iterations == fu.iterations == 25
    assert _maxdiff(ref.states, fu.states) < 1e-12
    assert _maxdiff(ref.errors, fu.errors) < 1e-12
    with torch.no_grad():
        assert _maxdiff(ref.states, net.states(x)) > 1e-3  # inference moved the states


def test_fused_tolerance_stop_matches_reference():
    net, x, y = make_batch([4, 6, 3], "tanh", seed=1)
    ref = pc_infer(net, x, y, gamma=1.0, steps=5000, lr=0.2, tol=1e-9)
    fu = pc_infer_fused(net, x, y, gamma=1.0, steps=5000, lr=0.2, tol=1e-9)
    assert ref.converged
    assert fu.converged
    assert ref.iterations == fu.iterations
    assert _maxdiff(ref.states, fu.states) < 1e-12


def _triton_or_skip():
    why = _backend.why_unavailable("triton")
    if why:
        pytest.skip(f"triton not available: {why}")
    from fastnips.kernels import pc as K

    return K


@pytest.mark.parametrize("activation", ["tanh", "relu", "linear"])
def test_triton_kernels_match_torch(activation):
    K = _triton_or_skip()
    code = {"linear": 0, "tanh": 1, "relu": 2}[activation]
    g = torch.Generator().manual_seed(0)
    prev, W, b = torch.randn(9, 20, generator=g), torch.randn(17, 20, generator=g), torch.randn(17, generator=g)
    x = torch.randn(9, 17, generator=g)
    out = torch.empty_like(x)
    K.pc_errors(prev, W, b, x, out, code)
    torch.testing.assert_close(out, x - (act(prev, activation) @ W.T + b), rtol=1e-5, atol=1e-5)
    K.pc_errors(prev, W, None, x, out, code)
    torch.testing.assert_close(out, x - act(prev, activation) @ W.T, rtol=1e-5, atol=1e-5)
    e, en, Wn = torch.randn(9, 17, generator=g), torch.randn(9, 5, generator=g), torch.randn(5, 17, generator=g)
    expect = x + 0.1 * (dact(x, activation) * (en @ Wn) - e)
    K.pc_update(x, e, en, Wn, 0.1, code)
    torch.testing.assert_close(x, expect, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("clamp", ["soft", "hard"])
def test_triton_inference_matches_reference(clamp):
    _triton_or_skip()
    net, x, y = make_batch([20, 24, 17, 5], "tanh", B=9, dtype=torch.float32, seed=2)
    gamma = None if clamp == "hard" else 0.5
    ref = pc_infer(net, x, y, gamma=gamma, steps=6, lr=0.2)
    tri = pc_infer_fused(net, x, y, gamma=gamma, steps=6, lr=0.2, triton=True)
    assert _maxdiff(ref.states, tri.states) < 1e-4
    assert _maxdiff(ref.errors, tri.errors) < 1e-4


def test_dispatch(pc_backend):
    net, x, y = make_batch([20, 17, 5], "tanh", B=4, dtype=torch.float32, seed=0)
    ref = pc_inference(net, x, y, steps=4, backend="reference")
    got = pc_inference(net, x, y, steps=4, backend=pc_backend)
    assert _maxdiff(ref.states, got.states) < 1e-4


def test_dispatch_refusals():
    net, x, y = make_batch([4, 5, 3], "tanh", seed=0)
    with pytest.raises(ValueError, match="unknown backend"):
        pc_inference(net, x, y, backend="gpu")
    with pytest.raises(ValueError, match="no 'cpp' backend"):
        pc_inference(net, x, y, backend="cpp")
    if "triton" in PC_BACKENDS and not _backend.why_unavailable("triton"):
        with pytest.raises(ValueError, match="float32"):
            pc_inference(net, x, y, backend="triton")  # float64 input
    assert pc_inference(net, x, y, steps=2).iterations == 2  # auto works on CPU tensors


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("impl", ["fused", "triton"])
def test_cuda_paths_match_reference(impl):
    if impl == "triton":
        _triton_or_skip()
    net, x, y = make_batch([64, 128, 128, 10], "tanh", B=64, dtype=torch.float32, seed=4)
    ref = pc_infer(net, x, y, gamma=1.0, steps=20, lr=0.1)
    net, x, y = net.cuda(), x.cuda(), y.cuda()
    got = pc_infer_fused(net, x, y, gamma=1.0, steps=20, lr=0.1, triton=impl == "triton")
    assert _maxdiff(ref.states, [s.cpu() for s in got.states]) < 1e-4
