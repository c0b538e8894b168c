r"""Graph learning: the generalised Tikhonov layer (arXiv 2605.28578) and what it stands on.

* :func:`normalized_laplacian` -- :math:`L = I - D^{-1/2} A D^{-1/2}` from a PyG ``edge_index``.
* :func:`tikhonov_solve` -- :math:`Y = (p(L) + \mathrm{diag}(q))^{-1} \mathrm{diag}(q) X`, the exact
  minimiser of :math:`z^\top p(L) z + (z - x)^\top Q (z - x)` per column; backends ``cpp`` (block
  Jacobi-preconditioned CG, OpenMP) and ``reference`` (scipy).
* :func:`evaluate_polynomial`, :func:`chebyshev_coefficients` -- the filter polynomial p on [0, 2].
"""

from __future__ import annotations

from .laplacian import normalized_laplacian
from .tikhonov import TikhonovInfo, chebyshev_coefficients, evaluate_polynomial, tikhonov_solve

__all__ = ["TikhonovInfo", "chebyshev_coefficients", "evaluate_polynomial", "normalized_laplacian",
           "tikhonov_solve"]
