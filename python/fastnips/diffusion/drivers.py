r"""Noise drivers for diffusion samplers: shuffled-Lorenz (the Fast-Driver Sampler's) and i.i.d. baselines.

A driver is a seeded stream of vectors :math:`\xi_1, \xi_2, \dots \in \mathbb{R}^{\text{shape}}`. A sampler
injects :math:`\eta = Q^{-1/2} n^{-1/2} \sum_{j=1}^{n} \xi_{(i,j)}` where EDM injects
:math:`\varepsilon \sim N(0, I)`. Every driver exposes

* ``shape``, ``draw(n) -> (n, *shape)`` (the next n values; advances the stream), ``reset()`` (back to the
  state right after construction: the same seed gives the same stream bit for bit);
* ``Q`` -- the long-run variance (asymptotic covariance) of one coordinate of the stream *as drawn*,
  :math:`Q = \operatorname{Var}\xi_k + 2\sum_{j \ge 1}\operatorname{Cov}(\xi_k, \xi_{k+j})`
  (Green--Kubo / the variance of the martingale part of the Gordin decomposition), 1 for the i.i.d. drivers;
* ``bound`` -- :math:`\sup |\xi|` of one value (inf for Gaussian);
* ``stats(n_steps)`` -- mean, variance, Q by batch means and by Green--Kubo, bound and :math:`C_\chi` with
  standard errors, estimated on a fresh copy of the driver (this one's stream is not advanced).

:math:`C_\chi = \|\chi\|_\infty` is the sup-norm of the Poisson solution :math:`\chi = \sum_{j\ge1}
\mathcal{L}^j v`: with it the partial sums obey :math:`|S_n - M_n| \le 2 C_\chi` (shared/notes, part C). For an
i.i.d. driver :math:`\chi = v`, so :math:`C_\chi` = ``bound`` (inf for Gaussian, the abstract's point).

Drivers
-------
* :class:`Gaussian` -- ``torch.randn`` with a private CPU ``torch.Generator().manual_seed(seed)``:
  ``Gaussian(shape, seed=s).draw(n)`` is **exactly** the stack of n consecutive
  ``torch.randn(shape, generator=g)`` calls (``dtype=torch.float64`` calls for float64), so a test can rebuild
  EDM's stochastic sampler (Karras et al. 2022, Algorithm 2) with the same noise. Values are generated on the
  CPU and moved to the requested device.
* :class:`Rademacher` (:math:`\pm 1`) and :class:`Uniform` (on :math:`[-\sqrt3, \sqrt3]`): bounded, unit
  variance, the bounded-i.i.d. ablations the notes ask for. One generator call per value of the stream
  (float64, then cast), so ``draw(n)`` equals n calls of ``draw(1)`` and float32 draws are the rounded
  float64 ones.
* :class:`Lorenz` -- the Lorenz-63 system :math:`\dot x = \sigma(y-x)`, :math:`\dot y = x(\rho-z)-y`,
  :math:`\dot z = xy-\beta z` (:math:`\sigma=10, \rho=28, \beta=8/3`), one independent copy per coordinate,
  RK4 at step ``dt`` (:func:`lorenz_rk4`), ``burn_in`` time units from random starts
  :math:`x, y \sim U(-15, 15)`, :math:`z \sim U(5, 40)`, read every ``tau`` time units through the observable
  :math:`v = x / 7.93` (``normalize``; 7.93 = the std of x on the attractor, shared/notes C.3, 7.925; our
  run gives 7.92) and an optional ``clamp`` :math:`v \mapsto \max(-c, \min(c, v))`.

Choices the paper leaves open (shared/notes C.2, "shuffled")
------------------------------------------------------------
* ``shuffle="time"`` (default): a *pool* of ``buffer`` values (default :math:`2^{20}`) is pre-integrated
  once -- 1024 copies (fewer if the pool is smaller), each read ``buffer / 1024`` times at interval ``tau``
  after the burn-in -- and every value of the stream is an independent uniform pick from the pool: stream
  position c (c = k·d + i for draw k, coordinate i) reads ``pool[h(c)]``, h a counter-based hash keyed by the
  seed (splitmix64; :func:`fastnips.diffusion.reference.pool_index_reference`). This is a bootstrap from the
  pre-integrated Lorenz marginal: **exactly i.i.d.** (from the pool's empirical law), bounded by the pool's
  max, platykurtic (excess kurtosis about -0.7), with Q = the pool's variance (exact, about 1) and
  :math:`C_\chi` = ``bound``. Why a hash and not a stored permutation (the notes' wording): a permutation of
  the pool needs a reshuffle every ``buffer / d`` draws (a 2^20 ``randperm`` costs 6 ms here), while a hashed
  pick costs one gather per draw (0.3 ms on one CPU core for 196,608 values, measured; one small kernel on a
  GPU, not measured here); the stream is the same for any chunking of ``draw`` calls and any thread count;
  and the same integers run in numpy, C++ and Triton, so the three backends agree bit for bit on the draw
  (the pool itself agrees to rounding). The pool is shared, not one copy per coordinate: the marginal is the
  same for every shape. float32 draws read a float32 copy of the pool (the rounded float64 values).
* ``shuffle="none"``: d = prod(shape) copies integrated along with the stream (``tau / dt`` RK4 steps per
  draw, ``dt`` shrunk to ``tau / ceil(tau / dt)`` so a draw is a whole number of steps); coordinate i is copy
  i. Temporally correlated: Q(tau) > 1 (table below), and :math:`C_\chi` has no simple finite value
  (see ``stats``).
* ``shuffle="space"``: as ``"none"``, but draw k presents the copies in a seeded random order
  (a fresh ``torch.randperm(d)`` per draw, seeded by (seed, k)). Each copy keeps its trajectory, but one
  coordinate sees a different copy at every draw, so its temporal correlation drops by a factor d:
  :math:`\operatorname{Cov}(\xi_k(i), \xi_{k+j}(i)) = C_j / d` exactly, hence
  :math:`Q_\text{space} = C_0 + (Q_\text{none} - C_0)/d \approx 1`. (The notes expected "space" to keep
  Q(tau); it does only for the spatial field as a whole, not per coordinate.)

How Q is obtained
-----------------
i.i.d. drivers: 1. ``"time"``: the pool's variance (exact for the stream). ``"none"``: estimated once per
(tau, dt, normalize, clamp) by :func:`lorenz_Q` -- 512 copies, 40 batches of 25 time units each after a
20-unit burn-in, batch means -- and cached for the session (0.2 s with the C++ backend at tau >= 0.1, 2 s at
tau = 0.05; relative standard error about 1 %). ``"space"``: from that estimate by the formula above.
Measured here (seed 0, normalised v; Green--Kubo over 10 time units of lags):

====== ============================ ==============
tau    Q (batch means, +- s.e.)     Q (Green-Kubo)
====== ============================ ==============
0.05   18.74 +- 0.19                19.50
0.1    9.37 +- 0.09                 9.75
0.2    4.69 +- 0.05                 4.88
0.5    2.04 +- 0.02                 2.10
1.0    1.41 +- 0.01                 1.44
2.0    1.12 +- 0.01                 1.12
====== ============================ ==============

:math:`Q(\tau)\,\tau \approx 0.94` at small tau (an integrated autocorrelation time of about 0.47 time units).
The batch means of shared/notes C.3 (1.70 at tau = 0.5) are lower because their batches were short; their
Green--Kubo values (2.11, 1.46, 1.11 at tau = 0.5, 1, 2) agree with ours.

Backends (``backend="auto"|"reference"|"cpp"|"triton"``, :func:`fastnips._backend.resolve`): the RK4 of
many copies and the pool gather have a numpy reference (:mod:`fastnips.diffusion.reference`), a C++ kernel
(``csrc/diffusion/lorenz.cpp``: OpenMP over blocks of 16 copies held in registers over all substeps,
AVX-512/AVX2 clones) and a Triton kernel for CUDA tensors (:mod:`fastnips.kernels.lorenz`). ``"auto"``
takes ``cpp`` on the CPU and ``triton`` on CUDA. A Lorenz stream is reproducible bit for bit on one backend;
across backends the trajectories agree to rounding at first (FMA contraction differs) and then separate at
the Lyapunov rate (about 0.9 per time unit), as any two integrations of a chaotic flow do.

Paper: "Fast-Driver Sampler" (NeurIPS 2026, paper 7 of papers/INDEX.md; not public -- shared/notes part C).
Theory: Melbourne & Stuart, "A note on diffusion limits of chaotic skew-product flows", Nonlinearity 24
(2011); Kelly & Melbourne, "Deterministic homogenization for fast-slow systems with chaotic noise",
J. Funct. Anal. 272 (2017). EDM: Karras, Aittala, Aila & Laine, "Elucidating the Design Space of
Diffusion-Based Generative Models", NeurIPS 2022.
"""

