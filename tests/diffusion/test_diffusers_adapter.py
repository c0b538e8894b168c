"""The eps / v wrappers and the diffusers scheduler adapter (issue 14 item 1e).

The wrappers are checked against their formulas and against k-diffusion's ``external`` module (skipped without
k-diffusion); the adapter against the samplers called directly on the wrapped network, on a small randomly
initialised diffusers ``UNet2DModel`` (skipped without diffusers), and its Euler run against diffusers' own
``EulerDiscreteScheduler``.
"""

from __future__ import annotations

import importlib

import pytest
import torch

from fastnips.diffusion import samplers as S
from fastnips.diffusion.diffusers_adapter import FastnipsScheduler, make_betas
from fastnips.diffusion.wrappers import DiscreteSchedule, EpsDenoiser, VDenoiser, model_input, to_denoised

from .kdiffusion_peer import kdiffusion_sampling

F64 = torch.float64


def _alphas(n=1000):
    return torch.cumprod(1 - make_betas(n, 1e-4, 0.02, "linear"), 0)


# ----------------------------------------------------------------------------------------------- wrappers


def test_eps_and_v_wrappers_recover_x0_from_exact_predictions():
    """With the exact eps / v of a known (x0, eps), both wrappers return x0."""
    a = _alphas()
    gen = torch.Generator().manual_seed(0)
    x0, eps = torch.randn(4, 3, generator=gen, dtype=F64), torch.randn(4, 3, generator=gen, dtype=F64)
    sched = DiscreteSchedule(a)
    for t_idx in (0, 10, 500, 999):
        sigma = sched.sigmas[t_idx].expand(4)
        x = x0 + sigma[:, None] * eps
        ab = a[t_idx]
        v = ab.sqrt() * eps - (1 - ab).sqrt() * x0
        seen = []

        def net(kind, t_idx=t_idx, ab=ab, seen=seen, v=v):
            def f(xt, t):
                seen.append(t)
                torch.testing.assert_close(xt, ab.sqrt() * x0 + (1 - ab).sqrt() * eps, rtol=1e-10, atol=1e-10)
                return eps if kind == "eps" else v
            return f

        torch.testing.assert_close(EpsDenoiser(net("eps"), a)(x, sigma), x0, rtol=1e-9, atol=1e-9)
        torch.testing.assert_close(VDenoiser(net("v"), a)(x, sigma), x0, rtol=1e-9, atol=1e-9)
        torch.testing.assert_close(seen[0], torch.full((4,), float(t_idx), dtype=F64), rtol=0, atol=1e-9)


def test_discrete_schedule_round_trip_and_quantize():
    sched = DiscreteSchedule(_alphas())
    t = torch.tensor([0.0, 0.25, 17.5, 998.9, 999.0], dtype=F64)
    torch.testing.assert_close(sched.sigma_to_t(sched.t_to_sigma(t)), t, rtol=0, atol=1e-9)
    q = DiscreteSchedule(_alphas(), quantize=True)
    assert q.sigma_to_t(sched.t_to_sigma(torch.tensor([17.4], dtype=F64))).item() == 17.0
    with pytest.raises(ValueError, match="decreasing"):
        DiscreteSchedule(torch.tensor([0.5, 0.6]))
    with pytest.raises(ValueError, match="prediction_type"):
        to_denoised(torch.zeros(1), torch.zeros(1), torch.ones(1), "noise")


