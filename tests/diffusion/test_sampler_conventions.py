"""k-diffusion conventions: callbacks, seeds, extra_args, dtypes, no_grad, input untouched, CUDA (issue 6
item 2, issue 14 item 1a)."""

from __future__ import annotations

import pytest
import torch

from fastnips.diffusion import samplers as S
from fastnips.diffusion import schedules as sch

from .sampler_oracles import (
    F64,
    GMM,
    STOCHASTIC,
    GaussianStandIn,
    gauss_model,
    start,
)

# ----------------------------------------------------------------------------------------------- conventions


@pytest.mark.parametrize("name", sorted(S.SAMPLERS))
def test_callback_once_per_step(name):
    x = start(4, 2, 10.0)
    sig = sch.get_sigmas_karras(6, 0.05, 10.0)
    calls = []
    kw = {"driver": GaussianStandIn(x.shape), "gamma": 0.25} if name == "fds" else {}
    if name in ("euler", "heun"):
        kw = {"s_churn": 1.5, "s_tmin": 0.5}
    model = gauss_model(1.0)
    S.SAMPLERS[name](model, x, sig, callback=calls.append, **kw)
    assert [c["i"] for c in calls] == list(range(len(sig) - 1))
    for c in calls:
        assert set(c) == {"x", "i", "sigma", "sigma_hat", "denoised"}
        i = c["i"]
        assert isinstance(c["sigma"], torch.Tensor)
        assert float(c["sigma"]) == float(sig[i])
        assert c["x"].shape == x.shape
        assert c["denoised"].shape == x.shape
        ratio = float(c["sigma_hat"]) / float(c["sigma"])
        if name == "fds":
            assert ratio == pytest.approx(1.25)
        elif name in ("euler", "heun"):
            assert ratio == pytest.approx(1 + 1.5 / 6 if float(sig[i]) >= 0.5 else 1.0)
        elif name == "edm":
            assert ratio >= 1.0
        else:
            assert ratio == 1.0
        torch.testing.assert_close(c["denoised"], model(c["x"], c["sigma_hat"] * x.new_ones(4)))


@pytest.mark.parametrize("name", sorted(STOCHASTIC))
def test_seed_reproducible(name):
    fn, kw = STOCHASTIC[name]
    x = start(8, 3, 20.0)
    sig = sch.get_sigmas_karras(6, 0.05, 20.0)
    model = gauss_model(1.0)
    a, b = fn(model, x, sig, **kw), fn(model, x, sig, **kw)
    assert torch.equal(a, b)
    assert not torch.equal(a, fn(model, x, sig, **dict(kw, seed=kw["seed"] + 1)))


def test_model_calls_and_extra_args():
    x = start(4, 2, 10.0)
    seen = []

    def model(x, sigma, *, cond):
        seen.append(cond)
        assert sigma.shape == (4,)
        assert sigma.dtype == x.dtype
        return 0.5 * x

    sig = sch.get_sigmas_karras(5, 0.1, 10.0)
    S.sample_heun(model, x, sig, extra_args={"cond": 3})
    assert len(seen) == 2 * 5 - 1
    assert set(seen) == {3}
    seen.clear()
    S.sample_heun(model, x, sig[:-1], extra_args={"cond": 3})
    assert len(seen) == 2 * 4                                    # no final 0: every step is a Heun step
    seen.clear()
    S.sample_dpmpp_2m(model, x, sig, extra_args={"cond": 3})
    assert len(seen) == 5


def test_dtype_float32_and_progress_bar():
    x = start(4, 2, 10.0).float()
    sig = sch.get_sigmas_karras(4, 0.1, 10.0)
    for name in sorted(S.SAMPLERS):
        kw = {"driver": GaussianStandIn(x.shape)} if name == "fds" else {}
        out = S.SAMPLERS[name](gauss_model(1.0), x, sig, disable=False, **kw)
        assert out.dtype == torch.float32
        assert out.shape == x.shape