from __future__ import annotations

import math
import numbers
from functools import lru_cache

import numpy as np
import torch

from . import reference as _ref

__all__ = ["DRIVERS", "SHUFFLES", "X_BOUND", "X_STD", "Driver", "Gaussian", "Lorenz", "Rademacher", "Uniform",
           "lorenz_Q", "lorenz_rk4", "make_driver"]

SIGMA, RHO, BETA = 10.0, 28.0, 8.0 / 3.0
X_STD = 7.93
"""Std of x on the Lorenz-63 attractor (shared/notes C.3: 7.925): the normalisation of v = x / X_STD."""
X_BOUND = 20.0
"""An upper bound of |x| on the attractor (measured sup about 19.6): ``bound`` of the trajectory readings."""
SHUFFLES = ("time", "space", "none")
_SUPPORTED = ("reference", "cpp", "triton")
_POOL_COPIES = 1024


# ------------------------------------------------------------------------------------------ argument checks


def _positive_real(name: str, v, *, allow_zero: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(float(v)):
        raise ValueError(f"{name} must be a finite real number, got {v!r}")
    v = float(v)
    if v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {v!r}")
    return v


def _nonneg_int(name: str, v, *, minimum: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or int(v) < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {v!r}")
    return int(v)


def _shape(shape) -> tuple[int, ...]:
    if isinstance(shape, numbers.Integral) and not isinstance(shape, bool):
        shape = (int(shape),)
    ok = isinstance(shape, (tuple, list, torch.Size)) and all(
        isinstance(s, numbers.Integral) and not isinstance(s, bool) and int(s) >= 1 for s in shape)
    if not ok:
        raise ValueError(f"shape must be a tuple of positive ints, got {shape!r}")
    return tuple(int(s) for s in shape)


def _float_dtype(dtype) -> torch.dtype:
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"dtype must be a floating torch dtype, got {dtype!r}")
    return dtype


def _resolve(backend: str, device: torch.device) -> str:
    from .. import _backend

    auto = ("cpp", "reference") if device.type == "cpu" else ("triton", "reference")
    return _backend.resolve(backend, op="lorenz_rk4", supported=_SUPPORTED, auto=auto)


def _subseed(seed: int, tag: int) -> np.random.SeedSequence:
    return np.random.SeedSequence([seed, tag])


def _key(seed: int, tag: int) -> int:
    """A 64-bit key from (seed, tag)."""
    return int(_subseed(seed, tag).generate_state(1, np.uint64)[0])


# ------------------------------------------------------------------------------------------ RK4 of many copies


def lorenz_rk4(state, n_steps: int, dt: float, *, sigma: float = SIGMA, rho: float = RHO, beta: float = BETA,
               record_every: int | None = None, backend: str = "auto", n_threads: int = 0):
    r"""Classical RK4 for d independent Lorenz-63 copies, recording x every ``record_every`` steps.

    .. math::

        \dot x = \sigma (y - x), \quad \dot y = x(\rho - z) - y, \quad \dot z = x y - \beta z, \qquad
        s_{k+1} = s_k + \tfrac{h}{6}\,(k_1 + 2k_2 + 2k_3 + k_4),

    global error :math:`O(h^4)` over a fixed horizon.

    Parameters
    ----------
    state : ndarray or torch.Tensor, shape (3, d)
        Rows x, y, z of the d copies (structure of arrays, so a coordinate is contiguous over copies),
        finite; converted to float64. Not modified.
    n_steps : int >= 0
        RK4 steps of size ``dt``.
    dt : float > 0
    sigma, rho, beta : float
        The classical parameters 10, 28, 8/3 by default.
    record_every : int >= 1, optional
        Record x after every ``record_every`` steps (``n_steps`` must be a multiple). None: no records.
    backend : {"auto", "reference", "cpp", "triton"}
        ``"reference"``: numpy, vectorised over copies. ``"cpp"``: ``csrc/diffusion/lorenz.cpp`` (OpenMP,
        ``n_threads`` threads, 0 = OpenMP's default). ``"triton"``: :mod:`fastnips.kernels.lorenz`, for CUDA
        tensors (or CPU tensors under ``TRITON_INTERPRET=1``). ``"auto"``: ``cpp`` on the CPU, ``triton``
        for CUDA tensors.

    Returns
    -------
    state : same kind as the input (ndarray, or tensor on the input's device), shape (3, d), float64
    records : same kind, shape (n_steps // record_every, d), float64, or None
        Row r is x after (r + 1) * record_every steps.

    References
    ----------
    E. N. Lorenz, "Deterministic nonperiodic flow", J. Atmos. Sci. 20 (1963).
    """
    n_steps = _nonneg_int("n_steps", n_steps)
    dt = _positive_real("dt", dt)
    for name, v in (("sigma", sigma), ("rho", rho), ("beta", beta)):
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(float(v)):
            raise ValueError(f"{name} must be a finite real number, got {v!r}")
    if record_every is not None:
        record_every = _nonneg_int("record_every", record_every, minimum=1)
        if n_steps % record_every:
            raise ValueError(f"n_steps = {n_steps} is not a multiple of record_every = {record_every}")
    is_torch = isinstance(state, torch.Tensor)
    device = state.device if is_torch else torch.device("cpu")
    if tuple(state.shape[:1]) != (3,) or len(state.shape) != 2:
        raise ValueError(f"state must have shape (3, d) (rows x, y, z), got {tuple(state.shape)}")
    b = _resolve(backend, device)
    rec = record_every or 0
    args = (float(sigma), float(rho), float(beta))
    if b == "triton":
        from ..kernels import lorenz as _k

        s = (state if is_torch else torch.from_numpy(np.asarray(state))).detach().to(torch.float64).clone()
        if not bool(torch.isfinite(s).all()):
            raise ValueError("state must be finite")
        s = s.contiguous()
        obs = _k.lorenz_rk4(s, n_steps, dt, *args, rec)
        if is_torch:
            return s, obs
        return s.numpy(), (None if obs is None else obs.numpy())
    s = (state.detach().cpu().numpy() if is_torch else np.asarray(state)).astype(np.float64, copy=True)
    s = np.ascontiguousarray(s)
    if not np.isfinite(s).all():
        raise ValueError("state must be finite")
    if b == "cpp":
        from .._backend import native

        obs = native().diffusion_lorenz_rk4(s, n_steps, dt, *args, rec, int(n_threads))
    else:
        s, obs = _ref.lorenz_rk4_reference(s, n_steps, dt, sigma=args[0], rho=args[1], beta=args[2],
                                           record_every=rec)
    if is_torch:
        return (torch.from_numpy(s).to(device), None if obs is None else torch.from_numpy(obs).to(device))
    return s, obs


def _pool_draw(pool, key: int, counter0: int, n: int, backend: str, n_threads: int = 0):
    """n i.i.d. picks from the 1-D pool (numpy for reference/cpp, a tensor for triton)."""
    if backend == "triton":
        from ..kernels import lorenz as _k

        return _k.pool_draw(pool, key, counter0, n)
    if backend == "cpp":
        from .._backend import native

        return native().diffusion_pool_draw(pool, key, counter0, n, n_threads)
    return _ref.pool_draw_reference(pool, key, counter0, n)


def _initial_states(n: int, seed: int, tag: int) -> np.ndarray:
    """(3, n) random starts in the attractor's basin: x, y ~ U(-15, 15), z ~ U(5, 40)."""
    rng = np.random.default_rng(_subseed(seed, tag))
    return np.stack([rng.uniform(-15.0, 15.0, n), rng.uniform(-15.0, 15.0, n), rng.uniform(5.0, 40.0, n)])


def _steps(tau: float, dt: float) -> tuple[int, float]:
    """(RK4 steps per reading, effective step): tau = k * dt_eff with dt_eff <= dt."""
    k = max(1, math.ceil(tau / dt - 1e-9))
    return k, tau / k


# ------------------------------------------------------------------------------------------ statistics


def _series_stats(X: np.ndarray, batch: int, max_lag: int) -> dict:
    """Mean, variance, batch-means and Green-Kubo long-run variance of the columns of X (n_steps, m), pooled
    over the m exchangeable columns, with standard errors."""
    X = np.asarray(X, dtype=np.float64)
    n, m = X.shape
    batch = max(1, min(batch, n))
    nb = n // batch
    mu = float(X.mean())
    Xc = X - mu
    # batch means of the stream and of its squares: nb * m batches
    bm = Xc[: nb * batch].reshape(nb, batch, m).mean(axis=1)
    q_bm = batch * float((bm**2).sum()) / max(nb * m - 1, 1)
    q_bm_se = q_bm * math.sqrt(2.0 / max(nb * m - 1, 1))
    var = float((Xc**2).mean())
    sq = (Xc[: nb * batch] ** 2).reshape(nb, batch, m).mean(axis=1)
    var_se = math.sqrt(float(sq.var(ddof=1)) / max(nb * m, 1)) if nb * m > 1 else float("nan")
    mean_se = math.sqrt(max(q_bm, 0.0) / (n * m))
    # autocovariances C(0..L) pooled over columns, by FFT
    L = max(0, min(max_lag, n - 1))
    size = 1 << math.ceil(math.log2(2 * n))
    F = np.fft.rfft(Xc, n=size, axis=0)
    acov = np.fft.irfft((F * F.conj()).real.sum(axis=1), n=size)[: L + 1] / (m * (n - np.arange(L + 1)))
    q_gk = float(acov[0] + 2.0 * acov[1:].sum())
    rho = acov / acov[0] if acov[0] > 0 else np.zeros_like(acov)
    return dict(mean=mu, mean_se=mean_se, var=var, var_se=var_se, Q_batchmeans=q_bm, Q_batchmeans_se=q_bm_se,
                Q_greenkubo=q_gk, max_abs=float(np.abs(X).max()), n_steps=n, n_coords=m, batch=batch, max_lag=L,
                autocorr=rho)


def _transform(x, normalize: bool, clamp: float | None):
    v = x / X_STD if normalize else x
    if clamp is not None:
        v = v.clip(-clamp, clamp)
    return v


@lru_cache(maxsize=32)
def _lorenz_Q_cached(k: int, dt_eff: float, normalize: bool, clamp, n_copies: int, n_batches: int,
                     batch_time: float, lag_time: float, burn_in: float, seed: int, backend: str) -> dict:
    tau = k * dt_eff
    b = max(1, math.ceil(batch_time / tau - 1e-9))
    R = n_batches * b
    m = max(16, min(n_copies, int(2e7) // R))  # keep the records under ~160 MB
    s0 = _initial_states(m, seed, 7)
    s, _ = lorenz_rk4(s0, round(burn_in / dt_eff), dt_eff, backend=backend)
    _, obs = lorenz_rk4(s, R * k, dt_eff, record_every=k, backend=backend)
    out = _series_stats(_transform(obs, normalize, clamp), b, math.ceil(lag_time / tau - 1e-9))
    out.update(tau=tau, dt=dt_eff, n_copies=m)
    return out


def lorenz_Q(tau: float, *, dt: float = 0.005, normalize: bool = True, clamp: float | None = None,
             n_copies: int = 512, n_batches: int = 40, batch_time: float = 25.0, lag_time: float = 10.0,
             burn_in: float = 20.0, seed: int = 0, backend: str = "auto") -> dict:
    r"""Long-run variance Q(tau) of the tau-sampled Lorenz observable :math:`v_k = v(x(k\tau))`.

    .. math::

        Q = \lim_{n\to\infty} \tfrac{1}{n}\operatorname{Var}\Big(\sum_{k=1}^{n} v_k\Big)
          = C_0 + 2 \sum_{j \ge 1} C_j, \qquad C_j = \operatorname{Cov}(v_k, v_{k+j}).

    Batch means: :math:`\hat Q = b \cdot \overline{(\bar v_\text{batch} - \bar v)^2}` over ``n_batches`` batches
    of ``batch_time`` time units per copy (s.e. :math:`\hat Q \sqrt{2 / N_\text{batches}}`); Green--Kubo:
    :math:`\hat C_0 + 2\sum_{j=1}^{L} \hat C_j` with L covering ``lag_time`` time units. Cached per argument
    set for the session.

    Parameters
    ----------
    tau : float > 0
        Reading interval (time units); ``dt`` shrinks to ``tau / ceil(tau / dt)``.
    n_copies : int
        Independent copies (capped so the records stay under ~160 MB at small tau).

    Returns
    -------
    dict
        ``Q_batchmeans``, ``Q_batchmeans_se``, ``Q_greenkubo``, ``mean``, ``var``, ``autocorr`` (lags 0..L),
        ``tau``, ``dt``, ``n_copies``, ...
    """
    tau = _positive_real("tau", tau)
    k, dt_eff = _steps(tau, _positive_real("dt", dt))
    clamp = None if clamp is None else _positive_real("clamp", clamp)
    return dict(_lorenz_Q_cached(k, dt_eff, bool(normalize), clamp, _nonneg_int("n_copies", n_copies, minimum=1),
                                 _nonneg_int("n_batches", n_batches, minimum=2),
                                 _positive_real("batch_time", batch_time), _positive_real("lag_time", lag_time),
                                 _positive_real("burn_in", burn_in, allow_zero=True), _nonneg_int("seed", seed),
                                 _resolve(backend, torch.device("cpu"))))


# ------------------------------------------------------------------------------------------ drivers


class Driver:
    r"""A seeded stream of vectors of a fixed ``shape`` (see the module docstring for the contract).

    Subclasses implement ``_draw(n, dtype) -> torch.Tensor (n, *shape)`` on ``self._device``,
    ``_reset()``, ``_fresh(shape) -> Driver`` (same parameters and seed, another shape), and set
    ``Q``, ``bound``, ``_batch`` / ``_max_lag`` (defaults for :meth:`stats`).
    """

    name = "driver"
    Q: float = 1.0
    bound: float = math.inf
    _batch = 20
    _max_lag = 20

    def __init__(self, shape, seed: int = 0):
        self.shape = _shape(shape)
        self.seed = _nonneg_int("seed", seed)
        self.d = int(np.prod(self.shape))
        self._device = torch.device("cpu")

    def draw(self, n: int = 1, *, device=None, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """The next ``n`` values of the stream, shape ``(n, *shape)``, on ``device`` (default: the driver's)."""
        n = _nonneg_int("n", n)
        dtype = _float_dtype(dtype)
        out = self._draw(n, dtype)
        if device is not None and torch.device(device) != out.device:
            out = out.to(device)
        return out

    def reset(self) -> None:
        """Back to the state right after construction (the stream restarts from its first value)."""
        self._reset()

    @property
    def C_chi(self) -> float:
        """:math:`\\|\\chi\\|_\\infty`; equals ``bound`` for i.i.d. drivers (inf for Gaussian)."""
        return self.bound

    def stats(self, n_steps: int = 20_000, *, n_coords: int = 256, batch: int | None = None,
              max_lag: int | None = None) -> dict:
        r"""Monte-Carlo statistics of one coordinate of this driver's law.

        Draws ``n_steps`` values of ``min(n_coords, d)`` coordinates from a fresh driver of the same kind,
        parameters and seed with shape ``(min(n_coords, d),)`` (the coordinates are exchangeable; this
        driver's stream is not advanced) and pools the coordinates.

        Returns
        -------
        dict
            ``mean``, ``mean_se`` (from the batch-means Q), ``var``, ``var_se`` (batch means of the squares),
            ``Q_batchmeans``, ``Q_batchmeans_se`` (:math:`\hat Q \sqrt{2/N_b}`), ``Q_greenkubo``
            (:math:`\hat C_0 + 2\sum_{j=1}^{L}\hat C_j`), ``bound``, ``C_chi``, ``C_chi_method``, ``max_abs``
            (largest observed |value|), ``autocorr`` (lags 0..L), ``n_steps``, ``n_coords``, ``batch``,
            ``max_lag``.
        """
        n_steps = _nonneg_int("n_steps", n_steps, minimum=2)
        m = min(_nonneg_int("n_coords", n_coords, minimum=1), self.d)
        batch = self._batch if batch is None else _nonneg_int("batch", batch, minimum=1)
        max_lag = self._max_lag if max_lag is None else _nonneg_int("max_lag", max_lag)
        X = self._fresh((m,)).draw(n_steps, dtype=torch.float64).cpu().numpy().reshape(n_steps, m)
        out = _series_stats(X, batch, max_lag)
        out["bound"] = self.bound
        out.update(self._c_chi(out))
        return out

    def _c_chi(self, st: dict) -> dict:
        return dict(C_chi=self.bound, C_chi_method="exact: i.i.d. driver, chi = v, C_chi = sup|v|")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape}, seed={self.seed})"


class _TorchIID(Driver):
    """i.i.d. drivers on a private CPU torch.Generator, one generator call per value of the stream."""

    def __init__(self, shape, *, seed: int = 0):
        super().__init__(shape, seed)
        self._gen = torch.Generator().manual_seed(self.seed)

    def _reset(self) -> None:
        self._gen.manual_seed(self.seed)

    def _fresh(self, shape):
        return type(self)(shape, seed=self.seed)

    def _one(self, dtype: torch.dtype) -> torch.Tensor:
        """One value of the stream, shape ``self.shape``: each i.i.d. driver (Gaussian, Rademacher, Uniform)
        defines it."""
        raise NotImplementedError(f"{type(self).__name__} must define _one(dtype)")

    def _draw(self, n: int, dtype: torch.dtype) -> torch.Tensor:
        if n == 0:
            return torch.empty((0, *self.shape), dtype=dtype)
        return torch.stack([self._one(dtype) for _ in range(n)])


class Gaussian(_TorchIID):
    r""":math:`\xi_k \sim N(0, I)` i.i.d.: ``Q = 1``, ``bound = C_chi = inf``.

    ``draw(n)`` is exactly ``torch.stack([torch.randn(shape, generator=g) for _ in range(n)])`` with
    ``g = torch.Generator().manual_seed(seed)`` at construction / :meth:`reset` (``dtype=torch.float64`` in
    the calls for float64; other float dtypes are float32 calls cast). EDM's Algorithm 2 with
    ``torch.randn(..., generator=g)`` therefore sees the same noise.

    Parameters
    ----------
    shape : tuple of int
    seed : int >= 0
    """

    name = "gaussian"

    def _one(self, dtype):
        if dtype == torch.float64:
            return torch.randn(self.shape, generator=self._gen, dtype=torch.float64)
        return torch.randn(self.shape, generator=self._gen).to(dtype)

    def _c_chi(self, st):
        return dict(C_chi=math.inf, C_chi_method="exact: i.i.d. Gaussian, chi = v is unbounded")


class Rademacher(_TorchIID):
    r""":math:`\xi_k \in \{-1, +1\}` i.i.d. fair signs: unit variance, ``Q = 1``, ``bound = C_chi = 1``.

    One ``torch.randint(0, 2, shape, generator=g)`` call per value, mapped to :math:`2b - 1`.
    """

    name = "rademacher"
    bound = 1.0

    def _one(self, dtype):
        return (2 * torch.randint(0, 2, self.shape, generator=self._gen) - 1).to(dtype)


class Uniform(_TorchIID):
    r""":math:`\xi_k \sim U[-\sqrt3, \sqrt3]` i.i.d.: unit variance, ``Q = 1``, ``bound = C_chi = sqrt(3)``.

    One ``torch.rand(shape, generator=g, dtype=torch.float64)`` call per value, :math:`\sqrt3 (2u - 1)`,
    then cast (float32 draws are the rounded float64 ones).
    """

    name = "uniform"
    bound = math.sqrt(3.0)

    def _one(self, dtype):
        u = torch.rand(self.shape, generator=self._gen, dtype=torch.float64)
        return (math.sqrt(3.0) * (2.0 * u - 1.0)).clamp_(-math.sqrt(3.0), math.sqrt(3.0)).to(dtype)


@lru_cache(maxsize=8)
def _pool(k: int, dt_eff: float, burn_steps: int, size: int, seed: int, backend: str, device: str):
    """The pre-integrated pool of raw x values (float64; numpy, or a tensor on ``device`` for triton)."""
    n_copies = min(_POOL_COPIES, size)
    reads = math.ceil(size / n_copies)
    s0 = _initial_states(n_copies, seed, 1)
    if backend == "triton":
        s0 = torch.from_numpy(s0).to(device)
    s, _ = lorenz_rk4(s0, burn_steps, dt_eff, backend=backend)
    _, obs = lorenz_rk4(s, reads * k, dt_eff, record_every=k, backend=backend)
    return obs.T.reshape(-1)[:size].contiguous() if backend == "triton" else \
        np.ascontiguousarray(obs.T.reshape(-1)[:size])


@lru_cache(maxsize=8)
def _transformed_pool(steps_per_draw, dt_eff, burn_steps, buffer, seed, backend, device, normalize, clamp):
    """(pool64, pool32, bound, variance) of the normalised / clamped pool, cached like the raw pool: building a
    time-shuffled driver (a sampler call with ``driver="lorenz"``) then costs no pass over the pool."""
    v64 = _transform(_pool(steps_per_draw, dt_eff, burn_steps, buffer, seed, backend, device), normalize, clamp)
    if backend == "triton":
        p64 = v64.contiguous()
        p32 = v64.to(torch.float32).contiguous()
        return p64, p32, max(float(p64.abs().max()), float(p32.abs().max())), float(p64.var(unbiased=False))
    p64 = np.ascontiguousarray(v64)
    p64.setflags(write=False)
    p32 = p64.astype(np.float32)
    p32.setflags(write=False)
    return p64, p32, max(float(np.abs(p64).max()), float(np.abs(p32).max())), float(p64.var())


class Lorenz(Driver):
    r"""The shuffled-Lorenz driver of the Fast-Driver Sampler: :math:`\xi_k = v(x(k\tau))` from Lorenz-63 copies.

    .. math::

        \dot x = \sigma(y - x), \quad \dot y = x(\rho - z) - y, \quad \dot z = xy - \beta z, \qquad
        v = \operatorname{clamp}_c(x / 7.93),

    :math:`(\sigma, \rho, \beta) = (10, 28, 8/3)`, RK4 at step ``dt``, read every ``tau`` time units after a
    ``burn_in``. The three readings of "shuffled" and how ``Q`` is obtained are in the module docstring.

    Parameters
    ----------
    shape : tuple of int
        Shape of one value; d = prod(shape) coordinates.
    tau : float > 0, default 0.5
        Time between consecutive readings (Q(0.5) is about 1.7 for ``shuffle="none"``).
    shuffle : {"time", "space", "none"}, default "time"
    dt : float > 0, default 0.005
        RK4 step; shrunk to ``tau / ceil(tau / dt)`` so that one reading is a whole number of steps.
    burn_in : float >= 0, default 20.0
        Time units integrated from the random starts before the first reading.
    normalize : bool, default True
        Divide x by 7.93 (unit variance). False: raw x (variance about 62.9, Q scaled alike).
    clamp : float > 0, optional
        Clip values to [-clamp, clamp] (after normalising); ``bound`` becomes at most ``clamp``.
    seed : int >= 0
    device : str or torch.device, default "cpu"
        Where the state / pool live and draws are made.
    backend : {"auto", "reference", "cpp", "triton"}
        For the RK4 and the pool gather (see :func:`lorenz_rk4`).
    buffer : int, default 2**20
        Pool size for ``shuffle="time"`` (values; at most 2**32). Ignored otherwise.

    Attributes
    ----------
    Q : float
        Long-run variance of one coordinate of the stream (see the module docstring).
    bound : float
        ``"time"``: the pool's max |value| (exact sup of the stream). Otherwise ``X_BOUND / 7.93`` (2.52) when
        normalised (|x| <= 19.6 on the attractor, measured), or ``clamp`` if smaller. Assumes the burn-in
        reached the attractor (20 time units do).
    steps_per_draw, dt_eff : int, float
        RK4 steps per reading and the step actually used.
    """

    name = "lorenz"

    def __init__(self, shape, *, tau: float = 0.5, shuffle: str = "time", dt: float = 0.005, burn_in: float = 20.0,
                 normalize: bool = True, clamp: float | None = None, seed: int = 0, device="cpu",
                 backend: str = "auto", buffer: int = 2**20):
        super().__init__(shape, seed)
        self.tau = _positive_real("tau", tau)
        self.dt = _positive_real("dt", dt)
        self.burn_in = _positive_real("burn_in", burn_in, allow_zero=True)
        if shuffle not in SHUFFLES:
            raise ValueError(f"shuffle must be one of {SHUFFLES}, got {shuffle!r}")
        self.shuffle = shuffle
        if not isinstance(normalize, (bool, np.bool_)):
            raise ValueError(f"normalize must be a bool, got {normalize!r}")
        self.normalize = bool(normalize)
        self.clamp = None if clamp is None else _positive_real("clamp", clamp)
        self.buffer = _nonneg_int("buffer", buffer, minimum=1)
        if self.buffer > 2**32:
            raise ValueError(f"buffer must be at most 2**32 values, got {buffer!r}")
        self._device = torch.device(device)
        self.backend = _resolve(backend, self._device)
        self.steps_per_draw, self.dt_eff = _steps(self.tau, self.dt)
        self._burn_steps = round(self.burn_in / self.dt_eff)
        self._count = 0
        self._batch = 20 if shuffle != "none" else max(1, math.ceil(25.0 / self.tau - 1e-9))
        self._max_lag = 20 if shuffle != "none" else max(1, math.ceil(10.0 / self.tau - 1e-9))
        if shuffle == "time":
            self._build_pool()
        else:
            self._build_copies()

    # -- construction
    def _build_pool(self) -> None:
        self._pool64, self._pool32, vmax, var = _transformed_pool(
            self.steps_per_draw, self.dt_eff, self._burn_steps, self.buffer, self.seed, self.backend,
            str(self._device), self.normalize, self.clamp)
        self._key = _key(self.seed, 2)
        self.bound = vmax
        self._Q = var  # i.i.d. picks from the pool: the long-run variance is the pool's variance

    def _build_copies(self) -> None:
        s0 = _initial_states(self.d, self.seed, 0)
        if self.backend == "triton":
            s0 = torch.from_numpy(s0).to(self._device)
        self._state0, _ = lorenz_rk4(s0, self._burn_steps, self.dt_eff, backend=self.backend)
        self._state = self._state0.copy() if isinstance(self._state0, np.ndarray) else self._state0.clone()
        self._perm_key = _key(self.seed, 3)
        b = X_BOUND / X_STD if self.normalize else X_BOUND
        self.bound = b if self.clamp is None else min(b, self.clamp)
        self._Q = None

    # -- Q: exact for "time", estimated once per (tau, dt, normalize, clamp) otherwise
    @property
    def Q(self) -> float:
        if self._Q is None:
            est = lorenz_Q(self.tau, dt=self.dt, normalize=self.normalize, clamp=self.clamp)
            q = est["Q_batchmeans"]
            if self.shuffle == "space":  # Cov(xi_k(i), xi_{k+j}(i)) = C_j / d
                q = est["var"] + (q - est["var"]) / self.d
            self._Q = float(q)
        return self._Q

    @property
    def C_chi(self) -> float:
        """``bound`` for ``shuffle="time"`` (i.i.d.); inf otherwise (no finite value is known for the flow;
        :meth:`stats` reports a lag-window proxy)."""
        return self.bound if self.shuffle == "time" else math.inf

    # -- the stream
    def _reset(self) -> None:
        self._count = 0
        if self.shuffle != "time":
            self._state = self._state0.copy() if isinstance(self._state0, np.ndarray) else self._state0.clone()

    def _fresh(self, shape):
        return Lorenz(shape, tau=self.tau, shuffle=self.shuffle, dt=self.dt, burn_in=self.burn_in,
                      normalize=self.normalize, clamp=self.clamp, seed=self.seed, device=self._device,
                      backend=self.backend, buffer=self.buffer)

    def _as_tensor(self, a, n: int, dtype) -> torch.Tensor:
        t = a if isinstance(a, torch.Tensor) else torch.from_numpy(a)
        return t.to(device=self._device, dtype=dtype).reshape(n, *self.shape)

    def _draw(self, n: int, dtype: torch.dtype) -> torch.Tensor:
        if self.shuffle == "time":
            pool = self._pool64 if dtype == torch.float64 else self._pool32
            out = _pool_draw(pool, self._key, self._count * self.d, n * self.d, self.backend)
            self._count += n
            return self._as_tensor(out, n, dtype)
        if n == 0:
            return torch.empty((0, *self.shape), dtype=dtype, device=self._device)
        self._state, obs = lorenz_rk4(self._state, n * self.steps_per_draw, self.dt_eff,
                                      record_every=self.steps_per_draw, backend=self.backend)
        v = _transform(obs, self.normalize, self.clamp)
        v = v if isinstance(v, torch.Tensor) else torch.from_numpy(v)
        if self.shuffle == "space":
            perms = torch.stack([torch.randperm(self.d, generator=torch.Generator().manual_seed(
                (self._perm_key + self._count + j) % 2**63)) for j in range(n)]).to(v.device)
            v = torch.gather(v, 1, perms)
        self._count += n
        return self._as_tensor(v, n, dtype)

    def _c_chi(self, st):
        if self.shuffle == "time":
            return dict(C_chi=self.bound, C_chi_method="exact: i.i.d. picks from the pool, chi = v, C_chi = bound")
        # No finite closed form for a chaotic flow; a lag-window proxy that reduces to sup|v| for i.i.d. data.
        rho = np.abs(st["autocorr"])
        return dict(C_chi=float(self.bound * rho.sum()),
                    C_chi_method="proxy (not a proven bound): bound * sum_{j=0..max_lag} |autocorr_j|")

    def __repr__(self) -> str:
        return (f"Lorenz(shape={self.shape}, tau={self.tau}, shuffle={self.shuffle!r}, dt={self.dt}, "
                f"seed={self.seed}, backend={self.backend!r}, device={str(self._device)!r})")


DRIVERS = {"lorenz": Lorenz, "gaussian": Gaussian, "rademacher": Rademacher, "uniform": Uniform}


def make_driver(spec, shape, *, seed: int = 0) -> Driver:
    """A driver from a name (``"lorenz"``, ``"gaussian"``, ``"rademacher"``, ``"uniform"``; default parameters and
    ``seed``) or a :class:`Driver` instance, checked to have ``shape``.

    Raises
    ------
    ValueError
        An unknown name (the message lists the names) or an instance whose shape differs from ``shape``.
    TypeError
        Anything else.
    """
    shape = _shape(shape)
    if isinstance(spec, Driver):
        if spec.shape != shape:
            raise ValueError(f"driver {spec!r} has shape {spec.shape}, the sampler needs {shape}")
        return spec
    if isinstance(spec, str):
        cls = DRIVERS.get(spec.lower())
        if cls is None:
            raise ValueError(f"unknown driver {spec!r}; choose one of {', '.join(DRIVERS)} or pass a Driver")
        return cls(shape, seed=seed)
    raise TypeError(f"driver must be a name ({', '.join(DRIVERS)}) or a Driver instance, got {type(spec).__name__}")
