r"""Graph learning: the generalised Tikhonov layer (arXiv 2605.28578) and what it stands on.

* :func:`normalized_laplacian` -- :math:`L = I - D^{-1/2} A D^{-1/2}` from a PyG ``edge_index``.
* :func:`tikhonov_solve` -- :math:`Y = (p(L) + \mathrm{diag}(q))^{-1} \mathrm{diag}(q) X`, the exact
  minimiser of :math:`z^\top p(L) z + (z - x)^\top Q (z - x)` per column; methods ``cg`` (matrix-free;
  backends ``cpp``: block Jacobi-preconditioned CG, OpenMP; ``triton`` / ``cuda``: the same CG on a torch
  device, :mod:`fastnips.graph._device`; and ``reference``: scipy), ``direct`` (sparse
  Cholesky: CHOLMOD or SuperLU) and ``dense`` (batched dense Cholesky per graph of a PyG batch; cpp and
  reference).
* :func:`tikhonov_factorize`, :class:`TikhonovFactor` -- factorise :math:`p(L) + \mathrm{diag}(q)` once
  (``direct`` or ``dense``), then solve forward and adjoint right-hand sides with it.
* :func:`evaluate_polynomial`, :func:`chebyshev_coefficients` -- the filter polynomial p on [0, 2].
* :class:`TikhonovProp`, :func:`tikhonov_prop` -- the layer as a torch module / function: forward one
  solve, backward one adjoint solve with the same operator (never unrolled; with ``direct``/``dense`` the
  forward's factor is reused); learnable Bernstein coefficients on the simplex.
* :class:`TikhonovConv` -- the layer with a Q-network, called as PyG's APPNP: ``conv(x, edge_index,
  edge_weight)``; differentiable in the edge weights (PyG's edge-mask explainers work on it).
* :class:`TikhonovGNN` -- GIN Q-network producing q > 0, one Tikhonov layer, readout; node or graph tasks,
  PyG-style ``(x, edge_index, batch)`` or a PyG ``Data``/``Batch`` object; ``model.explain(...)``.
* :class:`Explanation`, :func:`explain_tikhonov`, :func:`filter_reading` -- the explanation (q per node,
  the curve p on [0, 2] and its reading, rows of R); :func:`plot_explanation` draws it (matplotlib);
  :func:`explanation_auroc` scores q against ground-truth important nodes.
* :mod:`fastnips.graph.baselines` -- GCN, GIN, APPNP in plain torch, the peers of the evaluation.
"""

from __future__ import annotations

from .factor import TikhonovFactor, tikhonov_factorize
from .laplacian import normalized_laplacian
from .polynomial import chebyshev_coefficients, evaluate_polynomial
from .solve import TikhonovInfo, tikhonov_solve

__all__ = ["TikhonovFactor", "TikhonovInfo", "chebyshev_coefficients", "evaluate_polynomial", "normalized_laplacian",
           "tikhonov_factorize", "tikhonov_solve"]

# torch layers, loaded on first use so that `import fastnips.graph` does not import torch
_LAZY = {"TikhonovProp": ".layers", "tikhonov_prop": ".layers", "TikhonovGNN": ".models", "TikhonovConv": ".conv"}
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

# explanations (numpy only at import; matplotlib is imported inside plot_explanation)
from .explain import (  # noqa: E402
    Explanation,
    explain_tikhonov,
    explanation_auroc,
    filter_reading,
    plot_explanation,
    spring_layout,
)

__all__ += ["Explanation", "explain_tikhonov", "explanation_auroc", "filter_reading", "plot_explanation",
            "spring_layout"]
