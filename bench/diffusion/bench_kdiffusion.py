"""The k-diffusion samplers, ours against k-diffusion 0.1.1's own code in one run (issue 14 item 1d).

Group ``k-diffusion samplers 16x3x32x32``: every sampler both packages have, 10 steps on a float32
16x3x32x32 batch with a cheap model (``D = 0.5 x``: the time is the sampler's own work, the updates and
checks), rows ``<name>-fastnips`` and ``<name>-kdiffusion``. Stochastic samplers get one noise sampler that
replays a bank of pre-drawn tensors in call order (no generator cost in either row). Before timing, every
fastnips row is checked against k-diffusion's output on the same inputs (rtol 1e-5) with a model whose output
depends on x nonlinearly. The ``dpmpp_sde-tree`` rows time the default Brownian-tree noise (ours: seed 0 on the
torchsde backend; k-diffusion: its own tree), checked equal with the same seed.

    OMP_NUM_THREADS=1 pytest bench/diffusion/bench_kdiffusion.py --benchmark-only

Skipped without k-diffusion (``pip install --no-deps k-diffusion torchsde torchdiffeq trampoline``).
"""

from __future__ import annotations

import functools
import importlib.util
import sys
import types

import pytest

torch = pytest.importorskip("torch")

from fastnips.diffusion import samplers as S  # noqa: E402
from fastnips.diffusion.schedules import get_sigmas_karras  # noqa: E402

SHAPE = (16, 3, 32, 32)
STEPS = 10
NAMES = ["euler", "heun", "dpm_2", "lms", "dpmpp_2m", "euler_ancestral", "dpm_2_ancestral", "dpmpp_2s_ancestral",
         "dpmpp_sde", "dpmpp_2m_sde", "dpmpp_3m_sde"]
STOCHASTIC = {"euler_ancestral", "dpm_2_ancestral", "dpmpp_2s_ancestral", "dpmpp_sde", "dpmpp_2m_sde",
              "dpmpp_3m_sde"}


def _kdiffusion():
    if "k_diffusion.sampling" in sys.modules:
        return sys.modules["k_diffusion.sampling"]
    spec = importlib.util.find_spec("k_diffusion")
    if spec is None or importlib.util.find_spec("torchsde") is None:
        pytest.skip("k-diffusion / torchsde not installed")
    if "k_diffusion" not in sys.modules:               # sampling.py alone (the package __init__ needs skimage)
        pkg = types.ModuleType("k_diffusion")
        pkg.__path__ = list(spec.submodule_search_locations)
        pkg.__spec__ = spec
        sys.modules["k_diffusion"] = pkg
        if importlib.util.find_spec("torchvision") is None:
            shim = types.ModuleType("k_diffusion.utils")
            shim.append_dims = lambda x, ndim: x.reshape(*x.shape, *([1] * (ndim - x.ndim)))
            sys.modules["k_diffusion.utils"] = shim
    return importlib.import_module("k_diffusion.sampling")


@functools.lru_cache(maxsize=1)
def _setup():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(SHAPE, generator=g) * 80.0
    bank = [torch.randn(SHAPE, generator=g) for _ in range(2 * STEPS)]
    return x, get_sigmas_karras(STEPS, 0.002, 80.0).float(), bank


def _bank_noise(bank):
    calls = iter(range(10**9))
    return lambda a, b: bank[next(calls) % len(bank)]


def _run(fn, x, sigmas, name, model, bank):
    kw = {"noise_sampler": _bank_noise(bank)} if name in STOCHASTIC else {}
    return fn(model, x, sigmas, disable=True, **kw)


@pytest.mark.parametrize("impl", ["fastnips", "kdiffusion"])
@pytest.mark.parametrize("name", NAMES)
def test_sampler(machine_facts, name, impl):
    benchmark = machine_facts
    kd = _kdiffusion()
    x, sigmas, bank = _setup()
    ours, theirs = S.SAMPLERS[name], getattr(kd, f"sample_{name}")
    nonlin = lambda x, s, **kw: torch.tanh(x / (1 + s[:, None, None, None]))
    torch.testing.assert_close(_run(ours, x, sigmas, name, nonlin, bank), _run(theirs, x, sigmas, name, nonlin, bank),
                               rtol=1e-5, atol=1e-4)
    benchmark.group = "k-diffusion samplers 16x3x32x32"
    fn = ours if impl == "fastnips" else theirs
    lin = lambda x, s, **kw: 0.5 * x
    out = benchmark(lambda: _run(fn, x, sigmas, name, lin, bank))
    assert torch.isfinite(out).all()


@pytest.mark.filterwarnings("ignore:Should have ta>=t0")  # k-diffusion's exp(-log(sigma_min)) < sigma_min in fp32
@pytest.mark.parametrize("impl", ["fastnips", "kdiffusion"])
def test_dpmpp_sde_tree(machine_facts, impl):
    benchmark = machine_facts
    kd = _kdiffusion()
    x, sigmas, _ = _setup()
    lin = lambda x, s, **kw: 0.5 * x
    pos = sigmas[sigmas > 0]

    def theirs():
        return kd.sample_dpmpp_sde(lin, x, sigmas, disable=True,
                                   noise_sampler=kd.BrownianTreeNoiseSampler(x, pos.min(), pos.max(), seed=0))

    ours = lambda: S.sample_dpmpp_sde(lin, x, sigmas, disable=True, seed=0)
    torch.testing.assert_close(ours(), theirs(), rtol=1e-5, atol=1e-4)
    benchmark.group = "k-diffusion samplers 16x3x32x32"
    out = benchmark(ours if impl == "fastnips" else theirs)
    assert torch.isfinite(out).all()
