r"""The driver contract (:class:`Driver`), its argument checks and the stream statistics (Q, C_chi).

A driver is a seeded stream of vectors :math:`\xi_1, \xi_2, \dots \in \mathbb{R}^{\text{shape}}`; the drivers
themselves are in :mod:`fastnips.diffusion.drivers` (i.i.d.) and :mod:`fastnips.diffusion.lorenz`. The
statistics of :meth:`Driver.stats`, pooled over exchangeable coordinates :math:`m` and :math:`n` draws:

.. math::

    \hat Q_{\rm BM} = b\,\overline{(\bar\xi_{\rm batch} - \bar\xi)^2}
    \quad (\text{s.e. } \hat Q_{\rm BM}\sqrt{2/N_b}), \qquad
    \hat Q_{\rm GK} = \hat C_0 + 2\sum_{j=1}^{L}\hat C_j, \qquad C_j = \operatorname{Cov}(\xi_k, \xi_{k+j}),

batch means over :math:`N_b` batches of :math:`b` consecutive draws, and Green--Kubo with the autocovariances
(by FFT) up to lag :math:`L`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np
import torch

__all__ = ["Driver"]


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


# ------------------------------------------------------------------------------------------ the contract


class Driver:
    r"""A seeded stream of vectors :math:`\xi_1, \xi_2, \dots` of a fixed ``shape``.

    A sampler injects :math:`\eta = Q^{-1/2} n^{-1/2} \sum_{j=1}^{n} \xi_{(i,j)}` where EDM injects
    :math:`\varepsilon \sim N(0, I)`. Every driver exposes

    * ``shape``, ``draw(n) -> (n, *shape)`` (the next n values; advances the stream), ``reset()`` (back to the
      state right after construction: the same seed gives the same stream bit for bit);
    * ``Q`` -- the long-run variance (asymptotic covariance) of one coordinate of the stream *as drawn*,
      :math:`Q = \operatorname{Var}\xi_k + 2\sum_{j \ge 1}\operatorname{Cov}(\xi_k, \xi_{k+j})`
      (Green--Kubo / the variance of the martingale part of the Gordin decomposition), 1 for i.i.d. drivers;
    * ``bound`` -- :math:`\sup |\xi|` of one value (inf for Gaussian);
    * ``C_chi`` -- :math:`C_\chi = \|\chi\|_\infty`, the sup-norm of the Poisson solution
      :math:`\chi = \sum_{j\ge1} \mathcal{L}^j v` (:math:`\mathcal L` the transfer operator): with the
      Gordin decomposition :math:`v = m + \chi\circ T - \chi` the partial sums differ from the martingale
      :math:`M_n = \sum_{k<n} m\circ T^k` by a telescoping sum, :math:`|S_n - M_n| \le 2 C_\chi`. For an
      i.i.d. driver :math:`\chi = v`, so :math:`C_\chi` = ``bound`` (inf for Gaussian);
    * ``stats(n_steps)`` -- mean, variance, Q by batch means and by Green--Kubo, bound and :math:`C_\chi` with
      standard errors, estimated on a fresh copy of the driver (this one's stream is not advanced).

    Subclasses implement ``_draw(n, dtype) -> torch.Tensor (n, *shape)`` on ``self._device``,
    ``_reset()``, ``_fresh(shape) -> Driver`` (same parameters and seed, another shape), and set
    ``Q``, ``bound``, ``_batch`` / ``_max_lag`` (defaults for :meth:`stats`).
    """

    name = "driver"
    Q: float = 1.0
    bound: float = math.inf
    _batch = 20
    _max_lag = 20

    def __init__(self, shape: int | Sequence[int], seed: int = 0):
        self.shape = _shape(shape)
        self.seed = _nonneg_int("seed", seed)
        self.d = int(np.prod(self.shape))
        self._device = torch.device("cpu")

    def draw(self, n: int = 1, *, device: str | torch.device | None = None,
             dtype: torch.dtype = torch.float32) -> torch.Tensor:
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
