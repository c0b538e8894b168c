r"""Deep scalar-on-function regression on irregular grids (NeurIPS 2026, paper 14; a reconstruction from the
abstract: every choice it leaves open is stated where it is made).

A curve observed at its own times :math:`t_{i1} < \dots < t_{im_i}` is turned into :math:`K` basis coefficients
by penalised least squares on its own samples; a network on the coefficients predicts the scalar response.

* :class:`BSplineBasis`, :class:`FourierBasis` -- the fixed bases (scikit-fda's conventions), with design
  matrices and roughness penalties :math:`R = \int \phi^{(q)} \phi^{(q)\top}`.
* :func:`curve_coefficients` -- :math:`\hat c_i = (\Phi_i^\top\Phi_i + \lambda R)^{-1}\Phi_i^\top x_i` for every
  curve; backends ``cpp`` (C++, OpenMP over curves) and ``reference`` (numpy).
* :class:`FPCA` -- principal components from a pooled covariance; the scores (BLUP) as coefficients.
* :class:`PackedCurves`, :func:`pack_curves`, :func:`as_packed`, :func:`check_curves` -- the packed (CSR-like)
  form for millions of curves, from lists of ``(t_i, x_i)`` or scikit-fda's ``FDataGrid`` / ``FDataIrregular``.
* :class:`EqualWidthNet`, :class:`BottleneckNet` (torch) -- the equal-width ReLU network and the bottleneck
  (multiple-index) network of the paper.
* :class:`FunctionalRegressor` -- the scikit-learn estimator (coefficients + network; ``fit / predict / score``).
* :func:`gaussian_process_curves`, :func:`functional_linear_response`, :func:`multiple_index_response` --
  synthetic curves with controlled irregularity and responses with a known truth.
"""

from __future__ import annotations

from .basis import BSplineBasis, FourierBasis
from .coefficients import FUNCTIONAL_BACKENDS, curve_coefficients
from .curves import PackedCurves, as_packed, check_curves, pack_curves
from .fpca import FPCA
from .synthetic import functional_linear_response, gaussian_process_curves, multiple_index_response

__all__ = ["FPCA", "FUNCTIONAL_BACKENDS", "BSplineBasis", "FourierBasis", "PackedCurves", "as_packed", "check_curves",
           "curve_coefficients", "functional_linear_response", "gaussian_process_curves", "multiple_index_response",
           "pack_curves"]

# torch models and the estimator, loaded on first use so that `import fastnips.functional` does not import torch
_LAZY = {"EqualWidthNet": ".networks", "BottleneckNet": ".networks", "FunctionalRegressor": ".estimator"}
__all__ += list(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