@pytest.mark.parametrize("name", sorted(S.SAMPLERS))
def test_samplers_run_under_no_grad(name):
    """Issue 14 item 1a: as k-diffusion's, every sampler runs under torch.no_grad(): with a model that has
    trainable parameters and an x that requires grad, the model is called with grad disabled, the result has no
    graph, and grad mode is restored afterwards."""
    lin = torch.nn.Linear(2, 2).double()
    modes = []

    def model(x, t):
        modes.append(torch.is_grad_enabled())
        return gauss_model(1.0)(x, t) + 0.0 * lin(x)

    x = start(4, 2, 10.0).requires_grad_(True)
    sig = sch.get_sigmas_karras(4, 0.1, 10.0)
    kw = {"driver": GaussianStandIn(x.shape)} if name == "fds" else {}
    out = S.SAMPLERS[name](model, x, sig, **kw)
    assert modes
    assert not any(modes)
    assert not out.requires_grad
    assert out.grad_fn is None
    assert torch.is_grad_enabled()


def test_input_not_modified(gmm2):
    x = start(16, 2, 80.0)
    x0 = x.clone()
    for name in sorted(S.SAMPLERS):
        kw = {"driver": GaussianStandIn(x.shape)} if name == "fds" else {}
        S.SAMPLERS[name](gmm2, x, sch.edm_sigmas(5), **kw)
    assert torch.equal(x, x0)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu(gmm2):
    x = start(256, 2, 80.0)
    sig = sch.edm_sigmas(10)

    g = GMM(gmm2.mu.cuda(), gmm2.s.cuda(), gmm2.pi.cuda())
    for name in ("euler", "heun", "dpmpp_2m", "ddim"):
        cpu = S.SAMPLERS[name](gmm2, x, sig)
        gpu = S.SAMPLERS[name](g, x.cuda(), sig.cuda())
        assert gpu.device.type == "cuda"
        torch.testing.assert_close(gpu.cpu(), cpu, rtol=1e-10, atol=1e-10)
    drv = GaussianStandIn(x.shape, seed=3)
    cpu = S.sample_fds(gmm2, x, sig, driver=drv, gamma=0.3)
    drv.reset()
    gpu = S.sample_fds(g, x.cuda(), sig, driver=drv, gamma=0.3)
    torch.testing.assert_close(gpu.cpu(), cpu, rtol=1e-10, atol=1e-10)
    for name in ("edm", "euler_ancestral", "dpmpp_2m_sde"):
        out = S.SAMPLERS[name](g, x.cuda(), sig, seed=0)
        assert out.device.type == "cuda"
        assert torch.isfinite(out).all()
    with pytest.raises(ValueError, match="non-finite"):
        S.sample_euler(lambda x, t: x * torch.nan, x.cuda(), sig)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu_new_samplers(gmm2):
    """Issue 14 samplers on CUDA: the deterministic ones equal the CPU run; noise samplers get CUDA tensors."""
    x = start(256, 2, 80.0)
    sig = sch.edm_sigmas(10)
    g = GMM(gmm2.mu.cuda(), gmm2.s.cuda(), gmm2.pi.cuda())
    for name, kw in [("dpm_2", {}), ("lms", {}), ("dpmpp_2s_ancestral", {"eta": 0.0}), ("dpmpp_sde", {"eta": 0.0}),
                     ("dpmpp_3m_sde", {"eta": 0.0})]:
        cpu = S.SAMPLERS[name](gmm2, x, sig, **kw)
        torch.testing.assert_close(S.SAMPLERS[name](g, x.cuda(), sig.cuda(), **kw).cpu(), cpu, rtol=1e-10, atol=1e-10)
    seen = []

    def noise(a, b):
        seen.append((a.device.type, b.dtype))
        return torch.zeros_like(x.cuda())

    S.sample_dpmpp_2m_sde(g, x.cuda(), sig, noise_sampler=noise)
    assert seen
    assert all(dev == "cuda" and dt == F64 for dev, dt in seen)
    for name in ("dpmpp_sde", "dpmpp_3m_sde"):                  # default Brownian tree on the device
        assert torch.isfinite(S.SAMPLERS[name](g, x.cuda(), sig, seed=0)).all()
