r"""The shuffled-Lorenz driver of the Fast-Driver Sampler: RK4 of many Lorenz-63 copies, the pool, Q(tau).

The Lorenz-63 system

.. math:: \dot x = \sigma(y-x), \quad \dot y = x(\rho-z)-y, \quad \dot z = xy-\beta z
          \qquad (\sigma=10,\ \rho=28,\ \beta=8/3),

one independent copy per coordinate, RK4 at step ``dt`` (:func:`lorenz_rk4`), ``burn_in`` time units from random
starts :math:`x, y \sim U(-15, 15)`, :math:`z \sim U(5, 40)`, read every ``tau`` time units through the
observable :math:`v = x / 7.93` (``normalize``; 7.93 is the standard deviation of x on the attractor, so v has
unit variance) and an optional ``clamp`` :math:`v \mapsto \max(-c, \min(c, v))`.

Choices the paper leaves open (it names a "shuffled Lorenz" driver and no more)
--------------------------------------------------------------------------------
* ``shuffle="time"`` (default): a *pool* of ``buffer`` values (default :math:`2^{20}`) is pre-integrated
  once -- 1024 copies (fewer if the pool is smaller), each read ``buffer / 1024`` times at interval ``tau``
  after the burn-in -- and every value of the stream is an independent uniform pick from the pool: stream
  position c (c = k·d + i for draw k, coordinate i) reads ``pool[h(c)]``, h a counter-based hash keyed by the
  seed (splitmix64; :func:`fastnips.diffusion.reference.pool_index_reference`). This is a bootstrap from the
  pre-integrated Lorenz marginal: **exactly i.i.d.** (from the pool's empirical law), bounded by the pool's
  max, platykurtic, with Q = the pool's variance (exact, about 1) and :math:`C_\chi` = ``bound``. Why a hash
  and not a stored permutation of the pool: a permutation needs a full reshuffle every ``buffer / d`` draws,
  while a hashed pick costs one gather per draw; the stream is the same for any chunking of ``draw`` calls
  and any thread count; and the same integers run in numpy, C++ and Triton, so the three backends agree bit
  for bit on the draw (the pool itself agrees to rounding). The pool is shared, not one copy per coordinate:
  the marginal is the same for every shape. float32 draws read a float32 copy of the pool (the rounded
  float64 values).
* ``shuffle="none"``: d = prod(shape) copies integrated along with the stream (``tau / dt`` RK4 steps per
  draw, ``dt`` shrunk to ``tau / ceil(tau / dt)`` so a draw is a whole number of steps); coordinate i is copy
  i. Temporally correlated: Q(tau) > 1, growing like :math:`1/\tau` as tau shrinks, and :math:`C_\chi` has
  no simple finite value (see ``stats``).
* ``shuffle="space"``: as ``"none"``, but draw k presents the copies in a seeded random order
  (a fresh ``torch.randperm(d)`` per draw, seeded by (seed, k)). Each copy keeps its trajectory, but one
  coordinate sees a different copy at every draw, so its temporal correlation drops by a factor d:
  :math:`\operatorname{Cov}(\xi_k(i), \xi_{k+j}(i)) = C_j / d` exactly, hence
  :math:`Q_\text{space} = C_0 + (Q_\text{none} - C_0)/d \approx 1` (Q(tau) survives only for the spatial
  field as a whole, not per coordinate).

How Q is obtained: ``"time"``: the pool's variance (exact for the stream). ``"none"``: estimated once per
(tau, dt, normalize, clamp) by :func:`lorenz_Q` -- 512 copies, 20 batches of 200 time units each after a
20-unit burn-in, batch means -- and cached for the session (batches this long because of the correlation time:
see :func:`lorenz_Q`). ``"space"``: from that estimate by the formula
above. Measured Q(tau): docs/notes/diffusion.md.

Backends (``backend="auto"|"reference"|"cpp"|"triton"``, :func:`fastnips._backend.resolve`): the RK4 of
many copies and the pool gather have a numpy reference (:mod:`fastnips.diffusion.reference`), a C++ kernel
(``csrc/diffusion/lorenz.cpp``: OpenMP over blocks of 16 copies held in registers over all substeps,
AVX-512/AVX2 clones) and a Triton kernel for CUDA tensors (:mod:`fastnips.kernels.lorenz`). ``"auto"``
takes ``cpp`` on the CPU and ``triton`` on CUDA. A Lorenz stream is reproducible bit for bit on one backend;
across backends the trajectories agree to rounding at first (FMA contraction differs) and then separate at
the Lyapunov rate (about 0.9 per time unit), as any two integrations of a chaotic flow do.

References: E. N. Lorenz, "Deterministic nonperiodic flow", J. Atmos. Sci. 20 (1963); "Fast-Driver Sampler"
(FDS), NeurIPS 2026 (abstract only); Melbourne & Stuart, "A note on diffusion limits of chaotic skew-product
flows", Nonlinearity 24 (2011); Kelly & Melbourne, "Deterministic homogenization for fast-slow systems with
chaotic noise", J. Funct. Anal. 272 (2017); Steele, Lea & Flood, "Fast splittable pseudorandom number
generators", OOPSLA 2014 (splitmix64).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import torch

from .. import _backend
from . import reference as _ref
from .driver_base import Driver, _nonneg_int, _positive_real, _series_stats

__all__ = ["SHUFFLES", "X_BOUND", "X_STD", "Lorenz", "lorenz_Q", "lorenz_rk4"]

SIGMA, RHO, BETA = 10.0, 28.0, 8.0 / 3.0
X_STD = 7.93
"""Std of x on the Lorenz-63 attractor: the normalisation of v = x / X_STD (unit variance)."""
X_BOUND = 20.0
"""An upper bound of |x| on the attractor: ``bound`` of the trajectory readings."""
SHUFFLES = ("time", "space", "none")
#: Backends of the RK4 and the pool draw.
LORENZ_BACKENDS = ("reference", "cpp", "triton")
_POOL_COPIES = 1024


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

    Examples
    --------
    >>> import numpy as np
    >>> state, xs = lorenz_rk4(np.array([[1.0], [1.0], [20.0]]), 200, 0.005, record_every=100)
    >>> state.shape, xs.shape
    ((3, 1), (2, 1))

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
    b = _backend.resolve(backend, op="lorenz_rk4", supported=LORENZ_BACKENDS, like=state)
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
        obs = _backend.native().diffusion_lorenz_rk4(s, n_steps, dt, *args, rec, int(n_threads))
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
        return _backend.native().diffusion_pool_draw(pool, key, counter0, n, n_threads)
    return _ref.pool_draw_reference(pool, key, counter0, n)


def _initial_states(n: int, seed: int, tag: int) -> np.ndarray:
    """(3, n) random starts in the attractor's basin: x, y ~ U(-15, 15), z ~ U(5, 40)."""
    rng = np.random.default_rng(_subseed(seed, tag))
    return np.stack([rng.uniform(-15.0, 15.0, n), rng.uniform(-15.0, 15.0, n), rng.uniform(5.0, 40.0, n)])


