r"""Per-curve basis coefficients of irregularly sampled curves: the public entry point and its dispatch.

The first step of deep scalar-on-function regression ("represents each functional covariate by finitely many
basis coefficients computed from the observed trajectories", NeurIPS 2026, paper 14): for every curve
separately,

.. math:: \hat c_i = \arg\min_{c \in \mathbb{R}^K} \sum_{j=1}^{m_i} \Big(x_{ij} - \sum_k c_k \phi_k(t_{ij})\Big)^2
          + \lambda\, c^\top R\, c, \qquad R_{kl} = \int \phi_k^{(q)} \phi_l^{(q)},

i.e. :math:`\hat c_i = (\Phi_i^\top\Phi_i + \lambda R)^{-1}\Phi_i^\top x_i` with the curve's own design matrix
:math:`\Phi_i`. This is scikit-fda's ``BasisSmoother`` / ``FDataGrid.to_basis`` objective with
``smoothing_parameter = lambda`` and ``L2Regularization(LinearDifferentialOperator(q))`` (the sum of squares is
not divided by :math:`m_i`, as there), applied to each curve at its own times.

Backends: ``reference`` (numpy, one curve at a time, :mod:`fastnips.functional.reference`) and ``cpp``
(``csrc/functional``: the banded B-spline or Fourier design built per curve, the normal equations accumulated
and solved by Cholesky, curves spread over OpenMP threads).
"""

from __future__ import annotations

import numpy as np

from .. import _backend
from .basis import BSplineBasis, FourierBasis
from .curves import CurvesLike, PackedCurves, as_packed, check_curves, check_structure
from .reference import coefficients_reference, singular_message, too_few_message

__all__ = ["FUNCTIONAL_BACKENDS", "curve_coefficients"]

FUNCTIONAL_BACKENDS = ("reference", "cpp")

# the per-curve codes of the C++ kernel (csrc/functional/coefficients.h, CurveCode)
_CODE_BAD_SAMPLES = (1, 2, 3, 4)  # empty, not finite, not increasing, outside the domain
_CODE_TOO_FEW, _CODE_SINGULAR = 5, 6


def _check_basis(basis) -> None:
    if not isinstance(basis, BSplineBasis | FourierBasis):
        raise TypeError(f"basis must be a BSplineBasis or FourierBasis, got {type(basis).__name__}")


def _check_scalar(name: str, value, *, integer: bool = False, lo: float = 0.0) -> None:
    ok = isinstance(value, int | np.integer) if integer else isinstance(value, int | float | np.number)
    if not ok or not np.isfinite(value) or value < lo:
        kind = "an integer" if integer else "a finite number"
        raise ValueError(f"{name} must be {kind} >= {lo:g}, got {value!r}")


def penalty_for(basis, smoothing: float, derivative: int) -> np.ndarray | None:
    r""":math:`\lambda R` of the roughness penalty (None when ``smoothing == 0``)."""
    _check_scalar("smoothing", smoothing)
    _check_scalar("derivative", derivative, integer=True)
    return None if smoothing == 0 else float(smoothing) * basis.penalty_matrix(int(derivative))


def curve_coefficients(curves: CurvesLike, basis: BSplineBasis | FourierBasis, *, smoothing: float = 0.0,
                       derivative: int = 2, backend: str = "auto", n_threads: int = 0) -> np.ndarray:
    r"""Basis coefficients of every curve, each from its own samples (penalised least squares).

    .. math:: \hat c_i = (\Phi_i^\top \Phi_i + \lambda R)^{-1} \Phi_i^\top x_i, \qquad
              (\Phi_i)_{jk} = \phi_k(t_{ij}), \quad R_{kl} = \int_a^b \phi_k^{(q)}\phi_l^{(q)}\,dt.

    Parameters
    ----------
    curves : list of (t_i, x_i), PackedCurves, (offsets, t, x), FDataGrid or FDataIrregular
        The curves; times strictly increasing within each curve and inside ``basis.domain_range``.
    basis : BSplineBasis or FourierBasis
        The :math:`K` functions :math:`\phi_k`.
    smoothing : float
        :math:`\lambda \geq 0`; 0 is plain least squares (then every curve needs at least :math:`K` samples).
    derivative : int
        :math:`q`, the derivative in the roughness penalty (2: curvature).
    backend : {"auto", "reference", "cpp"}
        ``auto`` picks ``cpp`` when the native core is built.
    n_threads : int
        OpenMP threads of the ``cpp`` backend (0: OpenMP's default).

    Returns
    -------
    ndarray, shape (n_curves, K)

    Raises
    ------
    ValueError
        Naming the curve: empty, times not strictly increasing (unsorted or duplicate), NaN/inf, a time outside
        the domain, fewer samples than basis functions without a penalty, or a singular system.

    Examples
    --------
    >>> t = np.linspace(0, 1, 30)
    >>> c = curve_coefficients([(t, np.sin(2 * np.pi * t))], FourierBasis(3, (0.0, 1.0)))
    >>> (np.round(c, 6) + 0.0).tolist()  # constant, sin, cos: 1/sqrt(2) on sin (the basis has norm 1)
    [[0.0, 0.707107, 0.0]]
    """
    _check_basis(basis)
    P = penalty_for(basis, smoothing, derivative)
    return solve_coefficients(curves, basis, P, backend=backend, n_threads=n_threads)


