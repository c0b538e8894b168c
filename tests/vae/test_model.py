"""DirichletVAE: the closed-form ELBO against sampling and torch's own KL, collapse around beta_c after
training, the report and the sweep, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fastnips.vae import DirichletVAE, beta_c, collapse_report, collapse_sweep
from fastnips.vae.reference import dirichlet_kl, marginal_beta_kl


def test_dirichlet_kl_matches_torch_distributions():
    g = torch.Generator().manual_seed(0)
    alpha = torch.rand((20, 4), generator=g, dtype=torch.float64) * 5 + 0.05
    prior = torch.distributions.Dirichlet(torch.full((4,), 0.7, dtype=torch.float64))
    ref = torch.distributions.kl_divergence(torch.distributions.Dirichlet(alpha), prior)
    torch.testing.assert_close(dirichlet_kl(alpha, 0.7), ref, rtol=1e-12, atol=1e-12)
    assert torch.all(marginal_beta_kl(alpha, 0.7) >= -1e-12)
    assert torch.allclose(marginal_beta_kl(torch.full((2, 4), 0.7, dtype=torch.float64), 0.7),
                          torch.zeros(2, 4, dtype=torch.float64), atol=1e-13)


def test_sampled_elbo_equals_closed_form_in_expectation(mixture):
    X, K, a0, s2 = mixture
    m = DirichletVAE(X.shape[1], K, alpha0=a0, sigma2=s2, beta=0.7, seed=2)
    with torch.no_grad():  # random weights so that the covariance term matters
        m.decoder.weight.mul_(20.0)
        m.encoder[-1].weight.mul_(10.0)
    x = X[:8]
    closed = m.negative_elbo(x, method="closed").detach()
    g = torch.Generator().manual_seed(0)
    runs = torch.stack([m.negative_elbo(x, method="sample", n_samples=500, generator=g).detach() for _ in range(40)])
    se = runs.std(0) / np.sqrt(runs.shape[0])
    assert torch.all((runs.mean(0) - closed).abs() < 5 * se + 1e-12)
    assert torch.all(se > 0)  # the samples vary: the comparison is not vacuous


def test_sampled_gradient_is_reparameterised(mixture):
    X, K, a0, s2 = mixture
    m = DirichletVAE(X.shape[1], K, alpha0=a0, sigma2=s2, beta=0.0, seed=0)
    m.negative_elbo(X[:16], method="sample", generator=torch.Generator().manual_seed(0)).mean().backward()
    assert float(m.encoder[-1].weight.grad.abs().sum()) > 0  # the gradient reaches the encoder through z


@pytest.mark.parametrize("seed", [0, 1])
def test_trained_kl_vanishes_above_and_not_below_beta_c(mixture, seed):
    X, K, a0, s2 = mixture
    bc = beta_c(X, K, a0, s2)
    kl = {}
    for r in (0.5, 0.9, 1.05, 1.5):
        m = DirichletVAE(X.shape[1], K, alpha0=a0, sigma2=s2, beta=r * bc, seed=seed).fit(X, steps=500)
        kl[r] = float(m.kl(X).mean().detach())
    assert kl[1.05] < 1e-6
    assert kl[1.5] < 1e-6
    assert kl[0.9] > 1e-2
    assert kl[0.5] > kl[0.9]


def test_collapse_report_and_sweep(mixture):
    X, K, a0, s2 = mixture
    bc = beta_c(X, K, a0, s2)
    alive = collapse_report(DirichletVAE(X.shape[1], K, alpha0=a0, sigma2=s2, beta=0.5 * bc).fit(X, steps=300), X)
    dead = collapse_report(DirichletVAE(X.shape[1], K, alpha0=a0, sigma2=s2, beta=1.2 * bc).fit(X, steps=300), X)
    assert alive.agrees
    assert dead.agrees
    assert not alive.predicted_collapsed
    assert dead.predicted_collapsed
    assert alive.ratio == pytest.approx(0.5)
    assert alive.beta_c == pytest.approx(bc)
    assert alive.kl_per_latent.max() > 1e-2
    assert dead.kl_per_latent.max() < 1e-6
    assert alive.activity.max() > 1e-3
    assert dead.activity.max() < 1e-8
    assert "collapsed" in str(dead)
    sweep = collapse_sweep(X, K, alpha0=a0, sigma2=s2, ratios=[0.8, 0.95, 1.05, 1.2], steps=300)
    assert sweep.onset == pytest.approx(1.05)
    assert sweep.kl.shape == (4, 1)


def _sampled_loss(m, X):
    with torch.no_grad():
        return float(m.negative_elbo(X, method="sample", n_samples=8, generator=torch.Generator().manual_seed(0))
                     .mean())


def test_deep_decoder_trains_with_sampled_elbo_and_refuses_closed(mixture):
    X, K, a0, s2 = mixture
    m = DirichletVAE(X.shape[1], K, alpha0=a0, sigma2=s2, beta=0.3, decoder="deep", hidden=(16,))
    with pytest.raises(ValueError, match="closed"):
        m.negative_elbo(X, method="closed")
    before = _sampled_loss(m, X)
    m.fit(X[:200], steps=60, method="sample", lr=3e-2, seed=0)
    after = _sampled_loss(m, X)
    assert after < before
    twin = DirichletVAE(X.shape[1], K, alpha0=a0, sigma2=s2, beta=0.3, decoder="deep", hidden=(16,))
    twin.fit(X[:200], steps=60, method="sample", lr=3e-2, seed=0)
    for p, q in zip(m.parameters(), twin.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)  # the seed reproduces


@pytest.mark.parametrize(("kw", "match"), [
    ({"K": 1}, "K"), ({"alpha0": 0.0}, "alpha0"), ({"sigma2": -1.0}, "sigma2"), ({"beta": -0.1}, "beta"),
    ({"decoder": "conv"}, "decoder"), ({"encoder": "relu"}, "encoder"), ({"n_features": 0}, "n_features"),
])
def test_bad_construction(kw, match):
    args = {"n_features": 5, "K": 3} | kw
    with pytest.raises(ValueError, match=match):
        DirichletVAE(args.pop("n_features"), args.pop("K"), **args)


def test_bad_calls(mixture):
    X, K, a0, s2 = mixture
    m = DirichletVAE(X.shape[1], K, alpha0=a0, sigma2=s2)
    with pytest.raises(ValueError, match=r"shape \(N, 5\)"):
        m.negative_elbo(X[:, :3])
    with pytest.raises(ValueError, match="method"):
        m.negative_elbo(X, method="mc")
    with pytest.raises(ValueError, match="n_samples"):
        m.negative_elbo(X, method="sample", n_samples=0)
    with pytest.raises(ValueError, match="steps"):
        m.fit(X, steps=0)
    with pytest.raises(ValueError, match="NaN"):
        m.fit(np.full((4, 5), np.nan))
    with pytest.raises(ValueError, match="NaN"):
        m.kl(torch.full((4, 5), float("inf"), dtype=torch.float64))
    with pytest.raises(TypeError, match="DirichletVAE"):
        collapse_report(torch.nn.Linear(2, 2), X)
    with pytest.raises(ValueError, match="ratios"):
        collapse_sweep(X, K, ratios=[1.0, 0.5])
