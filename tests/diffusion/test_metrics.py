"""fastnips.diffusion.metrics: sliced Wasserstein, MMD, mode metrics, NLL, nearest-training distance, noise floors."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fastnips.diffusion import metrics as M  # noqa: E402
from fastnips.diffusion.targets import GMM, KDE  # noqa: E402

F64 = torch.float64


def gauss(n, d, seed, mean=0.0, std=1.0):
    return mean + std * torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=F64)


# ---------------------------------------------------------------------------------------------- sliced Wasserstein


def test_sw_zero_on_itself_and_grows_with_shift():
    a = gauss(500, 4, 0)
    assert M.sliced_wasserstein(a, a) == 0.0
    assert M.sliced_wasserstein(a, a[torch.randperm(500, generator=torch.Generator().manual_seed(1))]) == 0.0
    vals = [M.sliced_wasserstein(a, a + s) for s in (0.25, 0.5, 1.0, 2.0)]
    assert all(v > 0 for v in vals)
    assert vals == sorted(vals)
    # a pure shift c projects to theta.c on every direction: SW_2^2 = mean (theta.c)^2 over the directions
    th = M.random_directions(4, 256, seed=0)
    c = torch.full((4,), 0.5, dtype=F64)
    assert vals[1] == pytest.approx(float(((c @ th) ** 2).mean().sqrt()), rel=1e-12)


def test_sw_invariances():
    a, b = gauss(300, 3, 0), gauss(200, 3, 1, mean=0.3, std=1.5)
    base = M.sliced_wasserstein(a, b, seed=4)
    c = torch.tensor([5.0, -2.0, 1.0], dtype=F64)
    assert M.sliced_wasserstein(a + c, b + c, seed=4) == pytest.approx(base, rel=1e-10)  # common translation
    assert M.sliced_wasserstein(3 * a, 3 * b, seed=4) == pytest.approx(3 * base, rel=1e-10)  # scaling
    assert M.sliced_wasserstein(b, a, seed=4) == pytest.approx(base, rel=1e-12)  # symmetry
    perm = torch.randperm(200, generator=torch.Generator().manual_seed(0))
    assert M.sliced_wasserstein(a, b[perm], seed=4) == pytest.approx(base, rel=1e-12)
    # image batches are flattened
    assert M.sliced_wasserstein(a.reshape(300, 3, 1, 1), b.reshape(200, 3, 1, 1), seed=4) == base
    # numpy in, float32 in
    assert M.sliced_wasserstein(a.numpy(), b.numpy(), seed=4) == pytest.approx(base, rel=1e-12)
    assert M.sliced_wasserstein(a.float(), b.float(), seed=4) == pytest.approx(base, rel=1e-5)


def test_sw_1d_is_exact_for_unequal_sizes():
    from scipy.stats import wasserstein_distance

    rng = np.random.default_rng(0)
    u, v = rng.normal(size=37), rng.exponential(size=23) + 0.2
    one = torch.ones(1, 1, dtype=F64)
    w1 = M.sliced_wasserstein(u[:, None], v[:, None], p=1, directions=one)
    assert w1 == pytest.approx(wasserstein_distance(u, v), rel=1e-12)
    # W2 by brute force: the quantile functions at the midpoints of a grid of n*m cells
    n, m = 37, 23
    lev = (np.arange(n * m) + 0.5) / (n * m)
    qa, qb = np.sort(u)[np.floor(lev * n).astype(int)], np.sort(v)[np.floor(lev * m).astype(int)]
    w2 = M.sliced_wasserstein(u[:, None], v[:, None], p=2, directions=one)
    assert w2 == pytest.approx(math.sqrt(np.mean((qa - qb) ** 2)), rel=1e-12)
    # a set against itself repeated twice is at distance 0
    twice = np.concatenate([u, u])[:, None]
    assert M.sliced_wasserstein(u[:, None], twice, directions=one) == pytest.approx(0, abs=1e-15)


def test_sw_two_gaussians_closed_form():
    # N(m1, s1^2 I) vs N(m2, s2^2 I): each projection is N(theta.m, s^2), W2^2 = (theta.dm)^2 + (s1 - s2)^2
    d, n = 3, 20_000
    m1, m2 = torch.zeros(d, dtype=F64), torch.tensor([1.0, -0.5, 0.25], dtype=F64)
    a, b = gauss(n, d, 0, m1, 0.5), gauss(n, d, 1, m2, 1.0)
    th = M.random_directions(d, 200, seed=0)
    exact = math.sqrt(float((((m2 - m1) @ th) ** 2).mean()) + 0.25)
    assert M.sliced_wasserstein(a, b, directions=th) == pytest.approx(exact, rel=0.01)
    # over uniform directions E[(theta.dm)^2] = |dm|^2 / d: the population SW_2^2 = |dm|^2/d + (s1 - s2)^2
    th = M.random_directions(d, 20_000, seed=1)
    torch.testing.assert_close(th.norm(dim=0), torch.ones(20_000, dtype=F64))
    assert float((((m2 - m1) @ th) ** 2).mean()) == pytest.approx(float((m2 - m1).pow(2).sum()) / d, rel=0.02)


# ---------------------------------------------------------------------------------------------- MMD


def brute_mmd2(a, b, h):
    k = lambda x, y: torch.exp(-torch.cdist(x, y) ** 2 / (2 * h * h))
    n, m = len(a), len(b)
    kaa, kbb = k(a, a), k(b, b)
    return float((kaa.sum() - kaa.diag().sum()) / (n * (n - 1)) + (kbb.sum() - kbb.diag().sum()) / (m * (m - 1))
                 - 2 * k(a, b).mean())


def test_mmd_matches_definition_and_blocks():
    a, b = gauss(70, 3, 0), gauss(50, 3, 1, mean=0.4)
    ref = brute_mmd2(a, b, 1.3)
    assert M.mmd_rbf(a, b, bandwidth=1.3) == pytest.approx(ref, rel=1e-10)
    assert M.mmd_rbf(a, b, bandwidth=1.3, block=16) == pytest.approx(ref, rel=1e-10)
    # the median heuristic: median pairwise distance of the pooled sample
    z = torch.cat([a, b])
    dist = torch.cdist(z, z)
    h = float(dist[torch.triu_indices(120, 120, 1).unbind()].median())
    assert M.mmd_rbf(a, b) == pytest.approx(brute_mmd2(a, b, h), rel=1e-10)


def test_mmd_near_zero_for_same_distribution_and_grows_with_shift():
    a, b = gauss(600, 2, 0), gauss(600, 2, 1)
    same = M.mmd_rbf(a, b, bandwidth=1.0)
    assert abs(same) < 3e-3  # the unbiased estimate is centred on 0
    vals = [M.mmd_rbf(a, b + s, bandwidth=1.0) for s in (0.25, 0.5, 1.0)]
    assert vals[0] > 5 * abs(same)
    assert vals == sorted(vals)
    # invariances: common translation, symmetry, and with the median bandwidth, common scaling
    assert M.mmd_rbf(a + 3, b + 3, bandwidth=1.0) == pytest.approx(same, abs=1e-12)
    assert M.mmd_rbf(b, a, bandwidth=1.0) == pytest.approx(same, abs=1e-15)
    assert M.mmd_rbf(4 * a, 4 * (b + 0.5)) == pytest.approx(M.mmd_rbf(a, b + 0.5), rel=1e-9)


# ---------------------------------------------------------------------------------------------- GMM metrics


def test_mode_tv_exact_on_constructed_assignments():
    ring = GMM.ring2d(4, radius=2.0, std=0.1)  # uniform weights 1/4
    x = ring.means[[0, 0, 1, 2]]  # histogram (1/2, 1/4, 1/4, 0)
    assert M.mode_tv(x, ring) == pytest.approx(0.25, abs=1e-15)
    assert M.mode_tv(ring.means[[0, 0, 0]], ring) == pytest.approx(0.75, abs=1e-15)
    assert M.mode_tv(ring.means[[3, 2, 1, 0]], ring) == pytest.approx(0.0, abs=1e-15)
    torch.testing.assert_close(M.mode_histogram(x, ring), torch.tensor([0.5, 0.25, 0.25, 0.0], dtype=F64))
    w = GMM(ring.means, [0.1, 0.2, 0.3, 0.4], 0.1)
    x = w.means[[0, 1, 1, 2, 2, 2, 3, 3, 3, 3]] + 0.05  # matches the weights exactly
    assert M.mode_tv(x, w) == pytest.approx(0.0, abs=1e-15)


def test_in_mode_frac():
    gmm = GMM.random(32, 6, seed=0)
    exact = gmm.sample(4000, seed=1)
    assert M.in_mode_frac(exact, gmm) == pytest.approx(0.999, abs=0.002)
    assert M.in_mode_frac(gmm.means, gmm) == 1.0
    mid = 0.5 * (gmm.means[:3] + gmm.means[3:])  # half-way between two modes: in no mode
    assert M.in_mode_frac(mid, gmm) == 0.0
    # an absolute radius
    x = gmm.means[:2] + torch.tensor([[0.5] + [0.0] * 31, [1.5] + [0.0] * 31], dtype=F64)
    assert M.in_mode_frac(x, gmm, radius=1.0) == 0.5


def test_nll_is_negative_mean_log_prob_and_entropy_of_one_gaussian():
    gmm = GMM.ring2d()
    x = gmm.sample(100, seed=0, dtype=F64)
    assert M.nll(x, gmm) == pytest.approx(-float(gmm.log_prob(x).mean()), rel=1e-12)
    one = GMM(torch.zeros(1, 5, dtype=F64), stds=0.7)
    entropy = 0.5 * 5 * math.log(2 * math.pi * math.e * 0.49)
    floor = M.noise_floor(M.nll, one, 20_000, seeds=(0, 1))
    assert floor.mean == pytest.approx(entropy, abs=0.03)


def test_nn_train_distance():
    train = gauss(200, 6, 0)
    x = gauss(50, 6, 1)
    ref = float(torch.cdist(x, train).min(1).values.mean())
    assert M.nn_train_distance(x, train) == pytest.approx(ref, rel=1e-12)
    assert M.nn_train_distance(train[:10], train) == 0.0
    kde = KDE(train.reshape(200, 1, 2, 3), 0.05)
    assert M.nn_train_distance(x.reshape(50, 1, 2, 3), kde) == pytest.approx(ref, rel=1e-12)


# ---------------------------------------------------------------------------------------------- noise floors


def test_noise_floor_shrinks_with_n_and_is_reproducible():
    gmm = GMM.grid2d()
    small = M.noise_floor(M.sliced_wasserstein, gmm, 200, seeds=range(4), n_proj=64)
    large = M.noise_floor(M.sliced_wasserstein, gmm, 3200, seeds=range(4), n_proj=64)
    assert large.mean < small.mean / 2  # SW ~ n^(-1/2): a 16x larger n gives about a quarter
    _mean, std = large  # unpacks as (mean, std)
    assert std > 0
    assert len(large.values) == 4
    assert large.n == 3200
    again = M.noise_floor(M.sliced_wasserstein, gmm, 3200, seeds=range(4), n_proj=64)
    assert again.values == large.values
    tv_small = M.noise_floor(M.mode_tv, gmm, 200, seeds=range(4))
    tv_large = M.noise_floor(M.mode_tv, gmm, 3200, seeds=range(4))
    assert tv_large.mean < tv_small.mean / 2
    # a target metric on exact samples: in_mode_frac about its level
    assert M.noise_floor(M.in_mode_frac, gmm, 2000, seeds=(0,)).mean == pytest.approx(0.999, abs=0.002)
    kde = KDE.digits()
    assert M.noise_floor(M.nn_train_distance, kde, 200, seeds=(0, 1)).mean == pytest.approx(0.4, abs=0.02)
    mmd = M.noise_floor(M.mmd_rbf, gmm, 300, seeds=range(3))
    assert abs(mmd.mean) < 3 * mmd.std + 1e-3


# ---------------------------------------------------------------------------------------------- errors


def test_bad_input_raises():
    a = gauss(10, 3, 0)
    gmm = GMM.grid2d()
    for f in (M.sliced_wasserstein, M.mmd_rbf, M.nn_train_distance):
        with pytest.raises(ValueError, match="different dimensions"):
            f(a, gauss(10, 4, 1))
        with pytest.raises(ValueError, match="NaN"):
            f(a, torch.full((5, 3), float("nan")))
        with pytest.raises(ValueError, match="inf"):
            f(torch.full((5, 3), float("inf")), a)
        with pytest.raises(ValueError, match="at least"):
            f(torch.zeros(0, 3), a)
        with pytest.raises(ValueError, match="1-D"):
            f(torch.zeros(10), a)
    with pytest.raises(ValueError, match="at least 2"):
        M.mmd_rbf(a[:1], a)
    with pytest.raises(ValueError, match="bandwidth"):
        M.mmd_rbf(a, a, bandwidth=-1.0)
    with pytest.raises(ValueError, match="bandwidth"):
        M.mmd_rbf(a, a, bandwidth="scott")
    with pytest.raises(ValueError, match="pass bandwidth"):
        M.mmd_rbf(torch.zeros(5, 3), torch.zeros(5, 3))
    with pytest.raises(ValueError, match="p must be"):
        M.sliced_wasserstein(a, a, p=0.5)
    with pytest.raises(ValueError, match="directions"):
        M.sliced_wasserstein(a, a, directions=torch.ones(2, 5))
    for f in (M.mode_tv, M.in_mode_frac, M.nll):
        with pytest.raises(ValueError, match="d=2"):
            f(a, gmm)
        with pytest.raises(TypeError, match="GMM"):
            f(a, a)
        with pytest.raises(ValueError, match="NaN"):
            f(torch.full((4, 2), float("nan")), gmm)
    with pytest.raises(ValueError, match="radius"):
        M.in_mode_frac(gmm.means, gmm, radius=0.0)
    with pytest.raises(ValueError, match="seeds"):
        M.noise_floor(M.mode_tv, gmm, 10, seeds=())
    with pytest.raises(ValueError, match="seeds"):
        M.noise_floor(M.mode_tv, gmm, 10, seeds=(1, 1))
    with pytest.raises(ValueError, match="n must be"):
        M.noise_floor(M.mode_tv, gmm, 1)
    with pytest.raises(TypeError, match="KDE"):
        M.noise_floor(M.nn_train_distance, gmm, 10)
    with pytest.raises(ValueError, match="kind"):
        M.noise_floor(M.mode_tv, gmm, 10, kind="paired")