def solve_coefficients(curves: CurvesLike, basis: BSplineBasis | FourierBasis, penalty: np.ndarray | None, *,
                       projection: np.ndarray | None = None, mean: np.ndarray | None = None,
                       backend: str = "auto", n_threads: int = 0) -> np.ndarray:
    r""":math:`(\Phi_i^\top\Phi_i + P)^{-1}\Phi_i^\top (x_i - B_i\mu)` with :math:`\Phi_i = B_i V` for every curve
    (see :func:`fastnips.functional.reference.coefficients_reference` for the arguments), on ``backend``."""
    _check_basis(basis)
    _check_scalar("n_threads", n_threads, integer=True)
    chosen = _backend.resolve(backend, op="curve_coefficients", supported=FUNCTIONAL_BACKENDS)
    if chosen == "reference":
        packed = as_packed(curves, check=False)
        check_curves(packed, basis.domain_range)
        return coefficients_reference(packed, basis, penalty, projection=projection, mean=mean)
    packed = as_packed(curves, check=False)
    check_structure(packed)
    return _coefficients_cpp(packed, basis, penalty, projection, mean, int(n_threads))


def _coefficients_cpp(packed: PackedCurves, basis, penalty, projection, mean, n_threads: int) -> np.ndarray:
    C = _backend.native()
    K = basis.n_basis
    L = K if projection is None else projection.shape[1]
    P = np.zeros((L, L)) if penalty is None else np.ascontiguousarray(penalty, dtype=np.float64)
    V = np.zeros((0, 0)) if projection is None else np.ascontiguousarray(projection, dtype=np.float64)
    mu = np.zeros(0) if mean is None else np.ascontiguousarray(mean, dtype=np.float64)
    if basis.kind == "bspline":
        kind, params, order = 0, basis.knots, basis.order
    else:
        kind, params, order = 1, np.array([basis.period]), 0
    coef, codes = C.functional_coefficients(packed.offsets, packed.t, packed.x, kind, params, order, K,
                                            basis.domain_range[0], basis.domain_range[1], P, V, mu, n_threads)
    bad = np.flatnonzero(codes)
    if bad.size:  # as the reference: the samples of every curve first, then the solves
        samples = bad[np.isin(codes[bad], _CODE_BAD_SAMPLES)]
        i = int(samples[0] if samples.size else bad[0])
        _raise_for_curve(packed, basis, i, int(codes[i]), L)
    return coef


def _raise_for_curve(packed: PackedCurves, basis, i: int, code: int, L: int) -> None:
    """The reference's message for curve ``i``, which the C++ kernel refused with ``code``."""
    if code in _CODE_BAD_SAMPLES:
        lo, hi = packed.offsets[i], packed.offsets[i + 1]
        one = PackedCurves(np.array([0, hi - lo]), packed.t[lo:hi], packed.x[lo:hi])
        check_curves(one, basis.domain_range, first_index=i)
    if code == _CODE_TOO_FEW:
        raise ValueError(too_few_message(i, int(packed.offsets[i + 1] - packed.offsets[i]), L))
    if code == _CODE_SINGULAR:
        raise ValueError(singular_message(i))
    raise RuntimeError(f"curve_coefficients: the native kernel refused curve {i} with unknown code {code}")
