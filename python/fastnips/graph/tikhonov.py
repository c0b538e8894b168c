"""Deprecated import path: ``fastnips.graph.tikhonov`` was split along the seams of the algorithm.

* :mod:`fastnips.graph.polynomial` -- the filter polynomial (:func:`evaluate_polynomial`,
  :func:`chebyshev_coefficients`, p(L) applied by the Chebyshev recurrence);
* :mod:`fastnips.graph.solve` -- :func:`tikhonov_solve` and :class:`TikhonovInfo`;
* :mod:`fastnips.graph.factor` -- :func:`tikhonov_factorize` and :class:`TikhonovFactor` (sparse direct and
  batched dense Cholesky);
* :mod:`fastnips.graph.checks` -- argument validation, methods and their backends.

Import the public names from :mod:`fastnips.graph`; every name this module had still resolves here, with a
``DeprecationWarning`` naming its new home.
"""

from __future__ import annotations

from .. import _backend, _optional  # noqa: F401  (module attributes of the old path)
from .._compat import moved

_MOVED = {
    "checks": ("METHODS", "METHOD_BACKENDS", "DENSE_AUTO_MAX_NODES", "DEFAULT_TOL", "_Blocks", "_as_csr",
               "_batch_blocks", "_check_basis", "_checked_key", "_coefficients", "_component_blocks", "_graph_ids",
               "_mark_checked", "_max_fill", "_maxiter", "_pick_method", "_to_numpy", "_tolerance", "_weights"),
    "polynomial": ("chebyshev_coefficients", "evaluate_polynomial", "_check_polynomial", "_chebyshev_sum",
                   "_degree", "_extrema_on_interval"),
    "solve": ("TikhonovInfo", "tikhonov_solve", "_finish", "_relative_residuals", "_solve_on_device",
              "_DIAGONAL_AUTO"),
    "factor": ("DEFAULT_MAX_FILL", "TikhonovFactor", "tikhonov_factorize", "_poly_nnz_bound", "_factorize",
               "_sparse_cholesky", "_FILL_CHUNK"),
    "reference": ("BASES", "dense_block_factors_reference", "dense_block_solve_reference",
                  "evaluate_polynomial_reference", "monomial_coefficients", "monomial_to_bernstein",
                  "tikhonov_solve_reference"),
}
_HOME = {name: module for module, names in _MOVED.items() for name in names}


__getattr__ = moved(__name__, {name: f"fastnips.graph.{module}" for name, module in _HOME.items()})


def __dir__():
    return sorted(set(globals()) | set(_HOME))
