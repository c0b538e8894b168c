r"""A PyG-style Tikhonov layer: ``TikhonovConv(...)(x, edge_index, edge_weight)``, where GCNConv / APPNP go.

.. math:: \mathrm{TikhonovConv}(X) = (p_\theta(L) + Q)^{-1} Q X, \qquad
          q = \mathrm{softplus}(f(X, A)) + q_{\min},

with :math:`f` a Q-network (built in, or supplied) and p, L as in :class:`~fastnips.graph.TikhonovProp`.
Where torch_geometric is installed the layer is a ``MessagePassing`` module, so PyG's explainers
(``GNNExplainer``, ``CaptumExplainer``, ...) find it and put their edge masks on its edge weights; the
gradient reaches the masks through the adjoint solve. Paper: Tremblay, Ricaud, Bianchi, "A Generalized
Tikhonov Layer for Interpretable-by-design Graph Neural Networks" (arXiv 2605.28578).
"""

from __future__ import annotations

import importlib.util
import numbers
import warnings
from collections.abc import Callable

import torch
from numpy.typing import ArrayLike
from torch import nn

from .. import _optional
from .layers import TikhonovProp, _check_tensor, _prop

__all__ = ["TikhonovConv"]


def _base() -> type:
    """PyG's ``MessagePassing`` where torch_geometric imports (its explainers look for it), else nn.Module.
    PyG's own import-time deprecation warnings (torch.jit.script) are not ours to show."""
    if importlib.util.find_spec("torch_geometric") is None or _optional.switched_off("torch_geometric"):
        return nn.Module
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            from torch_geometric.nn import MessagePassing
        except ImportError:
            return nn.Module
    return MessagePassing


_BASE = _base()