def test_wrappers_equal_kdiffusion_external():
    sampling = kdiffusion_sampling()
    external = importlib.import_module("k_diffusion.external")
    a = _alphas()
    w = torch.randn(3, 3, generator=torch.Generator().manual_seed(1), dtype=F64)

    def net(xt, t):
        return torch.tanh(xt @ w) * (1 + t[:, None] / 1000)

    x = torch.randn(5, 3, generator=torch.Generator().manual_seed(2), dtype=F64) * 3
    sigma = torch.tensor([0.05, 0.5, 2.0, 14.0, 60.0], dtype=F64)
    assert sampling is not None
    for quantize in (False, True):
        torch.testing.assert_close(EpsDenoiser(net, a, quantize)(x, sigma),
                                   external.DiscreteEpsDDPMDenoiser(net, a, quantize)(x, sigma), rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(VDenoiser(net, a, quantize)(x, sigma),
                                   external.DiscreteVDDPMDenoiser(net, a, quantize)(x, sigma), rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------------------------- the adapter


@pytest.fixture(scope="module")
def unet():
    diffusers = pytest.importorskip("diffusers", reason="diffusers is not installed (pip install diffusers)")
    torch.manual_seed(0)
    net = diffusers.UNet2DModel(sample_size=8, in_channels=1, out_channels=1, layers_per_block=1,
                                block_out_channels=(8, 16), down_block_types=("DownBlock2D", "DownBlock2D"),
                                up_block_types=("UpBlock2D", "UpBlock2D"), norm_num_groups=4).eval()
    for p in net.parameters():                  # random weights large enough that the output depends on them
        p.data.normal_(0, 0.2, generator=torch.Generator().manual_seed(p.numel()))
    return net


def _pipeline(unet, scheduler, x_T, steps):
    """The denoising loop of a diffusers pipeline (StableDiffusion-style)."""
    scheduler.set_timesteps(steps)
    latents = x_T * scheduler.init_noise_sigma
    with torch.no_grad():
        for t in scheduler.timesteps:
            inp = scheduler.scale_model_input(latents, t)
            out = unet(inp, t).sample
            latents = scheduler.step(out, t, latents).prev_sample
    return latents


CASES = [("euler", {}), ("heun", {}), ("dpmpp_2m", {}), ("dpm_2", {}), ("lms", {}),
         ("euler_ancestral", {"seed": 3}), ("dpmpp_sde", {"seed": 3}), ("dpmpp_3m_sde", {"seed": 3}),
         ("edm", {"seed": 3, "s_churn": 2.0}), ("fds", {"seed": 3}), ("fds", {"seed": 3, "driver": "gaussian"})]


@pytest.mark.parametrize(("name", "kw", "prediction_type"),
                         [(n, k, "epsilon") for n, k in CASES] + [(n, k, "v_prediction") for n, k in CASES[1:10:4]])
def test_adapter_equals_the_sampler_on_the_wrapped_unet(unet, name, kw, prediction_type):
    torch.set_num_threads(1)
    sch = FastnipsScheduler(name, num_train_timesteps=1000, prediction_type=prediction_type, sampler_kwargs=kw)
    x_T = torch.randn(2, 1, 8, 8, generator=torch.Generator().manual_seed(4))
    out = _pipeline(unet, sch, x_T, 6)
    wrap = (EpsDenoiser if prediction_type == "epsilon" else VDenoiser)(unet, sch.alphas_cumprod)
    ref = S.SAMPLERS[name](wrap, x_T * sch.init_noise_sigma, sch.sigmas.float(), disable=True, **kw)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)
    assert float((out - x_T * sch.init_noise_sigma).abs().max()) > 1.0          # it did sample


@pytest.mark.filterwarnings("ignore::DeprecationWarning")     # diffusers' own np.array(tensor) under numpy 2
def test_adapter_euler_equals_diffusers_euler_scheduler(unet):
    diffusers = pytest.importorskip("diffusers", reason="diffusers is not installed")
    theirs = diffusers.EulerDiscreteScheduler(num_train_timesteps=1000, beta_start=1e-4, beta_end=0.02,
                                              beta_schedule="linear", use_karras_sigmas=True)
    ours = FastnipsScheduler.from_config(theirs.config, "euler")
    x_T = torch.randn(2, 1, 8, 8, generator=torch.Generator().manual_seed(5))
    a, b = _pipeline(unet, ours, x_T, 8), _pipeline(unet, theirs, x_T, 8)
    torch.testing.assert_close(ours.timesteps, theirs.timesteps.float(), rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


def test_adapter_errors_and_restart():
    sch = FastnipsScheduler("heun", num_train_timesteps=50)
    with pytest.raises(RuntimeError, match="set_timesteps"):
        sch.scale_model_input(torch.zeros(1, 2), 0)
    sch.set_timesteps(3)
    with pytest.raises(RuntimeError, match="scale_model_input"):
        sch.step(torch.zeros(1, 2), sch.timesteps[0], torch.zeros(1, 2))
    x = torch.ones(1, 2) * sch.init_noise_sigma
    sch.step(torch.zeros(1, 2), sch.timesteps[0], sch.scale_model_input(x, sch.timesteps[0]))
    sch.set_timesteps(3)                                 # abandons the half-done run and starts over
    for t in sch.timesteps:
        x = sch.step(torch.zeros(1, 2), t, sch.scale_model_input(x, t)).prev_sample
    with pytest.raises(RuntimeError, match="complete"):
        sch.scale_model_input(x, 0)
    for bad, match in [({"sampler": "nope"}, "unknown sampler"), ({"prediction_type": "x"}, "prediction_type"),
                       ({"sigma_schedule": "cosine"}, "sigma_schedule"), ({"beta_schedule": "x"}, "beta_schedule")]:
        args = {"sampler": "euler"} | bad
        with pytest.raises(ValueError, match=match):
            FastnipsScheduler(args.pop("sampler"), **args)
    with pytest.raises(ValueError, match="num_inference_steps"):
        sch.set_timesteps(0)
    with pytest.raises(ValueError, match=r"sampler_kwargs \['etaa'\]"):
        FastnipsScheduler("euler_ancestral", sampler_kwargs={"etaa": 1.0})
    sch.set_timesteps(2)
    x = torch.ones(1, 2) * sch.init_noise_sigma
    sch.scale_model_input(x, sch.timesteps[0])
    with pytest.raises(ValueError, match="model_output"):
        sch.step(torch.zeros(3), sch.timesteps[0], x)


def test_model_errors_surface_in_the_pipeline_thread():
    sch = FastnipsScheduler("euler", num_train_timesteps=50)
    sch.set_timesteps(3)
    x = torch.ones(1, 2) * sch.init_noise_sigma
    t = sch.timesteps[0]
    inp = sch.scale_model_input(x, t)
    with pytest.raises(ValueError, match="non-finite"):
        sch.step(torch.full_like(inp, float("nan")), t, x)
    assert torch.equal(model_input(torch.ones(1, 1), torch.zeros(1)), torch.ones(1, 1))