def _steps(tau: float, dt: float) -> tuple[int, float]:
    """(RK4 steps per reading, effective step): tau = k * dt_eff with dt_eff <= dt."""
    k = max(1, math.ceil(tau / dt - 1e-9))
    return k, tau / k


def _transform(x, normalize: bool, clamp: float | None):
    v = x / X_STD if normalize else x
    if clamp is not None:
        v = v.clip(-clamp, clamp)
    return v



# ------------------------------------------------------------------------------------------ Q(tau)


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
             n_copies: int = 512, n_batches: int = 20, batch_time: float = 200.0, lag_time: float = 10.0,
             burn_in: float = 20.0, seed: int = 0, backend: str = "auto") -> dict:
    r"""Long-run variance Q(tau) of the tau-sampled Lorenz observable :math:`v_k = v(x(k\tau))`.

    .. math::

        Q = \lim_{n\to\infty} \tfrac{1}{n}\operatorname{Var}\Big(\sum_{k=1}^{n} v_k\Big)
          = C_0 + 2 \sum_{j \ge 1} C_j, \qquad C_j = \operatorname{Cov}(v_k, v_{k+j}).

    Batch means: :math:`\hat Q = b \cdot \overline{(\bar v_\text{batch} - \bar v)^2}` over ``n_batches`` batches
    of ``batch_time`` time units per copy (s.e. :math:`\hat Q \sqrt{2 / N_\text{batches}}`); Green--Kubo:
    :math:`\hat C_0 + 2\sum_{j=1}^{L} \hat C_j` with L covering ``lag_time`` time units. Cached per argument
    set for the session.

    Batch length. Batch means over batches of :math:`T` time units are biased low by about
    :math:`2 m_1 / T` (relative), :math:`m_1 = \sum_j j\tau\, C_j / Q` the first moment of the observable's
    autocorrelation, which for the Lorenz x (with its slow lobe switching) is about 0.4 time units. Hence the
    default :math:`T = 200` (bias about 0.4 %, below the standard error of about 1.4 % of 20 batches x 512
    copies); batches of 25 time units were about 3 % low (2.04 instead of 2.11 at tau = 0.5).

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

    Examples
    --------
    >>> est = lorenz_Q(1.0, n_copies=64, n_batches=8, batch_time=10.0)
    >>> sorted(k for k in est if k.startswith("Q_"))
    ['Q_batchmeans', 'Q_batchmeans_se', 'Q_greenkubo']
    """
    tau = _positive_real("tau", tau)
    k, dt_eff = _steps(tau, _positive_real("dt", dt))
    clamp = None if clamp is None else _positive_real("clamp", clamp)
    return dict(_lorenz_Q_cached(k, dt_eff, bool(normalize), clamp, _nonneg_int("n_copies", n_copies, minimum=1),
                                 _nonneg_int("n_batches", n_batches, minimum=2),
                                 _positive_real("batch_time", batch_time), _positive_real("lag_time", lag_time),
                                 _positive_real("burn_in", burn_in, allow_zero=True), _nonneg_int("seed", seed),
                                 _backend.resolve(backend, op="lorenz_rk4", supported=LORENZ_BACKENDS)))



