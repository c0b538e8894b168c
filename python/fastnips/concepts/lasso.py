r"""The per-instance baseline: a non-negative lasso decomposition of every embedding over the concept dictionary
(the instance-level optimisation of SpLiCE-style methods that GRACE replaces with one global map),

.. math:: a^\star(x) = \arg\min_{a \ge 0}\; \tfrac12 \lVert x - C^\top a \rVert^2 + \lambda\, \mathbf{1}^\top a,

solved for a whole batch at once by FISTA with the projection onto :math:`a \ge 0` (step :math:`1 / L`,
:math:`L = \lambda_{\max}(C C^\top)`), stopped when the largest change of a coefficient in one step is below
``tol`` times the step (a fixed-point residual) or after ``max_iter`` steps. In scikit-learn's convention this is
``Lasso(alpha=lam / d, positive=True, fit_intercept=False)`` on the design :math:`C^\top` (d "samples"), which the
tests check it against.
"""

from __future__ import annotations

import numpy as np
import torch


def nonneg_lasso(X: torch.Tensor | np.ndarray, C: torch.Tensor | np.ndarray, lam: float, *, max_iter: int = 2000,
                 tol: float = 1e-7) -> torch.Tensor:
    r"""Non-negative lasso codes of every row of X over the rows of C (module docstring).

    Parameters
    ----------
    X : array or tensor, shape (N, d)
        Embeddings.
    C : array or tensor, shape (K, d)
        Concept dictionary (one concept per row).
    lam : float
        :math:`\lambda \ge 0`.
    max_iter : int, default 2000
    tol : float, default 1e-7
        Stop when :math:`\max |a^{t+1} - a^t| \le \mathrm{tol} \cdot \max(1, \max |a^t|)`.

    Returns
    -------
    torch.Tensor, shape (N, K)
        Non-negative codes, in X's dtype (float64 for numpy input).

    Examples
    --------
    >>> import torch
    >>> C = torch.eye(3, dtype=torch.float64); X = torch.tensor([[2.0, -1.0, 0.5]], dtype=torch.float64)
    >>> nonneg_lasso(X, C, 0.5)  # soft-threshold, then clip at 0
    tensor([[1.5000, 0.0000, 0.0000]], dtype=torch.float64)
    """
    X = torch.as_tensor(X)
    C = torch.as_tensor(C, dtype=X.dtype, device=X.device)
    if X.dim() != 2 or C.dim() != 2 or X.shape[1] != C.shape[1]:
        raise ValueError(f"X (N, d) and C (K, d) must share d, got {tuple(X.shape)} and {tuple(C.shape)}")
    if not lam >= 0:
        raise ValueError(f"lam must be >= 0, got {lam!r}")
    if not isinstance(max_iter, int) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")
    G = C @ C.T
    L = float(torch.linalg.eigvalsh(G)[-1]) if C.shape[0] else 1.0
    step = 1.0 / max(L, 1e-12)
    b = X @ C.T  # C x for every row
    a = torch.zeros(X.shape[0], C.shape[0], dtype=X.dtype, device=X.device)
    y, t = a, 1.0
    for _ in range(max_iter):
        a_new = torch.clamp(y - step * (y @ G - b + lam), min=0)
        t_new = (1 + (1 + 4 * t * t) ** 0.5) / 2
        y = a_new + ((t - 1) / t_new) * (a_new - a)
        done = float((a_new - a).abs().max()) <= tol * max(1.0, float(a.abs().max())) if a.numel() else True
        a, t = a_new, t_new
        if done:
            break
    return a
