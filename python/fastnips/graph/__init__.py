r"""Graph learning: the generalised Tikhonov layer (arXiv 2605.28578) and what it stands on.

* :func:`normalized_laplacian` -- :math:`L = I - D^{-1/2} A D^{-1/2}` from a PyG ``edge_index``.
* :func:`tikhonov_solve` -- :math:`Y = (p(L) + \mathrm{diag}(q))^{-1} \mathrm{diag}(q) X`, the exact
  minimiser of :math:`z^\top p(L) z + (z - x)^\top Q (z - x)` per column; backends ``cpp`` (block
  Jacobi-preconditioned CG, OpenMP) and ``reference`` (scipy).
* :func:`evaluate_polynomial`, :func:`chebyshev_coefficients` -- the filter polynomial p on [0, 2].
* :class:`TikhonovProp`, :func:`tikhonov_prop` -- the layer as a torch module / function: forward one
  solve, backward one adjoint solve with the same operator (never unrolled); learnable Bernstein
  coefficients on the simplex.
* :class:`TikhonovGNN` -- GIN Q-network producing q > 0, one Tikhonov layer, readout; node or graph tasks,
  PyG-style ``(x, edge_index, batch)`` or a PyG ``Data``/``Batch`` object.
"""

from __future__ import annotations

from .laplacian import normalized_laplacian
from .tikhonov import TikhonovInfo, chebyshev_coefficients, evaluate_polynomial, tikhonov_solve

__all__ = ["TikhonovInfo", "chebyshev_coefficients", "evaluate_polynomial", "normalized_laplacian",
           "tikhonov_solve"]

# torch layers, loaded on first use so that `import fastnips.graph` does not import torch
_LAZY = {"TikhonovProp": ".layers", "tikhonov_prop": ".layers", "TikhonovGNN": ".models"}
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
