r"""Reference (numpy, one curve at a time) of the per-curve penalised least squares: the oracle of the tests
and the fallback backend of :func:`fastnips.functional.curve_coefficients`.

For curve :math:`i` with design :math:`\Phi_i = B(t_i) V` (``V`` the identity unless a projection is given,
e.g. the eigenfunctions of :class:`fastnips.functional.FPCA`) and centred values
:math:`r_i = x_i - B(t_i)\mu` (``mu`` zero unless given),

.. math:: \hat c_i = \arg\min_c \|r_i - \Phi_i c\|^2 + c^\top P c = (\Phi_i^\top \Phi_i + P)^{-1} \Phi_i^\top r_i,

solved by Cholesky. A curve whose system is singular is refused by index: fewer samples than functions
without a penalty, or (relative pivot below :data:`PIVOT_TOL`) samples that leave a function unsupported.
"""

from __future__ import annotations

import numpy as np

from .curves import PackedCurves

__all__ = ["PIVOT_TOL", "coefficients_reference", "singular_message", "too_few_message"]

# A Cholesky pivot d_k^2 <= PIVOT_TOL * max_k A_kk is taken for a singular system (shared with the C++ kernel).
PIVOT_TOL = 1e-12


def too_few_message(i: int, m: int, L: int) -> str:
    """The refusal of a curve with fewer samples than basis functions and no penalty (also the C++ text)."""
    return (f"curve {i} has {m} samples, fewer than the {L} basis functions, and there is no penalty: pass "
            f"smoothing > 0 (a roughness penalty) or use fewer basis functions")


def singular_message(i: int) -> str:
    """The refusal of a curve whose penalised normal equations are singular (also the C++ text)."""
    return (f"curve {i}: the least-squares system is singular (its samples leave some basis functions without "
            f"support); pass smoothing > 0 (a roughness penalty) or use fewer basis functions")


def _cholesky_solve(A: np.ndarray, rhs: np.ndarray, i: int) -> np.ndarray:
    scale = max(float(np.max(np.diag(A))), np.finfo(float).tiny)
    try:
        Lc = np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        raise ValueError(singular_message(i)) from None
    if np.min(np.diag(Lc)) ** 2 <= PIVOT_TOL * scale:
        raise ValueError(singular_message(i))
    y = np.linalg.solve(Lc, rhs)
    return np.linalg.solve(Lc.T, y)


def coefficients_reference(curves: PackedCurves, basis, penalty: np.ndarray | None = None, *,
                           projection: np.ndarray | None = None, mean: np.ndarray | None = None) -> np.ndarray:
    r"""Per-curve coefficients :math:`(\Phi_i^\top\Phi_i + P)^{-1}\Phi_i^\top r_i`, one curve at a time.

    Parameters
    ----------
    curves : PackedCurves
        Checked curves (:func:`fastnips.functional.check_curves`).
    basis : BSplineBasis or FourierBasis
        The basis :math:`B` with ``K`` functions.
    penalty : ndarray, shape (L, L), optional
        :math:`P` (symmetric, positive semi-definite); None for plain least squares.
    projection : ndarray, shape (K, L), optional
        :math:`V`; None for the identity (``L = K``).
    mean : ndarray, shape (K,), optional
        :math:`\mu`, coefficients in ``basis`` of a function subtracted from every curve.

    Returns
    -------
    ndarray, shape (n_curves, L)
    """
    L = basis.n_basis if projection is None else projection.shape[1]
    P = np.zeros((L, L)) if penalty is None else np.asarray(penalty, dtype=np.float64)
    penalised = bool(np.any(P != 0))
    out = np.empty((curves.n_curves, L))
    for i in range(curves.n_curves):
        t, x = curves.curve(i)
        if not penalised and len(t) < L:
            raise ValueError(too_few_message(i, len(t), L))
        B = basis.evaluate(t)
        r = x if mean is None else x - B @ mean
        Phi = B if projection is None else B @ projection
        out[i] = _cholesky_solve(Phi.T @ Phi + P, Phi.T @ r, i)
    return out
