r"""Functional principal components of irregularly sampled curves from a pooled covariance (PACE-style).

The third coefficient family of paper 14 (the abstract names "finitely many basis coefficients computed from the
observed trajectories"; which FPCA estimator is left open). Chosen here, after Yao, Mueller and Wang (2005,
"Functional data analysis for sparse longitudinal data"), with every smoother replaced by a penalised spline
fit so that it is exact linear algebra, not kernel smoothing:

1. mean :math:`\mu(t) = b(t)^\top m`, :math:`m = (\sum_i B_i^\top B_i + \lambda R)^{-1} \sum_i B_i^\top x_i`
   (all samples pooled);
2. covariance :math:`C(s, t) = b(s)^\top \Gamma\, b(t)`, :math:`\Gamma` the penalised least-squares fit of the
   pooled raw products :math:`r_{ij} r_{ik}`, :math:`j \neq k` (:math:`r = x - \mu`; the diagonal
   :math:`j = k` carries the noise and is left out), with penalty
   :math:`\lambda\,\mathrm{vec}(\Gamma)^\top (R \otimes J + J \otimes R)\,\mathrm{vec}(\Gamma)`,
   :math:`J = \int b\,b^\top`. The normal equations are sums over curves of :math:`G_i \otimes G_i` with
   :math:`G_i = B_i^\top B_i`, so the work is linear in the number of curves;
3. eigenfunctions :math:`\psi_l = b^\top v_l` of the covariance operator
   (:math:`J^{1/2}\Gamma J^{1/2} w = \nu w`, :math:`v = J^{-1/2} w`, orthonormal in :math:`L^2`);
4. noise :math:`\sigma^2` = the pooled mean of :math:`r_{ij}^2 - C(t_{ij}, t_{ij})` (at least
   ``1e-6`` times the mean of :math:`r_{ij}^2`);
5. scores by the conditional expectation (BLUP) :math:`\hat\xi_i = (\Psi_i^\top\Psi_i + \tilde\sigma^2
   \Lambda^{-1})^{-1}\Psi_i^\top (x_i - \mu(t_i))`, :math:`\Psi_i = B_i V`: a per-curve penalised least squares
   with the same kernel as :func:`fastnips.functional.curve_coefficients` (so it runs on the ``cpp`` backend).
   :math:`\tilde\sigma^2 = \sigma^2 + \sum_{l > L} \nu_l / (b - a)` counts the omitted components as white
   noise of their average pointwise variance (a choice: with :math:`\sigma^2` alone, a truncated expansion on
   a few samples per curve gives unstable scores when the noise estimate is near zero).

The fit uses at most ``max_fit_curves`` curves (a uniform subsample drawn with ``seed``; the covariance costs
:math:`O(m K^4)` per sample); the scores are computed for every curve.
"""

from __future__ import annotations

import numpy as np

from .basis import BSplineBasis, FourierBasis
from .coefficients import _check_basis, penalty_for, solve_coefficients
from .curves import CurvesLike, PackedCurves, as_packed, check_curves

__all__ = ["FPCA"]


def _chunks(packed: PackedCurves, basis, chunk: int = 512):
    """(B, x, starts) for consecutive blocks of ``chunk`` curves: the design of their samples, their values and
    where each curve starts within the block."""
    for c0 in range(0, packed.n_curves, chunk):
        c1 = min(c0 + chunk, packed.n_curves)
        lo, hi = packed.offsets[c0], packed.offsets[c1]
        yield basis.evaluate(packed.t[lo:hi]), packed.x[lo:hi], packed.offsets[c0:c1] - lo


def _pooled_mean(packed: PackedCurves, basis, R: np.ndarray) -> np.ndarray:
    K = basis.n_basis
    A, rhs = R.copy(), np.zeros(K)
    for B, x, _ in _chunks(packed, basis):
        A += B.T @ B
        rhs += B.T @ x
    return np.linalg.lstsq(A, rhs, rcond=None)[0]