class TikhonovConv(_BASE):
    r"""Generalised Tikhonov propagation with a Q-network, called like PyG's ``APPNP``.

    .. math:: Y = (p_\theta(L) + \mathrm{diag}(q))^{-1} \mathrm{diag}(q)\, X, \qquad
              q = \mathrm{softplus}(s) + q_{\min}, \quad s = f(X, A) \in \mathbb R^n,

    the exact minimiser, column by column, of :math:`z^\top p_\theta(L) z + (z - x)^\top Q (z - x)`; L is
    the normalized Laplacian of ``edge_index`` (with ``edge_weight``; built as
    :func:`fastnips.graph.normalized_laplacian` does, cached across calls on the same graph) and
    :math:`p_\theta` a non-negative Bernstein polynomial on the simplex (:class:`TikhonovProp`, exposed as
    ``conv.prop``). Like APPNP the layer only propagates: the output has x's shape (put a ``Linear``
    before it where a GCNConv had ``out_channels``).

    The score :math:`s` comes from the Q-network: ``q_net(x, edge_index)`` (``q_net(x, edge_index,
    edge_weight)`` when weights are given) returning shape (n,) or (n, 1), e.g. a PyG GIN; or, with
    ``in_channels``, the built-in :math:`s = X w + b` (``nn.Linear(in_channels, 1)``). The softplus and
    :math:`q_{\min}` keep Q positive definite. ``forward(..., q=...)`` bypasses the Q-network.

    Gradients reach x, q (hence the Q-network), :math:`\theta` and ``edge_weight`` through one adjoint
    solve (:func:`fastnips.graph.tikhonov_prop`). **PyG explainers**: in PyG's explain mode (set by
    ``torch_geometric.explain``'s ``set_masks``) the edge mask multiplies the edge weights (sigmoid
    first where PyG asks for it), so an edge-mask explainer sees how each edge moves the output. Since
    L must be symmetric, the mask values of an edge and its reverse are averaged first: both directions
    of an undirected edge get the same mask value and half of its gradient each.

    Parameters
    ----------
    in_channels : int, optional
        Feature size, for the built-in Q-network. One of ``in_channels`` and ``q_net`` is required.
    K : int, default 4
        Degree of p.
    q_net : callable, optional
        A Q-network (an ``nn.Module`` is registered as a submodule) returning one score per node.
    q_min : float, default 1e-3
        Lower bound of q (> 0); :math:`\kappa(A) \le (1 + \max q)/q_{\min}` under the simplex.
    add_self_loops : bool, default False
        Build L from :math:`A + I` as PyG's ``gcn_norm`` (``add_remaining_self_loops``) does.
    basis, scale, backend, tol, backward_tol, init, method
        As for :class:`TikhonovProp` (Bernstein, simplex, auto, solver defaults, low-pass start, auto).

    Attributes
    ----------
    prop : TikhonovProp
    q_net : callable
    last_q : torch.Tensor or None
        q of the last forward (detached).

    Examples
    --------
    >>> import torch
    >>> from fastnips.graph import TikhonovConv
    >>> conv = TikhonovConv(8, K=3)
    >>> edge_index = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    >>> conv(torch.randn(3, 8), edge_index).shape
    torch.Size([3, 8])
    """

    def __init__(self, in_channels: int | None = None, K: int = 4, *, q_net: Callable | None = None,
                 q_min: float = 1e-3, add_self_loops: bool = False, basis: str = "bernstein", scale: str = "simplex",
                 backend: str = "auto", tol: float | None = None, backward_tol: float | None = None,
                 init: str | ArrayLike = "lowpass", method: str = "auto"):
        # as a MessagePassing: no aggregation module (propagate is never called)
        super().__init__(**({} if _BASE is nn.Module else {"aggr": None}))
        if (in_channels is None) == (q_net is None):
            raise ValueError("TikhonovConv needs exactly one of in_channels (the built-in Q-network, a Linear map to "
                             "one score per node) and q_net (your Q-network)")
        if in_channels is not None:
            if isinstance(in_channels, bool) or not isinstance(in_channels, numbers.Integral) or in_channels < 1:
                raise ValueError(f"in_channels must be an int >= 1, got {in_channels!r}")
            q_net = nn.Linear(int(in_channels), 1)
        elif not callable(q_net):
            raise TypeError(f"q_net must be callable (an nn.Module), got {type(q_net).__name__}")
        if isinstance(q_min, bool) or not isinstance(q_min, numbers.Real) or not 0.0 < float(q_min) < float("inf"):
            raise ValueError(f"q_min must be a finite float > 0 (it keeps Q positive definite), got {q_min!r}")
        if not isinstance(add_self_loops, bool):
            raise TypeError(f"add_self_loops must be a bool, got {type(add_self_loops).__name__}")
        self.in_channels, self.q_min, self.add_self_loops = in_channels, float(q_min), add_self_loops
        self.q_net = q_net
        self._builtin_q = in_channels is not None
        self.prop = TikhonovProp(K=K, basis=basis, scale=scale, backend=backend, tol=tol, backward_tol=backward_tol,
                                 init=init, method=method)
        self.last_q: torch.Tensor | None = None

    def reset_parameters(self) -> None:
        """Reset the filter (and the built-in Q-network)."""
        self.prop.reset_parameters()
        if self._builtin_q:
            self.q_net.reset_parameters()

    def node_weights(self, x: torch.Tensor, edge_index: ArrayLike,
                     edge_weight: torch.Tensor | None = None) -> torch.Tensor:
        r""":math:`q = \mathrm{softplus}(f(X, A)) + q_{\min}`, shape (n,)."""
        if self._builtin_q:
            s = self.q_net(x)
        elif edge_weight is None:
            s = self.q_net(x, edge_index)
        else:
            s = self.q_net(x, edge_index, edge_weight)
        if not isinstance(s, torch.Tensor) or not s.is_floating_point():
            raise TypeError(f"q_net must return a floating-point tensor of shape (n,) or (n, 1), got "
                            f"{type(s).__name__}" + (f" of dtype {s.dtype}" if isinstance(s, torch.Tensor) else ""))
        n = x.shape[0]
        if s.shape not in ((n,), (n, 1)):
            raise ValueError(f"q_net must return shape ({n},) or ({n}, 1) (one score per node), got {tuple(s.shape)}")
        return nn.functional.softplus(s.reshape(n)) + self.q_min

    def _masked(self, edge_index, edge_weight, E: int, like: torch.Tensor):
        """edge_weight times PyG's edge mask in explain mode (``set_masks``), else edge_weight."""
        mask = getattr(self, "_edge_mask", None)
        if getattr(self, "explain", None) is not True or mask is None:
            return edge_weight
        if getattr(self, "_apply_sigmoid", True):
            mask = mask.sigmoid()
        if mask.shape != (E,):
            raise ValueError(f"the explainer's edge mask has shape {tuple(mask.shape)}, expected ({E},)")
        # L must be symmetric: an edge and its reverse share the mean of their mask values (with weights
        # equal in both directions, each direction then gets half of the pair's gradient)
        ei = torch.as_tensor(edge_index, device=mask.device)
        n = int(like.shape[0])
        pair = torch.minimum(ei[0], ei[1]) * n + torch.maximum(ei[0], ei[1])
        _, group = torch.unique(pair, return_inverse=True)
        total = torch.zeros(E, dtype=mask.dtype, device=mask.device).index_add(0, group, mask)
        count = torch.zeros(E, dtype=mask.dtype, device=mask.device).index_add(0, group, torch.ones_like(mask))
        mask = (total / count.clamp_min(1.0))[group]
        return mask if edge_weight is None else edge_weight.to(mask.dtype) * mask

    def forward(self, x: torch.Tensor, edge_index: ArrayLike, edge_weight: torch.Tensor | None = None, *,
                batch: ArrayLike | None = None, q: torch.Tensor | None = None) -> torch.Tensor:
        r"""Propagate: :math:`(p_\theta(L) + \mathrm{diag}(q))^{-1} \mathrm{diag}(q)\, x`.

        Parameters
        ----------
        x : torch.Tensor, shape (n,) or (n, F)
        edge_index : torch.Tensor of int, shape (2, E)
            PyG edge list (both directions for an undirected graph).
        edge_weight : torch.Tensor, shape (E,), optional
            Non-negative edge weights; differentiable.
        batch : torch.Tensor of int, shape (n,), optional
            PyG graph id per node (checked); selects the batched dense solver for small graphs.
        q : torch.Tensor, shape (n,), optional
            Node weights (> 0) instead of the Q-network's.

        Returns
        -------
        torch.Tensor, the shape and dtype of x
        """
        x = _check_tensor("x", x)
        if x.dim() not in (1, 2):
            raise ValueError(f"x must have shape (n,) or (n, F), got {tuple(x.shape)}")
        if isinstance(edge_index, torch.Tensor) and edge_index.is_floating_point():
            raise TypeError(f"edge_index must hold integers (shape (2, E)), got dtype {edge_index.dtype}")
        if q is None:
            q = self.node_weights(x if x.dim() == 2 else x.unsqueeze(1), edge_index, edge_weight)
        self.last_q = q.detach()
        E = int(edge_index.shape[1]) if hasattr(edge_index, "shape") and len(edge_index.shape) == 2 else -1
        weight = self._masked(edge_index, edge_weight, E, x)
        Lc, lvals = self.prop.laplacian(x.shape[0], edge_index=edge_index, edge_weight=weight, batch=batch,
                                        add_self_loops=self.add_self_loops)
        p = self.prop
        return _prop(x, q, p.coefficients(), Lc, p.basis, p.backend, p.tol, p.backward_tol, p.method, batch, lvals)

    __repr__ = nn.Module.__repr__  # not MessagePassing's (in_channels, out_channels)

    def extra_repr(self) -> str:
        """The hyperparameters, for ``repr``."""
        return f"in_channels={self.in_channels}, q_min={self.q_min}, add_self_loops={self.add_self_loops}"
