"""The samplers against k-diffusion 0.1.1's own code (issue 14 items 1b, 1d), where it is installed.

Every comparison is in float64 on the exact Gaussian-mixture denoiser of sampler_oracles.py, with the schedule
passed to both as a float64 tensor. Stochastic samplers get one noise sampler, a Brownian tree (a deterministic
function of its two noise levels), so both read the same noise; the SDE samplers' default noise is compared
against k-diffusion's ``BrownianTreeNoiseSampler`` with the same seed.
"""

from __future__ import annotations

import pytest
import torch

from fastnips.diffusion import samplers as S
from fastnips.diffusion import schedules as sch
from fastnips.diffusion.brownian import BrownianTreeNoiseSampler

from .kdiffusion_peer import kdiffusion_sampling
from .sampler_oracles import F64, start

TOL = dict(rtol=1e-10, atol=1e-10)


@pytest.fixture(scope="module")
def kd():
    return kdiffusion_sampling()


def _setup(n_steps=10, batch=64):
    x = start(batch, 2, 80.0, seed=5)
    sig = sch.get_sigmas_karras(n_steps, 0.002, 80.0).to(F64)
    return x, sig


def _tree(x, sig, seed=3, backend="torch"):
    pos = sig[sig > 0]
    return BrownianTreeNoiseSampler(x, float(pos.min()), float(pos.max()), seed=seed, backend=backend)


DETERMINISTIC = [
    ("euler", {}), ("heun", {}), ("dpm_2", {}), ("lms", {}), ("lms", {"order": 2}), ("dpmpp_2m", {}),
    ("euler_ancestral", {"eta": 0.0}), ("dpmpp_2s_ancestral", {"eta": 0.0}), ("dpmpp_sde", {"eta": 0.0}),
    ("dpmpp_sde", {"eta": 0.0, "r": 0.3}), ("dpmpp_3m_sde", {"eta": 0.0}), ("dpmpp_2m_sde", {"eta": 0.0}),
]


@pytest.mark.parametrize(("name", "kw"), DETERMINISTIC)
def test_deterministic_samplers_equal_kdiffusion(kd, gmm2, name, kw):
    x, sig = _setup()
    ours = S.SAMPLERS[name](gmm2, x, sig, disable=True, **kw)
    theirs = getattr(kd, f"sample_{name}")(gmm2, x, sig, disable=True, **kw)
    torch.testing.assert_close(ours, theirs, **TOL)


STOCHASTIC = [
    ("euler_ancestral", {}), ("dpm_2_ancestral", {}), ("dpm_2_ancestral", {"eta": 0.5, "s_noise": 1.1}),
    ("dpmpp_2s_ancestral", {}), ("dpmpp_sde", {}), ("dpmpp_sde", {"eta": 0.7, "r": 0.4}),
    ("dpmpp_2m_sde", {}), ("dpmpp_2m_sde", {"solver_type": "heun"}), ("dpmpp_3m_sde", {}),
    ("dpmpp_3m_sde", {"eta": 0.5, "s_noise": 0.9}),
]


@pytest.mark.parametrize(("name", "kw"), STOCHASTIC)
def test_stochastic_samplers_equal_kdiffusion_on_one_noise_path(kd, gmm2, name, kw):
    x, sig = _setup()
    ours = S.SAMPLERS[name](gmm2, x, sig, disable=True, noise_sampler=_tree(x, sig), **kw)
    theirs = getattr(kd, f"sample_{name}")(gmm2, x, sig, disable=True, noise_sampler=_tree(x, sig), **kw)
    torch.testing.assert_close(ours, theirs, **TOL)
    other = S.SAMPLERS[name](gmm2, x, sig, disable=True, noise_sampler=_tree(x, sig, seed=4), **kw)
    assert not torch.allclose(ours, other)


@pytest.mark.parametrize("name", ["euler", "heun", "dpm_2"])
def test_churn_equals_kdiffusion_on_the_global_generator(kd, gmm2, name):
    """With churn on every step, k-diffusion draws torch.randn_like(x) once per step; so does seed=None here."""
    x, sig = _setup(8)
    torch.manual_seed(11)
    ours = S.SAMPLERS[name](gmm2, x, sig, disable=True, s_churn=2.0)
    torch.manual_seed(11)
    theirs = getattr(kd, f"sample_{name}")(gmm2, x, sig, disable=True, s_churn=2.0)
    torch.testing.assert_close(ours, theirs, **TOL)


@pytest.mark.parametrize("name", ["dpmpp_sde", "dpmpp_3m_sde"])
def test_default_brownian_noise_equals_kdiffusion_tree(kd, gmm2, name):
    """The SDE samplers' default noise (seed=s) is k-diffusion's BrownianTreeNoiseSampler(seed=s) on the
    schedule's [min sigma > 0, max sigma], built from float64 levels."""
    pytest.importorskip("torchsde", reason="the k-diffusion path of the Brownian tree is torchsde's")
    x, sig = _setup()
    ours = S.SAMPLERS[name](gmm2, x, sig, disable=True, seed=9)
    pos = sig[sig > 0]
    tree = kd.BrownianTreeNoiseSampler(x, pos.min(), pos.max(), seed=9)
    theirs = getattr(kd, f"sample_{name}")(gmm2, x, sig, disable=True, noise_sampler=tree)
    torch.testing.assert_close(ours, theirs, **TOL)


def test_noise_sampler_gets_sigmas_as_tensors_in_x_dtype(kd, gmm2):
    """Issue 14 item 1b: k-diffusion's BrownianTreeNoiseSampler turns a Python float into a float32 time, so
    passing floats gave a different path (3.4e-2 on this GMM before the fix); tensors in x's dtype keep float64."""
    x, sig = _setup()
    pos = sig[sig > 0]
    seen = []

    def tree_of(seed):
        tree = kd.BrownianTreeNoiseSampler(x, pos.min(), pos.max(), seed=seed)

        def noise(a, b):
            seen.append((type(a), getattr(a, "dtype", None), getattr(b, "dtype", None)))
            return tree(a, b)
        return noise

    for name in ("dpmpp_2m_sde", "euler_ancestral", "dpmpp_3m_sde"):
        seen.clear()
        ours = S.SAMPLERS[name](gmm2, x, sig, disable=True, noise_sampler=tree_of(2))
        assert seen
        assert all(t is torch.Tensor and da == F64 and db == F64 for t, da, db in seen)
        theirs = getattr(kd, f"sample_{name}")(gmm2, x, sig, disable=True, noise_sampler=tree_of(2))
        torch.testing.assert_close(ours, theirs, **TOL)


@pytest.mark.parametrize("seed", [7, [1, 2, 3]])
def test_brownian_tree_torchsde_backend_equals_kdiffusion(kd, seed):
    pytest.importorskip("torchsde", reason="the k-diffusion path of the Brownian tree is torchsde's")
    x = torch.zeros(3, 4, dtype=F64)
    lo, hi = torch.tensor(0.01, dtype=F64), torch.tensor(20.0, dtype=F64)
    ours = BrownianTreeNoiseSampler(x, lo, hi, seed=seed, backend="torchsde")
    theirs = kd.BrownianTreeNoiseSampler(x, lo, hi, seed=seed)
    for a, b in [(20.0, 5.0), (5.0, 0.5), (20.0, 0.01), (0.3, 2.0)]:
        ta, tb = torch.tensor(a, dtype=F64), torch.tensor(b, dtype=F64)
        torch.testing.assert_close(ours(ta, tb), theirs(ta, tb), rtol=0, atol=0)
