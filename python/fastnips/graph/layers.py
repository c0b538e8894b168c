r"""The Tikhonov propagation layer for torch: :func:`tikhonov_prop` and the module :class:`TikhonovProp`.

.. math:: \mathrm{TikhonovProp}(X) = (p_\theta(L) + Q)^{-1} Q X, \qquad
          p_\theta(\lambda) = \sum_{k=0}^K \theta_k \binom{K}{k} (\lambda/2)^k (1 - \lambda/2)^{K-k},

one solve forward (:func:`fastnips.graph.tikhonov_solve`) and **one adjoint solve with the same operator**
backward (implicit differentiation, :mod:`fastnips.graph._implicit`; never an unrolled iteration).
This module imports torch; :mod:`fastnips.graph` loads it only on first use of one of these names.
Paper: Tremblay, Ricaud, Bianchi, "A Generalized Tikhonov Layer for Interpretable-by-design Graph Neural
Networks" (arXiv 2605.28578).
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
import torch
from numpy.typing import ArrayLike
from torch import nn

from .. import _backend
from .._finite import all_finite
from ._implicit import _TikhonovDeviceFn, _TikhonovSolveFn
from ._pattern import LaplacianCache
from .checks import (
    DEVICE_BACKENDS,
    METHODS,
    SOLVE_BACKENDS,
    _as_csr,
    _check_basis,
    _graph_ids,
    _method_check,
    _pick_method,
)
from .laplacian import normalized_laplacian

__all__ = ["SCALES", "TikhonovProp", "tikhonov_prop"]

#: Parametrisations of the learnable coefficients of :class:`TikhonovProp`.
SCALES = ("simplex", "softplus")
#: Initial shapes of the filter polynomial of :class:`TikhonovProp`.
INITS = ("lowpass", "uniform")


# ---------------------------------------------------------------------------------------------------
# input checks shared by the functional and the modules


def _check_tensor(name: str, t) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch tensor, got {type(t).__name__}")
    if not t.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {t.dtype}")
    return t


def _check_tol(name: str, tol):
    if tol is None:
        return None
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not 0.0 < float(tol) < 1.0:
        raise ValueError(f"{name} must be None or a float in (0, 1), got {tol!r}")
    return float(tol)


def _as_index(name: str, a, *, ndim: int) -> np.ndarray:
    arr = a.detach().cpu().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    if arr.ndim != ndim:
        shape = "(2, E)" if ndim == 2 else "(num_nodes,)"
        raise ValueError(f"{name} must have shape {shape}, got {tuple(arr.shape)}")
    return arr.astype(np.int64, copy=False)


def check_batch(batch, edge_index: np.ndarray | None, n: int) -> np.ndarray:
    """Validate a PyG batch vector (graph id per node) against n and the edges; returns it as int64 numpy."""
    b = _graph_ids(batch, n)
    if edge_index is not None and edge_index.shape[1]:
        src, dst = edge_index
        if src.max(initial=-1) < n and dst.max(initial=-1) < n and src.min() >= 0 and dst.min() >= 0:
            cross = b[src] != b[dst]
            if cross.any():
                e = int(np.flatnonzero(cross)[0])
                raise ValueError(
                    f"batch does not match edge_index: edge {e} = ({src[e]}, {dst[e]}) joins graph {b[src[e]]} "
                    f"to graph {b[dst[e]]}; a block-diagonal batch has no edge between two graphs")
    return b


def graph_operator(n: int, *, edge_index=None, L=None, num_nodes=None, edge_weight=None, batch=None,
                   dtype=np.float64) -> sp.csr_matrix:
    """The validated CSR Laplacian from either ``L`` or ``edge_index`` (+ ``num_nodes``), for n nodes."""
    if (edge_index is None) == (L is None):
        raise ValueError("pass exactly one of edge_index (a PyG edge list) or L (a normalized Laplacian)")
    if L is not None:
        if num_nodes is not None or edge_weight is not None:
            raise ValueError("num_nodes and edge_weight go with edge_index, not with L")
        Lc = _as_csr(L, np.dtype(dtype))
        if Lc.shape[0] != n:
            raise ValueError(f"L has shape {Lc.shape} but x has {n} rows (one per node)")
        if batch is not None:
            C = Lc.tocoo()
            check_batch(batch, np.stack([C.row, C.col]).astype(np.int64), n)
        return Lc
    ei = _as_index("edge_index", edge_index, ndim=2)
    if ei.shape[0] != 2:
        raise ValueError(f"edge_index must have shape (2, E), got {tuple(ei.shape)}")
    if num_nodes is None:
        num_nodes = n
    elif isinstance(num_nodes, bool) or not isinstance(num_nodes, numbers.Integral) or num_nodes != n:
        raise ValueError(f"num_nodes = {num_nodes!r} but x has {n} rows (one per node)")
    if batch is not None:
        check_batch(batch, ei if (ei.size == 0 or (ei.min() >= 0 and ei.max() < n)) else None, n)
    w = edge_weight.detach().cpu() if isinstance(edge_weight, torch.Tensor) else edge_weight
    return _as_csr(normalized_laplacian(ei, int(num_nodes), w), np.dtype(dtype))


def _edge_list(edge_index, n: int) -> np.ndarray:
    """A validated PyG edge list as int64 numpy: shape (2, E), node ids in [0, n)."""
    ei = _as_index("edge_index", edge_index, ndim=2)
    if ei.shape[0] != 2:
        raise ValueError(f"edge_index must have shape (2, E), got {tuple(ei.shape)}")
    if ei.size and (ei.min() < 0 or ei.max() >= n):
        e = int(np.flatnonzero(((ei < 0) | (ei >= n)).any(axis=0))[0])
        raise ValueError(f"edge_index: edge {e} = ({ei[0, e]}, {ei[1, e]}) has a node id outside [0, num_nodes) = "
                         f"[0, {n})")
    return ei


def _check_q_given(q, edge_index, L) -> None:
    """The error of ``TikhonovProp()(x, edge_index)``: an edge list where q belongs."""
    looks_like_edges = (isinstance(q, torch.Tensor) and not q.is_floating_point() and q.dim() == 2
                        and q.shape[0] == 2) or (isinstance(q, np.ndarray) and q.ndim == 2 and q.shape[0] == 2)
    if looks_like_edges or (edge_index is None and L is None and not isinstance(q, numbers.Real | torch.Tensor)):
        got = f"an integer array of shape {tuple(q.shape)}" if looks_like_edges else type(q).__name__
        raise TypeError(
            f"TikhonovProp.forward(x, q, edge_index): the node weights q (shape (n,), > 0) are missing; the second "
            f"argument is {got}, which looks like edge_index. Pass q, e.g. prop(x, q, edge_index), or use "
            "TikhonovConv(...)(x, edge_index, edge_weight), which computes q with a Q-network")


def _check_signals(x: torch.Tensor, q, n_rows: int | None = None):
    x = _check_tensor("x", x)
    if x.dim() not in (1, 2):
        raise ValueError(f"x must have shape (n,) or (n, F), got {tuple(x.shape)}")
    n = x.shape[0] if n_rows is None else n_rows
    if isinstance(q, numbers.Real) and not isinstance(q, bool):
        q = torch.full((n,), float(q), dtype=x.dtype, device=x.device)
    q = _check_tensor("q", q)
    if q.dim() == 0:
        q = q.expand(n)
    if q.shape != (n,):
        raise ValueError(f"q must have shape ({n},) (one weight per node of x) or be a scalar, got {tuple(q.shape)}")
    if not torch.isfinite(q).all():
        raise ValueError("q contains NaN or inf")
    if n and not (q > 0).all():
        i = int(torch.argmin(q))
        raise ValueError(f"q must be > 0 everywhere (q[{i}] = {float(q[i])!r}); R = (p(L) + Q)^-1 Q needs Q "
                         "positive definite (a Q-network should output softplus(.) + q_min)")
    return x, q


# ---------------------------------------------------------------------------------------------------
# public functional


def tikhonov_prop(x: torch.Tensor, q: torch.Tensor | float, coeffs: torch.Tensor,
                  L: sp.spmatrix | sp.sparray | ArrayLike, *, basis: str = "bernstein", backend: str = "auto",
                  tol: float | None = None, backward_tol: float | None = None, method: str = "auto",
                  batch: ArrayLike | None = None):
    r"""Differentiable Tikhonov propagation :math:`Y = (p(L) + \mathrm{diag}(q))^{-1} \mathrm{diag}(q)\, X`.

    .. math:: y_{:,f} = \arg\min_z\; z^\top p(L) z + (z - x_{:,f})^\top Q (z - x_{:,f}), \qquad
              A = p(L) + Q, \quad A Y = Q X.

    **Gradients by implicit differentiation.** With upstream gradient :math:`G = \partial \ell / \partial Y`,
    one adjoint solve :math:`A \Lambda = G` with the *same* symmetric operator (it is one more call of
    :func:`fastnips.graph.tikhonov_solve`, with right-hand side :math:`Q^{-1} G`) gives

    .. math:: \frac{\partial \ell}{\partial X} = Q \Lambda, \qquad
              \frac{\partial \ell}{\partial q_i} = \sum_f \Lambda_{if} (X_{if} - Y_{if}), \qquad
              \frac{\partial \ell}{\partial \theta_k} = -\sum_f \lambda_f^\top B_k(L)\, y_f,

    from differentiating :math:`A Y = Q X`: :math:`dY = A^{-1}(dQ\,(X - Y) + Q\, dX - dP\, Y)`. The last
    term is evaluated as :math:`-C^\top s` with :math:`s_j = \sum_f \lambda_f^\top T_j(L - I)\, y_f`
    (K sparse products by the Chebyshev recurrence) and C the linear map from the coefficients in
    ``basis`` to Chebyshev coefficients on [0, 2] (:func:`fastnips.graph.chebyshev_coefficients`), which
    stays well conditioned at any K. The solver is never unrolled: memory is O(nF) whatever the number
    of CG iterations. Second derivatives are not supported (``once_differentiable``).

    **Solve methods** (``method``, see :func:`fastnips.graph.tikhonov_solve`): with ``"cg"`` forward and
    backward each run a matrix-free CG solve. With ``"direct"`` (sparse Cholesky) or ``"dense"`` (batched
    dense Cholesky, one block per graph) forward factorises :math:`A` once
    (:func:`fastnips.graph.tikhonov_factorize`) and backward reuses that factor for the adjoint solve:
    two triangular solves, no second factorisation. ``"auto"`` picks ``"dense"`` when ``batch`` is given
    and every graph has at most 256 nodes, else ``"cg"``.

    Parameters
    ----------
    x : torch.Tensor, shape (n,) or (n, F), floating point
        Signals, one column per channel; every column sees the same operator R. float64 is computed in
        float64 and float32 in float32; other floating dtypes (half, bfloat16) are computed in float32
        and cast back.
    q : torch.Tensor, shape (n,), or a scalar
        Node weights, finite and > 0 (``ValueError`` otherwise).
    coeffs : torch.Tensor, shape (K + 1,)
        :math:`\theta` in ``basis``; Bernstein coefficients must be >= 0 and a monomial p must be >= 0 on
        [0, 2] (checked by :func:`fastnips.graph.tikhonov_solve`, ``ValueError`` otherwise).
    L : scipy.sparse matrix, numpy array or torch tensor, shape (n, n)
        A normalized Laplacian (e.g. :func:`fastnips.graph.normalized_laplacian`); checked symmetric
        with diagonal in [0, 2]. For a batch of graphs, the block-diagonal Laplacian of the batch.
    basis : {"bernstein", "monomial"}, default "bernstein"
    backend : str, default "auto"
        Passed to :func:`fastnips.graph.tikhonov_solve` (``"cpp"``, ``"reference"``, ``"auto"``).
    tol : float, optional
        Relative residual of the forward solve, :math:`\|q \circ x - A y\|_2 \le \mathrm{tol}\, \|q \circ x\|_2`
        per column (default: 1e-11 in float64, 1e-6 in float32; see :func:`fastnips.graph.tikhonov_solve`).
    backward_tol : float, optional
        Relative residual of the adjoint solve (default: ``tol``). Gradient errors are about
        :math:`\kappa(A)` times this; use 1e-12 in float64 for ``torch.autograd.gradcheck``.
        ``tol`` and ``backward_tol`` matter for ``"cg"`` only (the factorisations are exact to rounding).
    method : {"auto", "cg", "direct", "dense"}, default "auto"
        The solve method (above). ``"dense"`` factorises in x's precision with the cpp backend;
        ``"direct"`` and the reference backend in float64.
    batch : torch.Tensor or array of int, shape (n,), optional
        PyG graph id per node (L block-diagonal for it; checked). Selects ``"dense"`` under ``"auto"``
        (graphs of at most 256 nodes) and gives its blocks; without it ``"dense"`` uses the connected
        components of L.

    Returns
    -------
    torch.Tensor, shape and dtype of x, on x's device

    Notes
    -----
    Where the solves run: with ``backend="triton"`` or ``"cuda"``, or ``"auto"`` and a CUDA tensor x
    (where the Triton or CUDA kernels are available), on x's device -- forward and adjoint CG solves
    (:mod:`fastnips.graph._device`), the gradients in torch ops, nothing copied to the host but L's CSR
    arrays (host-built, copied per call). Otherwise on the CPU (cpp / reference; a CUDA tensor is then
    copied to the host and back, correct but two host transfers per pass).

    Examples
    --------
    >>> import torch
    >>> from fastnips.graph import normalized_laplacian, tikhonov_prop
    >>> L = normalized_laplacian(torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]]), 3)
    >>> x = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64, requires_grad=True)
    >>> y = tikhonov_prop(x, torch.ones(3, dtype=torch.float64), torch.tensor([0.0, 0.5, 1.0]), L)
    >>> y.sum().backward()
    >>> x.grad.shape
    torch.Size([3])
    """
    basis = _check_basis(basis)
    tol = _check_tol("tol", tol)
    backward_tol = _check_tol("backward_tol", backward_tol)
    x = _check_tensor("x", x)
    if x.dim() not in (1, 2):
        raise ValueError(f"x must have shape (n,) or (n, F), got {tuple(x.shape)}")
    Lc = graph_operator(x.shape[0], L=L)
    return _prop(x, q, coeffs, Lc, basis, backend, tol, backward_tol, method, batch)


def _prop(x, q, coeffs, Lc, basis, backend, tol, backward_tol, method="auto", batch=None, lvals=None):
    """tikhonov_prop after the checks of L, basis and tolerances (Lc: validated float64 CSR; lvals: its
    values as a torch tensor that requires grad, or None)."""
    ids = None if batch is None else _graph_ids(batch, Lc.shape[0])
    method = _pick_method(method, ids)
    x, q = _check_signals(x, q)
    coeffs = _check_tensor("coeffs", coeffs)
    if coeffs.dim() != 1 or coeffs.shape[0] < 1:
        raise ValueError(f"coeffs must have shape (K + 1,) with K >= 0, got {tuple(coeffs.shape)}")
    if not torch.isfinite(coeffs).all():
        raise ValueError("coeffs contains NaN or inf")
    if not all_finite(x):
        raise ValueError("x contains NaN or inf")
    # as tikhonov_solve: CG runs where x lives (a CUDA tensor picks cuda/triton), factorisations on the host
    b = _backend.resolve(backend, op="tikhonov_prop", supported=SOLVE_BACKENDS, check=_method_check(method),
                         like=x if method == "cg" else None)
    if b in DEVICE_BACKENDS:
        return _TikhonovDeviceFn.apply(x, q, coeffs, lvals, Lc, basis, b, tol, backward_tol)
    return _TikhonovSolveFn.apply(x, q, coeffs, lvals, Lc, basis, b, tol, backward_tol, method, ids)


# ---------------------------------------------------------------------------------------------------
# the module


def _inverse_softplus(t: torch.Tensor) -> torch.Tensor:
    return t + torch.log(-torch.expm1(-t))


class TikhonovProp(nn.Module):
    r"""Generalised graph Tikhonov propagation with a learnable non-negative filter polynomial.

    .. math:: \mathrm{TikhonovProp}(X; q, L) = (p_\theta(L) + Q)^{-1} Q X, \qquad
              p_\theta(\lambda) = \sum_{k=0}^K \theta_k \binom{K}{k} \Big(\frac{\lambda}{2}\Big)^k
              \Big(1 - \frac{\lambda}{2}\Big)^{K-k},

    the exact minimiser, column by column, of :math:`z^\top p_\theta(L) z + (z - x)^\top Q (z - x)`.
    The coefficients are parametrised by free parameters :math:`\varphi \in \mathbb R^{K+1}`:

    * ``scale="simplex"`` (default): :math:`\theta = \mathrm{softmax}(\varphi)`, so :math:`\theta_k > 0`
      and :math:`\sum_k \theta_k = 1`. **Why:** R is unchanged when q and p are multiplied by one common
      factor c > 0, :math:`(c\,p(L) + c\,Q)^{-1} c\,Q = R`, and this is the only ambiguity of (q, p)
      given R: a model with free scales can drift along it, and q is then only a relative importance.
      Fixing :math:`\sum_k \theta_k = 1` removes it: since the Bernstein basis is a partition of unity,
      :math:`0 \le p_\theta \le 1` on [0, 2] and each :math:`q_i` is an absolute ratio of data
      fidelity to smoothness penalty (q_i >> 1: node i keeps its own signal; q_i << 1: it takes its
      neighbourhood's). It also bounds the conditioning,
      :math:`\kappa(A) \le (1 + \max q) / \min q`.
    * ``scale="softplus"``: :math:`\theta = \mathrm{softplus}(\varphi)`, non-negative with a free scale
      (BernNet-like). (q, p) is then identifiable only up to that common scale; normalise q yourself
      (e.g. by its geometric mean) before reading it as an explanation.

    Either way :math:`\theta \ge 0`, hence :math:`p_\theta \ge 0` on [0, 2] and the minimiser property
    holds for any :math:`\varphi`. ``basis="monomial"`` uses :math:`p_\theta(\lambda) = \sum_k \theta_k
    \lambda^k` with the same parametrisations; non-negative monomial coefficients only reach
    non-decreasing p (low-pass penalties), so Bernstein is the default.

    Forward and backward are :func:`tikhonov_prop`: one sparse solve forward, one adjoint solve with
    the same operator backward (implicit differentiation, no unrolling).

    Parameters
    ----------
    K : int, default 4
        Degree of p (K + 1 coefficients), K >= 0.
    basis : {"bernstein", "monomial"}, default "bernstein"
    scale : {"simplex", "softplus"}, default "simplex"
    backend : str, default "auto"
        Solver backend (:func:`fastnips.graph.tikhonov_solve`).
    tol : float, optional
        Forward relative residual (default: 1e-11 in float64, 1e-6 in float32; :func:`tikhonov_prop`).
    backward_tol : float, optional
        Adjoint relative residual (default: ``tol``).
    method : {"auto", "cg", "direct", "dense"}, default "auto"
        Solve method (:func:`tikhonov_prop`): ``"auto"`` is the batched dense Cholesky when ``forward`` gets
        a ``batch`` whose graphs all have at most 256 nodes, else matrix-free CG. With ``"direct"`` or
        ``"dense"`` the backward reuses the forward's factorisation.
    init : {"lowpass", "uniform"} or array-like of shape (K + 1,), default "lowpass"
        Initial :math:`\theta` (normalised to sum 1 for ``"simplex"``). ``"lowpass"``:
        :math:`\theta_k \propto k + 1`, an increasing p (a smoothness penalty that grows with frequency,
        the homophilous prior); for Bernstein this is :math:`p(\lambda) \propto 1 + K\lambda/2`.
        ``"uniform"``: :math:`\theta_k` all equal, i.e. p constant (no propagation at all at start,
        since then R = Q (cI + Q)^{-1} is diagonal). An array gives :math:`\theta` itself (> 0).

    Attributes
    ----------
    phi : nn.Parameter, shape (K + 1,)
        The free parameters; :meth:`coefficients` maps them to :math:`\theta`.

    Examples
    --------
    >>> import torch
    >>> from fastnips.graph import TikhonovProp
    >>> prop = TikhonovProp(K=3)
    >>> edge_index = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    >>> y = prop(torch.randn(3, 8), torch.ones(3), edge_index)
    >>> y.shape, round(float(prop.coefficients().detach().sum()), 6)
    (torch.Size([3, 8]), 1.0)
    """

    def __init__(self, K: int = 4, basis: str = "bernstein", scale: str = "simplex", backend: str = "auto",
                 tol: float | None = None, *, backward_tol: float | None = None, init: str | ArrayLike = "lowpass",
                 method: str = "auto"):
        super().__init__()
        if isinstance(K, bool) or not isinstance(K, numbers.Integral) or K < 0:
            raise ValueError(f"K must be an int >= 0 (the degree of p), got {K!r}")
        if scale not in SCALES:
            raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
        if not isinstance(backend, str):
            raise TypeError(f"backend must be a str, got {type(backend).__name__}")
        if not isinstance(method, str) or method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        self.K, self.basis, self.scale, self.backend = int(K), _check_basis(basis), scale, backend
        self.method = method
        self.tol, self.backward_tol = _check_tol("tol", tol), _check_tol("backward_tol", backward_tol)
        self._init = self._initial_theta(init)
        self.phi = nn.Parameter(torch.empty(self.K + 1))
        self.reset_parameters()

    def _initial_theta(self, init) -> torch.Tensor:
        if isinstance(init, str):
            if init not in INITS:
                raise ValueError(f"init must be one of {INITS} or an array of {self.K + 1} positive coefficients, "
                                 f"got {init!r}")
            k = torch.arange(self.K + 1, dtype=torch.float64)
            theta = k + 1.0 if init == "lowpass" else torch.ones_like(k)
        else:
            theta = torch.as_tensor(np.asarray(init, dtype=np.float64))
            if theta.shape != (self.K + 1,):
                raise ValueError(f"init must have shape ({self.K + 1},) (K + 1 coefficients), got {tuple(theta.shape)}")
            if not torch.isfinite(theta).all() or not (theta > 0).all():
                raise ValueError("init coefficients must be finite and > 0 (they pass through softmax/softplus)")
        return theta / theta.sum() if self.scale == "simplex" else theta

    def reset_parameters(self) -> None:
        """Set :math:`\\varphi` so that :meth:`coefficients` returns the ``init`` coefficients."""
        phi = torch.log(self._init) if self.scale == "simplex" else _inverse_softplus(self._init)
        with torch.no_grad():
            self.phi.copy_(phi.to(self.phi.dtype))

    def coefficients(self) -> torch.Tensor:
        r""":math:`\theta`, shape (K + 1,): ``softmax(phi)`` or ``softplus(phi)``, differentiable in ``phi``.

        Use ``prop.coefficients().detach()`` to read them, e.g. with
        :func:`fastnips.graph.evaluate_polynomial` to draw p on [0, 2].
        """
        if self.scale == "simplex":
            return torch.softmax(self.phi, dim=0)
        return nn.functional.softplus(self.phi)

    def forward(self, x: torch.Tensor, q: torch.Tensor | float, edge_index: ArrayLike | None = None,
                num_nodes: int | None = None, batch: ArrayLike | None = None, *,
                L: sp.spmatrix | sp.sparray | ArrayLike | None = None,
                edge_weight: ArrayLike | None = None) -> torch.Tensor:
        r"""Propagate: :math:`(p_\theta(L) + \mathrm{diag}(q))^{-1} \mathrm{diag}(q)\, x`.

        Parameters
        ----------
        x : torch.Tensor, shape (n,) or (n, F)
        q : torch.Tensor, shape (n,), > 0 (or a positive scalar)
        edge_index : torch.Tensor or array of int, shape (2, E), optional
            PyG edge list (``edge_index[0]`` source, ``edge_index[1]`` target); L is then
            ``normalized_laplacian(edge_index, n, edge_weight)`` (symmetrised, isolated nodes allowed).
            For a PyG mini-batch this is already the block-diagonal Laplacian of the batch.
        num_nodes : int, optional
            Must equal n if given (checked; PyG-style argument).
        batch : torch.Tensor of int, shape (n,), optional
            PyG graph id per node; checked (length n, ids >= 0, no edge between two graphs). The solve of a
            block-diagonal system is already the per-graph solves; the batch only selects and shapes the
            solver: with ``method="auto"`` and graphs of at most 256 nodes, the batched dense Cholesky,
            one block per graph.
        L : sparse or dense matrix, shape (n, n), keyword only
            A precomputed normalized Laplacian, instead of ``edge_index`` (reuse it across layers).
        edge_weight : tensor or array, shape (E,), optional
            Non-negative edge weights, with ``edge_index``. Differentiable: when it requires grad, the
            backward's adjoint solve also gives :math:`\partial \ell / \partial L_{ij}` on L's entries
            and autograd carries it to the weights (where both directions of an edge carry one weight,
            each gets half of the pair's gradient; see :mod:`fastnips.graph._pattern`).

        Returns
        -------
        torch.Tensor, shape and dtype of x

        Notes
        -----
        With ``edge_index``, the sparsity pattern of L is built once and cached in the module
        (:class:`~fastnips.graph._pattern.LaplacianCache`): a later call with the same tensor (not
        modified in place) or an equal edge list reuses it, anything else rebuilds it, and the values are
        recomputed from ``edge_weight`` on every call, so a stale L is impossible. Pass
        ``L=`` to skip the edge list altogether.
        """
        x = _check_tensor("x", x)
        if x.dim() not in (1, 2):
            raise ValueError(f"x must have shape (n,) or (n, F), got {tuple(x.shape)}")
        _check_q_given(q, edge_index, L)
        Lc, lvals = self.laplacian(x.shape[0], edge_index=edge_index, L=L, num_nodes=num_nodes,
                                   edge_weight=edge_weight, batch=batch)
        return _prop(x, q, self.coefficients(), Lc, self.basis, self.backend, self.tol, self.backward_tol,
                     self.method, batch, lvals)

    def laplacian(self, n: int, *, edge_index: ArrayLike | None = None,
                  L: sp.spmatrix | sp.sparray | ArrayLike | None = None, num_nodes: int | None = None,
                  edge_weight: ArrayLike | None = None, batch: ArrayLike | None = None,
                  add_self_loops: bool = False) -> tuple[sp.csr_matrix, torch.Tensor | None]:
        """(L, its values as a tensor that requires grad, or None) for ``forward``: from ``L``, or from
        ``edge_index`` through the module's :class:`~fastnips.graph._pattern.LaplacianCache` (the pattern
        is built once per graph; the values follow ``edge_weight`` on every call)."""
        if L is not None or edge_index is None:
            return graph_operator(n, edge_index=edge_index, L=L, num_nodes=num_nodes, edge_weight=edge_weight,
                                  batch=batch), None
        if num_nodes is not None and (isinstance(num_nodes, bool) or not isinstance(num_nodes, numbers.Integral)
                                      or num_nodes != n):
            raise ValueError(f"num_nodes = {num_nodes!r} but x has {n} rows (one per node)")
        if not hasattr(self, "_laplacian_cache"):
            self._laplacian_cache = LaplacianCache()
        ei_np = lambda: _edge_list(edge_index, n)
        Lc, lvals = self._laplacian_cache.laplacian(edge_index, ei_np, n, edge_weight, add_self_loops)
        if batch is not None:
            check_batch(batch, self._laplacian_cache.pattern_edges(), n)
        return Lc, lvals

    def extra_repr(self) -> str:
        """The hyperparameters, for ``repr``."""
        return (f"K={self.K}, basis={self.basis!r}, scale={self.scale!r}, backend={self.backend!r}, "
                f"method={self.method!r}, tol={self.tol}")