def _pooled_moments(packed: PackedCurves, basis, m_coef: np.ndarray):
    """The normal equations of the off-diagonal raw covariances: ``sum_i G_i (x) G_i - sum_j (b_j b_j^T) (x)
    (b_j b_j^T)`` (K^2, K^2) and ``sum_i u_i u_i^T - sum_j r_j^2 b_j b_j^T`` (K, K), u_i = B_i^T r_i."""
    K = basis.n_basis
    M = np.zeros((K * K, K * K))
    S = np.zeros((K, K))
    for B, x, starts in _chunks(packed, basis):
        r = x - B @ m_coef
        E = (B[:, :, None] * B[:, None, :]).reshape(-1, K * K)  # rows vec(b_j b_j^T)
        G = np.add.reduceat(E, starts, axis=0)  # (curves, K*K): vec(G_i)
        u = np.add.reduceat(B * r[:, None], starts, axis=0)  # (curves, K): B_i^T r_i
        # sum_i G_i (x) G_i, as [a c, b d] = sum_i G_i[a, b] G_i[c, d]
        M += (G.T @ G).reshape(K, K, K, K).transpose(0, 2, 1, 3).reshape(K * K, K * K)
        M -= E.T @ E  # (b b^T) (x) (b b^T) is symmetric in all four indices
        S += u.T @ u - (B * (r**2)[:, None]).T @ B
    return M, S


def _noise_variance(packed: PackedCurves, basis, m_coef: np.ndarray, gamma: np.ndarray) -> float:
    r2 = diag_c = 0.0
    for B, x, _ in _chunks(packed, basis):
        r2 += float(np.sum((x - B @ m_coef) ** 2))
        diag_c += float(np.einsum("jk,kl,jl->", B, gamma, B))
    n = len(packed.t)
    return max((r2 - diag_c) / n, 1e-6 * r2 / n)