# ------------------------------------------------------------------------------------------ the driver


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
        Time between consecutive readings.
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
        normalised (|x| < 20 on the attractor), or ``clamp`` if smaller. Assumes the burn-in reached the
        attractor (20 time units do).
    steps_per_draw, dt_eff : int, float
        RK4 steps per reading and the step actually used.

    Examples
    --------
    >>> drv = Lorenz((4, 3), tau=0.5, shuffle="none", burn_in=5.0, seed=0)
    >>> drv.draw(2).shape
    torch.Size([2, 4, 3])
    """

    name = "lorenz"

    def __init__(self, shape: int | Sequence[int], *, tau: float = 0.5, shuffle: str = "time", dt: float = 0.005,
                 burn_in: float = 20.0, normalize: bool = True, clamp: float | None = None, seed: int = 0,
                 device: str | torch.device = "cpu", backend: str = "auto", buffer: int = 2**20):
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
        self.backend = _backend.resolve(backend, op="lorenz_rk4", supported=LORENZ_BACKENDS, like=self._device)
        self.steps_per_draw, self.dt_eff = _steps(self.tau, self.dt)
        self._burn_steps = round(self.burn_in / self.dt_eff)
        self._count = 0
        self._batch = 20 if shuffle != "none" else max(1, math.ceil(200.0 / self.tau - 1e-9))
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
        """Long-run variance of one coordinate (exact for ``shuffle="time"``, else estimated once, cached)."""
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
