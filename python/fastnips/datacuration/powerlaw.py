r"""The power law of the best data recipe after N ablation runs, fitted with a profiled asymptote.

Model (paper 19, datascale: "the performance of the best-discovered recipe improves predictably -- as a power
law -- in the number of ablation runs"):

.. math::
    \mathrm{best}(N) = a - b\,N^{-c},\qquad a > \max(\text{observed}),\ b > 0 .

Fit. For a fixed asymptote :math:`a` the model is a line in log-gap space,
:math:`\log(a - \bar y_N) = \log b - c\log N`, solved by least squares over the distinct N (one point per N:
:math:`\bar y_N` is the mean best over the replicate searches at that N, so the curve is the *expected* best).
The asymptote is then profiled: it is searched on a log grid of offsets above the best single observation
(any observed run is a lower bound of the optimum the search approaches: "constrained by the best
observation"), refined by a parabola, and chosen to maximise the :math:`R^2` of that line.

Choices the paper leaves open, with the reasons:

* **Scale-free criterion, not least squares in y.** A free three-parameter ``curve_fit`` of
  :math:`a - bN^{-c}` weights the largest gaps (smallest N) most, where the expected best is not yet a power
  law (for random search it is :math:`\propto\Gamma(N+1)/\Gamma(N+1+c)`, see :func:`expected_best`), so its
  :math:`\hat c` is biased low and its :math:`\hat a` overshoots (on the mean of 400 random searches of 4096
  runs in d = 1 / 2 / 4 dimensions, true c = 2 / 1 / 0.5: free fit 1.14 / 0.74 / 0.41, this fit with
  ``n_min=32`` 1.97 / 0.97 / 0.50). Least squares in log-gap space weights every N alike but is degenerate in
  :math:`a` (its residuals vanish as :math:`a\to\infty`); :math:`R^2` is not (as :math:`a\to\infty` it tends
  to the :math:`R^2` of a logarithmic law), the probability-plot-correlation way of fitting a threshold.
* **Bootstrap over replicate searches.** Given one best-so-far curve per search (a 2-D ``best``), the
  intervals resample whole searches. Given flat pairs, they resample the values within each N (every
  N needs two or more; deviations from the N's mean scaled by :math:`\sqrt{m/(m-1)}` as in
  :func:`~fastnips.datacuration.fit_loglog`), redo the profile (with the resample's own best observation as
  constraint), and take percentiles. A single search's best-so-far curve is serially dependent, so with one
  value at some N a residual bootstrap of the log-gap line through the per-N means is used and the interval is
  optimistic; run
  independent replicate searches (as the testbed does) for honest intervals.
* ``n_min``: the smallest N used; the pre-asymptotic region (N of a few) bends the curve.

:func:`extrapolate` fits on the small N only and scores the prediction of the held-out larger N.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize_scalar

from .fitting import (
    check_level,
    check_n_boot,
    check_pairs,
    group_index,
    ols_rows,
    percentile_interval,
    within_group_resample,
)

__all__ = ["Extrapolation", "PowerLawFit", "extrapolate", "fit_power_law"]

_GRID = np.geomspace(1e-7, 1e4, 111)  # asymptote offsets above the best observation, in units of the data range
_GRID_UPPER = np.geomspace(1e-7, 1.0, 81)  # with an upper bound: in units of (upper - best observation)


@dataclass(frozen=True, eq=False)
class PowerLawFit:
    r"""A fitted :math:`\mathrm{best}(N) = a - b N^{-c}` with bootstrap intervals.

    Attributes
    ----------
    a, b, c : float
        The point estimates (asymptote, scale, exponent).
    a_ci, b_ci, c_ci : tuple of float
        Percentile intervals at ``level`` (NaN when there is no bootstrap).
    level : float
        The interval level.
    n_points : int
        The number of (N, best) pairs used.
    r2 : float
        :math:`R^2` of the log-gap line at the fitted asymptote.
    asymptote_profiled : bool
        False when the asymptote was given.
    at_bound : str
        ``""``, or ``"observed"`` / ``"infinite"`` / ``"upper"`` when the profiled asymptote sits at the best
        observation / the top of the search grid / the given ceiling (the data do not determine it: read ``c``
        with care).
    boot : numpy.ndarray, shape (n_boot, 3)
        The bootstrap (a, b, c) triples, for :meth:`interval`.
    """

    a: float
    b: float
    c: float
    a_ci: tuple[float, float]
    b_ci: tuple[float, float]
    c_ci: tuple[float, float]
    level: float
    n_points: int
    r2: float
    asymptote_profiled: bool
    at_bound: str = ""
    boot: np.ndarray = field(default_factory=lambda: np.empty((0, 3)), repr=False)

    def predict(self, N: ArrayLike) -> np.ndarray:
        """The fitted expected best after ``N`` runs, :math:`a - bN^{-c}` (array like ``N``)."""
        return self.a - self.b * np.asarray(N, dtype=np.float64) ** -self.c

    def interval(self, N: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """The bootstrap percentile interval of the predicted expected best at ``N`` (NaN without bootstrap)."""
        Na = np.atleast_1d(np.asarray(N, dtype=np.float64))
        if self.boot.shape[0] == 0:
            nan = np.full(Na.shape, np.nan)
            return nan, nan
        curves = self.boot[:, :1] - self.boot[:, 1:2] * Na[None, :] ** -self.boot[:, 2:3]
        lo = np.array([percentile_interval(col, self.level)[0] for col in curves.T])
        hi = np.array([percentile_interval(col, self.level)[1] for col in curves.T])
        return lo, hi


def _means(ys: np.ndarray, groups: list[np.ndarray]) -> np.ndarray:
    """Per-group means of each row of ``ys`` (shape (B, n)) -> (B, G)."""
    return np.stack([ys[:, g].mean(axis=1) for g in groups], axis=1)


def _line(u: np.ndarray, gaps: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(c, b, 1 - R^2) of the log-gap line of every row of ``gaps`` (B, G)."""
    v = np.log(gaps)
    slope, icpt, rss = ols_rows(u, v)
    tss = ((v - v.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    return -slope, np.exp(icpt), np.where(tss > 0, rss / np.where(tss > 0, tss, 1.0), 0.0)


def _profile(u: np.ndarray, ybar: np.ndarray, floor: np.ndarray, span: np.ndarray, grid: np.ndarray):
    """Profile the asymptote ``floor + g * span`` (g on ``grid``) of every row: (a, b, c, 1 - R^2, bound)."""
    B, K = ybar.shape[0], grid.size
    lg = np.log(grid)
    loss = np.empty((B, K))
    for k, g in enumerate(grid):
        loss[:, k] = _line(u, (floor + g * span)[:, None] - ybar)[2]
    j = np.clip(np.argmin(loss, axis=1), 1, K - 2)
    l0, l1, l2 = (loss[np.arange(B), j + s] for s in (-1, 0, 1))
    den = l0 - 2 * l1 + l2
    h = lg[1] - lg[0]
    step = np.where(den > 0, 0.5 * h * (l0 - l2) / np.where(den > 0, den, 1.0), 0.0)
    logg = lg[j] + np.clip(step, -h, h)
    best = np.argmin(loss, axis=1)
    bound = np.where(best == 0, 1, np.where(best == K - 1, 2, 0))
    logg = np.where(bound == 1, lg[0], np.where(bound == 2, lg[-1], logg))
    if B == 1 and bound[0] == 0:  # the point estimate: polish the parabola step with a bounded 1-D search
        res = minimize_scalar(lambda t: _line(u, (floor + math.exp(t) * span)[:, None] - ybar)[2][0],
                              bounds=(lg[j[0]] - h, lg[j[0]] + h), method="bounded", options={"xatol": 1e-10})
        logg = np.array([res.x])
    a = floor + np.exp(logg) * span
    c, b, one_minus_r2 = _line(u, a[:, None] - ybar)
    return a, b, c, one_minus_r2, bound


def _as_pairs(N, best):
    """Flat (N, best, search id or None): a 2-D ``best`` is (searches, len(N)), one curve per search."""
    if np.ndim(best) != 2:
        return N, best, None
    Y = np.asarray(best, dtype=np.float64)
    if np.ndim(N) != 1 or np.shape(N)[0] != Y.shape[1]:
        raise ValueError(f"with a 2-D best (searches x N), N must be 1-D of length {Y.shape[1]}, got shape "
                         f"{np.shape(N)}")
    if np.unique(np.asarray(N)).size != Y.shape[1]:
        raise ValueError("with a 2-D best (searches x N), the values of N must be distinct")
    if Y.shape[0] == 1:  # one search cannot be resampled: the single-curve (residual) bootstrap, as for flat pairs
        return np.asarray(N), Y[0], None
    return np.tile(np.asarray(N), Y.shape[0]), Y.ravel(), np.repeat(np.arange(Y.shape[0]), Y.shape[1])


def _check_fit_args(N, best, asymptote, n_min, n_boot, level):
    N, best, search = _as_pairs(N, best)
    Na, ya = check_pairs(N, best, xname="N", yname="best", positive_y=False, min_distinct=1)
    if isinstance(n_min, bool) or not isinstance(n_min, int | np.integer) or n_min < 1:
        raise ValueError(f"n_min must be a positive integer, got {n_min!r}")
    keep = Na >= n_min
    Na, ya = Na[keep], ya[keep]
    search = None if search is None else search[keep]
    k = np.unique(Na).size
    need = 2 if asymptote is not None else 3
    if k < need:
        raise ValueError(f"fit_power_law needs at least {need} distinct N >= n_min (as many as the free "
                         f"parameters: {'b, c' if need == 2 else 'a, b, c'}), got {k}")
    if asymptote is not None:
        a = float(asymptote)
        if not math.isfinite(a) or a <= ya.max():
            raise ValueError(f"asymptote must be finite and above every observed best (max {ya.max():g}), "
                             f"got {asymptote!r}")
    return Na, ya, search, check_n_boot(n_boot), check_level(level)


def _boot_samples(u, ya, groups, point, n_boot, rng, search):
    """(B, n) bootstrap replicates of ``ya``, column j standing for the same N as ``ya[j]``."""
    out = np.empty((n_boot, ya.size))
    if search is not None:  # whole searches: each keeps its own best-so-far curve
        P = np.stack([np.flatnonzero(search == s) for s in range(search.max() + 1)])
        R = rng.integers(0, P.shape[0], size=(n_boot, P.shape[0]))
        out[:, P.ravel()] = ya[P[R].reshape(n_boot, -1)]
        return out
    if min(g.size for g in groups) >= 2:  # within-N resampling, deviations scaled by sqrt(m/(m-1))
        return within_group_resample(ya, groups, n_boot, rng)
    # one value at some N: resample the log-gap residuals of the line through the per-N means (the points the fit
    # uses); every member of a group takes its group's resampled mean (with singleton groups: the values themselves)
    a, b, c = point
    fitted = np.log(b) - c * u  # u is per group
    ybar = np.array([ya[g].mean() for g in groups])
    resid = (np.log(a - ybar) - fitted) * math.sqrt(u.size / max(u.size - 2, 1))
    sim = a - np.exp(fitted[None, :] + resid[rng.integers(0, u.size, size=(n_boot, u.size))])
    for j, g in enumerate(groups):
        out[:, g] = sim[:, j:j + 1]
    return out


def fit_power_law(N: ArrayLike, best: ArrayLike, *, asymptote: float | None = None, upper: float | None = None,
                  n_min: int = 1, n_boot: int = 2000, level: float = 0.95, seed: int = 0) -> PowerLawFit:
    r"""Fit :math:`\mathrm{best}(N) = a - bN^{-c}` to best-recipe qualities after N ablation runs.

    .. math::
        \hat a = \arg\max_{a > \max_i y_i} R^2\big(\log(a - \bar y_N) \sim \log N\big),\qquad
        (\log\hat b, -\hat c) = \text{least squares of that line at } \hat a .

    Parameters
    ----------
    N : array_like of int, shape (n,) or (G,)
        Numbers of runs (positive); repeated values are replicate searches.
    best : array_like, shape (n,) or (S, G)
        The best quality found after ``N[i]`` runs (higher is better; negate a loss). 2-D: row s is search
        s's best-so-far at each of the G distinct ``N``; the bootstrap then resamples whole searches (the right
        unit: one search's values at different N are dependent). A single row is fitted as flat pairs (one search
        cannot be resampled; see the module docstring for that interval).
    asymptote : float, optional
        The known optimum :math:`a`; then only the log-gap line is fitted.
    upper : float, optional
        A hard ceiling of the profiled asymptote (1.0 for an accuracy); without it the asymptote may go up to
        :math:`10^4` data ranges above the best observation (the logarithmic limit, reported in ``at_bound``).
    n_min : int, default 1
        Only ``N >= n_min`` are used (drop the pre-asymptotic few-run region).
    n_boot, level, seed
        Bootstrap replicates (0: none), interval level, bootstrap seed.

    Returns
    -------
    PowerLawFit
        Estimates, percentile intervals, the bootstrap triples; ``predict`` and ``interval`` at any N.

    Raises
    ------
    ValueError
        Non-finite values, non-positive N, fewer distinct N than free parameters (3, or 2 with a known
        asymptote), a mean best that falls from the smallest to the largest N (a loss not negated), an
        asymptote or ``upper`` not above every observation, bad ``n_min`` / ``n_boot`` / ``level``.

    Notes
    -----
    Paper 19 (datascale). The choices (profiled :math:`R^2` criterion, per-N means, replicate bootstrap) and
    why a free least-squares fit is biased are in the module docstring.

    Examples
    --------
    >>> import numpy as np
    >>> from fastnips.datacuration import fit_power_law
    >>> N = np.repeat([4, 8, 16, 32, 64, 128], 8)
    >>> rng = np.random.default_rng(1)
    >>> y = 0.9 - 0.5 * N**-0.7 * np.exp(0.1 * rng.standard_normal(N.size))
    >>> fit = fit_power_law(N, y, n_boot=200)
    >>> round(fit.c, 2), round(fit.c_ci[0], 2), round(fit.c_ci[1], 2)
    (0.71, 0.64, 0.77)
    """
    Na, ya, search, n_boot, level = _check_fit_args(N, best, asymptote, n_min, n_boot, level)
    if upper is not None:
        if asymptote is not None:
            raise ValueError("give either asymptote (known) or upper (a ceiling of the profiled one), not both")
        upper = float(upper)
        if not math.isfinite(upper) or upper <= ya.max():
            raise ValueError(f"upper must be finite and above every observed best (max {ya.max():g}), got {upper!r}")
    groups = group_index(Na)
    u = np.log(np.array([Na[g[0]] for g in groups]))
    first, last = ya[groups[0]].mean(), ya[groups[-1]].mean()
    if last < first:
        raise ValueError(f"best must grow with N (higher is better; negate a loss): mean best {first:g} at the "
                         f"smallest N, {last:g} at the largest")
    scale = float(ya.max() - ya.min()) or max(abs(float(ya.max())), 1.0)

    def solve(ys: np.ndarray):
        ybar = _means(ys, groups)
        if asymptote is not None:
            a = np.full(ys.shape[0], float(asymptote))
            ok = (a[:, None] > ybar).all(axis=1)
            gaps = np.where(ok[:, None], a[:, None] - ybar, 1.0)
            c, b, omr = _line(u, gaps)
            return a, np.where(ok, b, np.nan), np.where(ok, c, np.nan), omr, np.zeros(ys.shape[0], int)
        floor = ys.max(axis=1)
        if upper is None:
            return _profile(u, ybar, floor, np.full(floor.shape, scale), _GRID)
        return _profile(u, ybar, floor, np.maximum(upper - floor, 1e-12 * scale), _GRID_UPPER)

    a, b, c, omr, bound = (x[0] for x in solve(ya[None, :]))
    boot = np.empty((0, 3))
    if n_boot > 0 and (Na.size > len(groups) or len(groups) > 3):
        ys = _boot_samples(u, ya, groups, (a, b, c), n_boot, np.random.default_rng(seed), search)
        boot = np.stack(solve(ys)[:3], axis=1)
    cis = [percentile_interval(boot[:, j], level) if boot.size else (math.nan, math.nan) for j in range(3)]
    return PowerLawFit(a=float(a), b=float(b), c=float(c), a_ci=cis[0], b_ci=cis[1], c_ci=cis[2], level=level,
                       n_points=int(Na.size), r2=float(1.0 - omr), asymptote_profiled=asymptote is None,
                       at_bound=("", "observed", "infinite" if upper is None else "upper")[int(bound)], boot=boot)


@dataclass(frozen=True, eq=False)
class Extrapolation:
    """Held-out extrapolation of :func:`extrapolate`: the fit on small N scored on the larger N.

    Attributes
    ----------
    fit : PowerLawFit
        The fit on ``N <= fit_max``.
    N : numpy.ndarray
        The held-out distinct N.
    observed, predicted, low, high : numpy.ndarray
        Mean observed best, predicted expected best and its interval at each held-out N.
    inside : numpy.ndarray of bool
        Whether each observed mean lies in its interval.
    gap_error : numpy.ndarray
        Relative error of the predicted gap to the asymptote, :math:`|\\hat y - y| / (\\hat a - y)`.
    """

    fit: PowerLawFit
    N: np.ndarray
    observed: np.ndarray
    predicted: np.ndarray
    low: np.ndarray
    high: np.ndarray
    inside: np.ndarray
    gap_error: np.ndarray


def extrapolate(N: ArrayLike, best: ArrayLike, fit_max: int, **kwargs: object) -> Extrapolation:
    """Fit on ``N <= fit_max`` (:func:`fit_power_law`, same keywords) and score the held-out ``N > fit_max``.

    Parameters
    ----------
    N, best : array_like
        As for :func:`fit_power_law` (flat pairs or one row per search); some ``N`` must exceed ``fit_max``.
    fit_max : int
        The largest N the fit may see.
    **kwargs
        Passed to :func:`fit_power_law`.

    Returns
    -------
    Extrapolation
    """
    if np.ndim(best) == 2:
        Y, Ng = np.asarray(best, dtype=np.float64), np.asarray(N, dtype=np.float64)
        _as_pairs(Ng, Y)  # shape checks
        held_cols = Ng > fit_max
        if not held_cols.any():
            raise ValueError(f"no N above fit_max={fit_max!r} to hold out (max N is {Ng.max():g})")
        fit = fit_power_law(Ng[~held_cols], Y[:, ~held_cols], **kwargs)
        Nh, obs = Ng[held_cols], Y[:, held_cols].mean(axis=0)
    else:
        Na, ya = check_pairs(N, best, xname="N", yname="best", positive_y=False, min_distinct=1)
        held = Na > fit_max
        if not held.any():
            raise ValueError(f"no N above fit_max={fit_max!r} to hold out (max N is {Na.max():g})")
        fit = fit_power_law(Na[~held], ya[~held], **kwargs)
        groups = group_index(Na[held])
        Nh = np.array([Na[held][g[0]] for g in groups])
        obs = np.array([ya[held][g].mean() for g in groups])
    pred = fit.predict(Nh)
    lo, hi = fit.interval(Nh)
    return Extrapolation(fit=fit, N=Nh, observed=obs, predicted=pred, low=lo, high=hi,
                         inside=(lo <= obs) & (obs <= hi), gap_error=np.abs(pred - obs) / np.abs(fit.a - obs))