class FPCA:
    r"""Functional PCA of irregular curves from a pooled penalised-spline covariance (module docstring).

    Parameters
    ----------
    n_components : int
        :math:`L`, the number of eigenfunctions kept (the scores are the coefficients).
    basis : BSplineBasis or FourierBasis
        The basis :math:`b` of the mean and the covariance surface (:math:`K` functions, :math:`K \geq L`).
    smoothing : float
        :math:`\lambda \geq 0` of the mean and covariance fits (the roughness penalty of derivative ``derivative``).
    derivative : int
        :math:`q` of the roughness penalty.
    max_fit_curves : int
        At most this many curves (a uniform subsample) estimate the mean and covariance.
    seed : int
        Seed of that subsample.
    backend : {"auto", "reference", "cpp"}
        Backend of the per-curve score solves.

    Attributes
    ----------
    mean_coef_ : ndarray (K,)
        :math:`m`.
    covariance_coef_ : ndarray (K, K)
        :math:`\Gamma`.
    components_coef_ : ndarray (K, L)
        :math:`V` (the eigenfunctions' coefficients in ``basis``).
    explained_variance_ : ndarray (L,)
        :math:`\nu_1 \geq \dots \geq \nu_L`.
    noise_variance_ : float
        :math:`\sigma^2`.
    score_noise_ : float
        :math:`\tilde\sigma^2` of the scores.

    Examples
    --------
    >>> t = np.linspace(0, 1, 20)
    >>> rng = np.random.default_rng(0)
    >>> curves = [(t, a * np.sin(2 * np.pi * t) + 0.01 * rng.standard_normal(20)) for a in rng.standard_normal(50)]
    >>> fp = FPCA(1, BSplineBasis(8, (0.0, 1.0)), smoothing=1e-6).fit(curves)
    >>> fp.transform(curves).shape
    (50, 1)
    """

    def __init__(self, n_components: int, basis: BSplineBasis | FourierBasis, *, smoothing: float = 1e-4,
                 derivative: int = 2, max_fit_curves: int = 5000, seed: int = 0, backend: str = "auto") -> None:
        _check_basis(basis)
        if not (isinstance(n_components, int | np.integer) and 1 <= n_components <= basis.n_basis):
            raise ValueError(f"n_components must be an integer in [1, basis.n_basis = {basis.n_basis}], "
                             f"got {n_components!r}")
        if not (isinstance(max_fit_curves, int | np.integer) and max_fit_curves >= 2):
            raise ValueError(f"max_fit_curves must be an integer >= 2, got {max_fit_curves!r}")
        self.n_components, self.basis, self.smoothing, self.derivative = int(n_components), basis, smoothing, derivative
        self.max_fit_curves, self.seed, self.backend = int(max_fit_curves), seed, backend
        self._R = penalty_for(basis, smoothing, derivative)

    def fit(self, curves: CurvesLike, y: object = None) -> FPCA:
        """Estimate the mean, the covariance surface, the eigenfunctions and the noise variance."""
        packed = as_packed(curves, check=False)
        check_curves(packed, self.basis.domain_range)
        if packed.n_curves < 2:
            raise ValueError(f"FPCA needs at least 2 curves, got {packed.n_curves}")
        if packed.n_curves > self.max_fit_curves:
            keep = np.sort(np.random.default_rng(self.seed).choice(packed.n_curves, self.max_fit_curves, replace=False))
            packed = packed.subset(keep)
        K = self.basis.n_basis
        J = self.basis.penalty_matrix(0)
        R = np.zeros((K, K)) if self._R is None else self._R
        self.mean_coef_ = _pooled_mean(packed, self.basis, R)
        M, S = _pooled_moments(packed, self.basis, self.mean_coef_)
        pen = np.kron(R, J) + np.kron(J, R)
        gamma = np.linalg.lstsq(M + pen, S.reshape(-1), rcond=None)[0].reshape(K, K)
        self.covariance_coef_ = 0.5 * (gamma + gamma.T)
        Lj = np.linalg.cholesky(J)
        nu, W = np.linalg.eigh(Lj.T @ self.covariance_coef_ @ Lj)
        nu, W = nu[::-1], W[:, ::-1]
        if np.sum(nu > 0) < self.n_components:
            raise ValueError(f"the estimated covariance has only {int(np.sum(nu > 0))} positive eigenvalues, fewer "
                             f"than n_components={self.n_components}: use fewer components or more curves")
        L = self.n_components
        self.explained_variance_ = nu[:L].copy()
        V = np.linalg.solve(Lj.T, W[:, :L])
        # a deterministic sign: the largest coefficient of each eigenfunction is positive
        V *= np.where(V[np.argmax(np.abs(V), axis=0), np.arange(L)] < 0, -1.0, 1.0)
        self.components_coef_ = V
        self.noise_variance_ = _noise_variance(packed, self.basis, self.mean_coef_, self.covariance_coef_)
        a, b = self.basis.domain_range
        self.score_noise_ = self.noise_variance_ + float(np.sum(np.clip(nu[L:], 0, None))) / (b - a)
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "components_coef_"):
            raise RuntimeError("this FPCA is not fitted yet: call fit(curves) first")

    def transform(self, curves: CurvesLike, n_threads: int = 0) -> np.ndarray:
        r"""The scores :math:`\hat\xi_i` (BLUP), shape ``(n_curves, n_components)``."""
        self._check_fitted()
        P = np.diag(self.score_noise_ / self.explained_variance_)
        return solve_coefficients(curves, self.basis, P, projection=self.components_coef_, mean=self.mean_coef_,
                                  backend=self.backend, n_threads=n_threads)

    def fit_transform(self, curves: CurvesLike, y: object = None) -> np.ndarray:
        """``fit(curves).transform(curves)``."""
        return self.fit(curves).transform(curves)

    def components(self, t: np.ndarray) -> np.ndarray:
        r"""The eigenfunctions :math:`\psi_l(t)`, shape ``(len(t), n_components)``."""
        self._check_fitted()
        return self.basis.evaluate(t) @ self.components_coef_

    def mean(self, t: np.ndarray) -> np.ndarray:
        r"""The mean function :math:`\mu(t)`, shape ``(len(t),)``."""
        self._check_fitted()
        return self.basis.evaluate(t) @ self.mean_coef_
