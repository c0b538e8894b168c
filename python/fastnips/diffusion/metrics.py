r"""Sample-quality metrics for samplers run on exact-score targets, and their exact-vs-exact noise floors.

Two-sample metrics (compare generated samples with exact ones):

* :func:`sliced_wasserstein` -- :math:`SW_p(a, b) = \big(\frac1L\sum_{l=1}^L W_p^p(\theta_l^\top a,
  \theta_l^\top b)\big)^{1/p}` with L directions uniform on the sphere, each 1-D distance exact (sorting).
* :func:`mmd_rbf` -- the unbiased estimate of the squared maximum mean discrepancy with a Gaussian kernel.

Metrics against the target (need no second sample set):

* :func:`mode_tv`, :func:`in_mode_frac`, :func:`nll` for a :class:`~fastnips.diffusion.targets.GMM`;
* :func:`nn_train_distance` for a :class:`~fastnips.diffusion.targets.KDE` (or any training set).

A metric is only readable against its floor: :func:`noise_floor` evaluates it on independent exact sample sets
of the same size (for a two-sample metric, between two exact sets; for a target metric, on one exact set), over
several seeds, and returns the mean and standard deviation.

Every function accepts torch tensors or numpy arrays of shape (n, d) or image batches (n, C, H, W) (flattened to
(n, d)), works on the inputs' device, and raises ``ValueError`` on empty sets, dimension mismatches and NaN/inf.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import torch

from .targets import GMM, KDE

__all__ = [
    "NoiseFloor",
    "in_mode_frac",
    "mmd_rbf",
    "mode_histogram",
    "mode_tv",
    "nll",
    "nn_train_distance",
    "noise_floor",
    "random_directions",
    "sliced_wasserstein",
]


def _flat(a, name: str, *, min_n: int = 1) -> torch.Tensor:
    if not isinstance(a, torch.Tensor):
        a = torch.as_tensor(np.asarray(a))
    if not a.is_floating_point():
        if a.dtype == torch.bool or a.is_complex():
            raise TypeError(f"{name} must be real-valued, got {a.dtype}")
        a = a.to(torch.float64)
    if a.ndim == 1:
        raise ValueError(f"{name} must be a batch of shape (n, d) or (n, C, H, W), got a 1-D tensor of shape "
                         f"{tuple(a.shape)} (use x[:, None] for 1-D samples)")
    if a.ndim == 0 or a.shape[0] < min_n:
        raise ValueError(f"{name} needs at least {min_n} sample(s), got shape {tuple(a.shape)}")
    a = a.reshape(a.shape[0], -1)
    if a.shape[1] == 0:
        raise ValueError(f"{name} has zero features per sample")
    if not bool(torch.isfinite(a).all()):
        raise ValueError(f"{name} contains NaN or inf")
    return a if a.dtype == torch.float64 else a.to(torch.float32)


def _pair(a, b, name: str, *, min_n: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    a = _flat(a, f"{name}: a", min_n=min_n)
    b = _flat(b, f"{name}: b", min_n=min_n)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"{name}: a and b have different dimensions ({a.shape[1]} vs {b.shape[1]})")
    dt = torch.promote_types(a.dtype, b.dtype)
    return a.to(dt), b.to(device=a.device, dtype=dt)


def random_directions(d: int, n_proj: int, seed: int = 0) -> torch.Tensor:
    """``n_proj`` directions uniform on the unit sphere of R^d, (d, n_proj) float64 on the CPU (normalised Gaussians
    from a ``torch.Generator`` seeded with ``seed``: the same directions on every device)."""
    if int(d) < 1 or int(n_proj) < 1:
        raise ValueError("random_directions: d and n_proj must be >= 1")
    g = torch.Generator().manual_seed(int(seed))
    th = torch.randn(int(d), int(n_proj), generator=g, dtype=torch.float64)
    return th / th.norm(dim=0, keepdim=True)


def _w_pp_1d(pa: torch.Tensor, pb: torch.Tensor, p: float) -> torch.Tensor:
    r""":math:`W_p^p` between the empirical measures of the columns of ``pa`` (n, L) and ``pb`` (m, L): exact.

    The quantile functions are step functions with jumps at multiples of 1/n and 1/m; on the common refinement
    (breakpoints :math:`u/(nm)`, u integer) both are constant, so :math:`W_p^p = \sum (\Delta u / nm)\,
    |F_a^{-1} - F_b^{-1}|^p` exactly.
    """
    n, m = pa.shape[0], pb.shape[0]
    # sort along contiguous rows: (L, n)
    sa = pa.T.contiguous().sort(1).values.to(torch.float64).T
    sb = pb.T.contiguous().sort(1).values.to(torch.float64).T
    if n == m:
        return (sa - sb).abs().pow(p).mean(0)
    dev = pa.device
    u = torch.cat([torch.arange(1, n + 1, device=dev) * m, torch.arange(1, m + 1, device=dev) * n]).unique()  # sorted
    du = torch.diff(u, prepend=u.new_zeros(1)).to(torch.float64) / (n * m)
    ia = torch.div(u + m - 1, m, rounding_mode="floor") - 1  # ceil(u/m) - 1: the a-quantile on (u_prev, u]
    ib = torch.div(u + n - 1, n, rounding_mode="floor") - 1
    return (du[:, None] * (sa[ia] - sb[ib]).abs().pow(p)).sum(0)


def sliced_wasserstein(a, b, *, n_proj: int = 256, p: float = 2, seed: int = 0, directions=None) -> float:
    r"""Sliced Wasserstein distance :math:`SW_p(a, b) = \big(\frac1L\sum_l W_p^p(\theta_l^\top a,
    \theta_l^\top b)\big)^{1/p}`.

    Each 1-D :math:`W_p` between the projected empirical measures is computed exactly by sorting (for equal
    sizes, :math:`W_p^p = \frac1n\sum_i |a_{(i)} - b_{(i)}|^p`; for unequal sizes, on the common refinement of
    the two quantile grids). The directions are uniform on the sphere, the same for a given (d, n_proj, seed);
    the Monte Carlo error over directions shrinks as :math:`L^{-1/2}`.

    For two Gaussians :math:`\mathcal N(m_1, s_1^2 I)`, :math:`\mathcal N(m_2, s_2^2 I)` in d dimensions the
    population value is :math:`SW_2^2 = \|m_1 - m_2\|^2/d + (s_1 - s_2)^2` (each projection is a 1-D Gaussian).

    Parameters
    ----------
    a : (n, d) or (n, C, H, W)
    b : (m, d) or (m, C, H, W), same d
    n_proj : int
        Number of directions L.
    p : float >= 1
        Order (2 by default; 1 gives SW_1, whose 1-D terms equal ``scipy.stats.wasserstein_distance``).
    seed : int
        Seed of the directions (:func:`random_directions`).
    directions : (d, L) tensor, optional
        Explicit unit directions (overrides ``n_proj`` and ``seed``).

    Returns
    -------
    float

    References
    ----------
    Rabin, Peyré, Delon, Bernot, "Wasserstein barycenter and its application to texture mixing", SSVM 2011;
    Bonneel, Rabin, Peyré, Pfister, "Sliced and Radon Wasserstein barycenters of measures", JMIV 2015.
    """
    a, b = _pair(a, b, "sliced_wasserstein")
    if not (math.isfinite(p) and p >= 1):
        raise ValueError(f"sliced_wasserstein: p must be >= 1, got {p!r}")
    d = a.shape[1]
    if directions is None:
        th = random_directions(d, n_proj, seed)
    else:
        th = torch.as_tensor(directions, dtype=torch.float64)
        if th.ndim != 2 or th.shape[0] != d:
            raise ValueError(f"sliced_wasserstein: directions must have shape ({d}, L), got {tuple(th.shape)}")
    th = th.to(device=a.device, dtype=a.dtype)
    wpp = _w_pp_1d(a @ th, b @ th, float(p))
    return float(wpp.mean() ** (1.0 / p))


def _median_bandwidth(a: torch.Tensor, b: torch.Tensor, max_points: int = 2048) -> float:
    z = torch.cat([a, b])
    if z.shape[0] > max_points:  # deterministic, evenly spaced subsample of the pooled set
        z = z[torch.linspace(0, z.shape[0] - 1, max_points, device=z.device).round().long()]
    dist = torch.cdist(z.to(torch.float64), z.to(torch.float64))
    iu = torch.triu_indices(z.shape[0], z.shape[0], 1, device=z.device)
    med = float(dist[iu[0], iu[1]].median())
    if med <= 0:
        raise ValueError("mmd_rbf: the median pairwise distance is 0 (too many identical points); "
                         "pass bandwidth explicitly")
    return med


def _kernel_sum(x: torch.Tensor, y: torch.Tensor, gamma: float, block: int, same: bool) -> float:
    """sum_{i,j} k(x_i, y_j), without the diagonal i = j when ``same`` (x is y)."""
    total = 0.0
    sq_x, sq_y = (x * x).sum(1), (y * y).sum(1)
    for i in range(0, x.shape[0], block):
        xi = x[i:i + block]
        for j in range(0, y.shape[0], block):
            d2 = (sq_x[i:i + block, None] + sq_y[None, j:j + block] - 2.0 * (xi @ y[j:j + block].T)).clamp_min_(0.0)
            k = torch.exp(-gamma * d2)
            if same and i == j:
                k.fill_diagonal_(0.0)
            total += float(k.to(torch.float64).sum())
    return total


def mmd_rbf(a, b, *, bandwidth="median", block: int = 2048) -> float:
    r"""Unbiased estimate of :math:`\mathrm{MMD}^2(P, Q)` with the Gaussian kernel
    :math:`k(x, y) = \exp(-\|x-y\|^2 / (2h^2))`:

    .. math::

        \widehat{\mathrm{MMD}}^2_u = \frac{1}{n(n-1)}\sum_{i\ne j} k(a_i, a_j)
        + \frac{1}{m(m-1)}\sum_{i\ne j} k(b_i, b_j) - \frac{2}{nm}\sum_{i,j} k(a_i, b_j).

    Its expectation is the population :math:`\mathrm{MMD}^2`, so it is about 0 (and may be slightly negative)
    when P = Q. The kernel sums are accumulated in blocks of ``block`` x ``block`` (memory bounded).

    Parameters
    ----------
    a : (n, d) or (n, C, H, W), n >= 2
    b : (m, d) or (m, C, H, W), m >= 2, same d
    bandwidth : "median" or float > 0
        h. ``"median"``: the median pairwise distance of the pooled sample (of an evenly spaced subsample of
        at most 2,048 points when larger), the median heuristic of Gretton et al.

    Returns
    -------
    float

    References
    ----------
    Gretton, Borgwardt, Rasch, Schölkopf, Smola, "A kernel two-sample test", JMLR 2012 (eq. 3 and §8).
    """
    a, b = _pair(a, b, "mmd_rbf", min_n=2)
    if isinstance(bandwidth, str):
        if bandwidth != "median":
            raise ValueError(f"mmd_rbf: bandwidth must be 'median' or a positive number, got {bandwidth!r}")
        h = _median_bandwidth(a, b)
    else:
        h = float(bandwidth)
        if not (math.isfinite(h) and h > 0):
            raise ValueError(f"mmd_rbf: bandwidth must be > 0, got {bandwidth!r}")
    gamma = 1.0 / (2.0 * h * h)
    n, m = a.shape[0], b.shape[0]
    kaa = _kernel_sum(a, a, gamma, block, True) / (n * (n - 1))
    kbb = _kernel_sum(b, b, gamma, block, True) / (m * (m - 1))
    kab = _kernel_sum(a, b, gamma, block, False) / (n * m)
    return kaa + kbb - 2.0 * kab


def _check_gmm(gmm, name: str) -> GMM:
    if not isinstance(gmm, GMM):
        raise TypeError(f"{name}: expected a fastnips.diffusion.targets.GMM (or KDE), got {type(gmm).__name__}")
    return gmm


def _x_for(x, gmm: GMM, name: str) -> torch.Tensor:
    xf = _flat(x, f"{name}: x")
    if xf.shape[1] != gmm.d:
        raise ValueError(f"{name}: samples have {xf.shape[1]} features, the target has d={gmm.d}")
    return xf


def mode_histogram(x, gmm: GMM) -> torch.Tensor:
    """Fraction of the samples assigned (by :meth:`GMM.assign`) to each component, (K,) float64."""
    gmm = _check_gmm(gmm, "mode_histogram")
    xf = _x_for(x, gmm, "mode_histogram")
    lab = gmm.assign(xf)
    return torch.bincount(lab.cpu(), minlength=gmm.k).to(torch.float64) / xf.shape[0]


def mode_tv(x, gmm: GMM) -> float:
    r"""Total variation between the samples' mode histogram and the mixture weights,
    :math:`\tfrac12\sum_k |\hat h_k - \pi_k|` in [0, 1), with :math:`\hat h_k` the fraction of samples whose most
    responsible component (at :math:`\sigma = 0`, :meth:`GMM.assign`) is k.

    Parameters
    ----------
    x : (n, d) or (n, *shape)
    gmm : GMM
    """
    h = mode_histogram(x, gmm)
    return float(0.5 * (h - gmm.weights).abs().sum())


def in_mode_frac(x, gmm: GMM, radius=None, *, level: float = 0.999) -> float:
    r"""Fraction of samples within ``radius`` of the mean of their assigned component.

    With ``radius=None`` the radius of component k is :math:`s_k\sqrt{\chi^2_{d}(\text{level})}` (the
    ``level`` quantile of :math:`\|x - \mu_k\|` for exact samples of that component), so exact samples score
    ``level`` (0.999) in every dimension. A float gives one absolute radius for all components.

    Parameters
    ----------
    x : (n, d) or (n, *shape)
    gmm : GMM
    radius : float > 0 or None
    level : float in (0, 1)
    """
    gmm = _check_gmm(gmm, "in_mode_frac")
    xf = _x_for(x, gmm, "in_mode_frac")
    lab = gmm.assign(xf)
    mu = gmm.means.to(device=xf.device, dtype=xf.dtype)[lab]
    dist = (xf - mu).norm(dim=1)
    if radius is None:
        if not 0.0 < level < 1.0:
            raise ValueError(f"in_mode_frac: level must lie in (0, 1), got {level!r}")
        from scipy.stats import chi2

        r = gmm.stds.to(device=xf.device, dtype=xf.dtype)[lab] * math.sqrt(float(chi2.ppf(level, gmm.d)))
    else:
        r = float(radius)
        if not (math.isfinite(r) and r > 0):
            raise ValueError(f"in_mode_frac: radius must be > 0, got {radius!r}")
    return float((dist <= r).to(torch.float64).mean())


def nll(x, gmm: GMM) -> float:
    r"""Mean negative log-likelihood :math:`-\frac1n\sum_i \log p_0(x_i)` under the target (nats per sample;
    divide by d for nats per dimension). Exact samples score the entropy of :math:`p_0` on average."""
    gmm = _check_gmm(gmm, "nll")
    xf = _x_for(x, gmm, "nll")
    return float(-gmm.log_prob(xf).to(torch.float64).mean())


def nn_train_distance(x, train) -> float:
    r"""Mean Euclidean distance from each sample to its nearest training point,
    :math:`\frac1n\sum_i \min_j \|x_i - y_j\|`.

    Small values mean memorisation (for a KDE target, exact samples sit :math:`\approx s\sqrt d` from their
    training image); a blurry or off-manifold sampler scores more.

    Parameters
    ----------
    x : (n, d) or (n, *shape)
    train : (m, d) or (m, *shape) array/tensor, or a :class:`~fastnips.diffusion.targets.KDE`
    """
    if isinstance(train, KDE):
        xf = _x_for(x, train, "nn_train_distance")
        return float(train.nearest_train_distance(xf).to(torch.float64).mean())
    xf, tf = _pair(x, train, "nn_train_distance")
    block = max(1, (1 << 22) // tf.shape[0])
    sq_t = (tf * tf).sum(1)
    out = []
    for i in range(0, xf.shape[0], block):
        xb = xf[i:i + block]
        dd = ((xb * xb).sum(1, keepdim=True) + sq_t - 2.0 * (xb @ tf.T))
        j = dd.argmin(1)
        out.append((xb - tf[j]).norm(dim=1).to(torch.float64))
    return float(torch.cat(out).mean())


# metrics evaluated against the target rather than a second sample set
_TARGET_METRICS = (mode_tv, in_mode_frac, nll)
_TRAIN_METRICS = (nn_train_distance,)


@dataclass(frozen=True)
class NoiseFloor:
    """The floor of a metric: ``mean`` and ``std`` (ddof=1; 0 with one seed) over seeds, and the ``values``.

    Unpacks as ``mean, std = noise_floor(...)``.
    """

    mean: float
    std: float
    values: tuple[float, ...]
    n: int

    def __iter__(self):
        return iter((self.mean, self.std))


def noise_floor(metric: Callable, target: GMM, n: int, *, seeds: Iterable[int] = (0, 1, 2, 3, 4),
                kind: str | None = None, **metric_kwargs) -> NoiseFloor:
    r"""The value a metric takes on exact samples of size ``n``: the floor a sampler's score is read against.

    For each seed s, two independent exact sets are drawn, ``A = target.sample(n, seed=2s)`` and
    ``B = target.sample(n, seed=2s+1)`` (so distinct non-negative seeds never share draws), and

    * two-sample metrics (:func:`sliced_wasserstein`, :func:`mmd_rbf`, any other callable by default):
      ``metric(A, B, **metric_kwargs)``;
    * target metrics (:func:`mode_tv`, :func:`in_mode_frac`, :func:`nll`): ``metric(A, target, ...)``;
    * :func:`nn_train_distance`: ``metric(A, target, ...)`` (the target must be a KDE).

    ``kind`` ("two_sample", "target") overrides the detection for other callables. The result's mean falls
    with n for the two-sample metrics (as :math:`n^{-1/2}` for SW, :math:`n^{-1}` for the MMD estimate's spread).

    Parameters
    ----------
    metric : callable
    target : GMM or KDE
    n : int >= 2
    seeds : iterable of int
    **metric_kwargs : passed to ``metric`` (e.g. ``n_proj``, ``seed`` for :func:`sliced_wasserstein`)

    Returns
    -------
    NoiseFloor
        ``mean``, ``std`` over the seeds, ``values`` and ``n``; unpacks as ``(mean, std)``.
    """
    _check_gmm(target, "noise_floor")
    if int(n) < 2:
        raise ValueError(f"noise_floor: n must be >= 2, got {n}")
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("noise_floor: seeds is empty")
    if any(s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
        raise ValueError("noise_floor: seeds must be distinct and >= 0")
    if kind is None:
        kind = "target" if metric in _TARGET_METRICS or metric in _TRAIN_METRICS else "two_sample"
    if kind not in ("two_sample", "target"):
        raise ValueError(f"noise_floor: kind must be 'two_sample' or 'target', got {kind!r}")
    if metric in _TRAIN_METRICS and not isinstance(target, KDE):
        raise TypeError("noise_floor: nn_train_distance needs a KDE target (its training set)")
    vals = []
    for s in seeds:
        a = target.sample(int(n), seed=2 * s, dtype=torch.float64)
        if kind == "target":
            vals.append(float(metric(a, target, **metric_kwargs)))
        else:
            b = target.sample(int(n), seed=2 * s + 1, dtype=torch.float64)
            vals.append(float(metric(a, b, **metric_kwargs)))
    v = np.asarray(vals)
    return NoiseFloor(float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0, tuple(vals), int(n))
