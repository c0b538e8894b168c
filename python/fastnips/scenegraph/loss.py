r"""The graph-level Hellinger loss between a scene-graph predictor's output and the ground truth.

.. math:: \mathcal{L}_g = w\, \frac{1}{|V_g|} \sum_{i \in V_g} H^2(P_i, Q_i)
          + (1 - w)\, \frac{1}{|E_g|} \sum_{e \in E_g} H^2(P_e^{\mathrm{triplet}}, Q_e^{\mathrm{triplet}}),

per graph g of a batch, with the triplet fields of :mod:`fastnips.scenegraph.metric` (factorised, or contextual
when the predictor outputs :math:`P(r \mid s, o)`), :math:`H^2 = 1 - BC`, and w = ``node_weight`` (default 1/2:
"the mean of the node and the triplet terms"). A graph without edges has the node term only.
The predictions are logits; the square roots of probabilities are taken in log space
(:math:`\exp(\tfrac12 \log\mathrm{softmax})`), exact and smooth: no clamp, finite gradients at any logit.
The targets are constants (class indices, or probabilities: soft labels).

Why :math:`H^2` and not H in the loss: :math:`H^2 = 1 - BC` is smooth in the probabilities where H has an
infinite derivative at 0 (at a perfect prediction); both are bounded in [0, 1] and vanish together.

Paper: "Contextual Hellinger Triplet Geometry: graph-level supervision for 3D scene graph prediction" (NeurIPS
2026; descriptive title), a graph-level loss added to a predictor's usual objectives; the weighting of the node
and triplet terms is not public and is a parameter here.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from . import _checks
from .contextual import predicate_bc
from .metric import triplet_bc


def _node_targets(node_targets, N: int, C: int, dtype) -> torch.Tensor:
    return _checks.labels_or_probs("node targets", node_targets, N, C).to(dtype)


def _edge_targets(edge_targets, E: int, R: int, C: int, contextual: bool, multilabel: bool, dtype) -> torch.Tensor:
    extra = (C, C) if contextual else ()
    name = "edge targets"
    if multilabel and not edge_targets.is_floating_point():
        edge_targets = edge_targets.to(dtype)  # multi-hot integers
    return _checks.labels_or_probs(name, edge_targets, E, R, bernoulli=multilabel, extra=extra).to(dtype)


def _unpack_targets(targets):
    """(node targets, edge targets, batch or None) from a pair / triple or an object with ``y`` and ``edge_y``
    (or ``edge_label``) attributes, e.g. a PyG ``Data`` / ``Batch`` (read by attribute, never imported)."""
    if isinstance(targets, (tuple, list)):
        if len(targets) not in (2, 3):
            raise ValueError(f"targets as a tuple must be (node_targets, edge_targets[, batch]), got {len(targets)} "
                             "items")
        return targets[0], targets[1], targets[2] if len(targets) == 3 else None
    y = getattr(targets, "y", None)
    ey = getattr(targets, "edge_y", None)
    if ey is None:
        ey = getattr(targets, "edge_label", None)
    if y is None or ey is None:
        raise TypeError("targets must be (node_targets, edge_targets) or an object with attributes y and edge_y (or "
                        f"edge_label), e.g. a PyG Data; got {type(targets).__name__}")
    return y, ey, getattr(targets, "batch", None)


def hellinger_triplet_loss(node_logits: torch.Tensor, edge_logits: torch.Tensor, edge_index: torch.Tensor,
                           targets: tuple | Any, *, contextual: bool = False, multilabel: bool = False,
                           mode: str = "mean", node_weight: float = 0.5, batch: torch.Tensor | None = None,
                           reduction: str = "mean", backend: str = "auto") -> torch.Tensor:
    r"""Graph-level squared Hellinger loss between predicted and true scene graphs (module docstring).

    Parameters
    ----------
    node_logits : torch.Tensor, shape (N, C)
        Object class logits.
    edge_logits : torch.Tensor, shape (E, R), or (E, C, C, R) with ``contextual``
        Predicate logits (softmax over R; independent sigmoids with ``multilabel``); contextual logits are
        conditioned on the (subject, object) classes.
    edge_index : torch.Tensor of int, shape (2, E)
        Subject and object node of each edge (PyG convention; graphs of a batch concatenated).
    targets : (node_targets, edge_targets[, batch]) or an object with ``y`` and ``edge_y`` / ``edge_label``
        Node targets: class indices (N,) or probabilities (N, C). Edge targets: predicate indices (E,) or
        probabilities (E, R) (or (E, C, C, R) contextual); with ``multilabel``, multi-hot labels or label
        probabilities (E, R). A ``batch`` attribute of the object is used when ``batch`` is not given.
    contextual : bool, default False
        Use the contextual triplet form (cost :math:`O(C^2 R)` per edge, the Triton kernel on CUDA).
    multilabel : bool, default False
        Predicates are independent labels (3DSSG); ``mode`` picks the form (:mod:`fastnips.scenegraph.metric`).
    mode : {"mean", "joint"}, default "mean"
    node_weight : float in [0, 1], default 0.5
        Weight of the node term (the triplet term gets 1 - node_weight).
    batch : torch.Tensor of int, shape (N,), optional
        Graph of each node (PyG ``batch``); one graph when absent.
    reduction : {"mean", "sum", "none"}, default "mean"
        Over graphs; ``"none"`` returns one value per graph id (graphs with no node get 0 and are left out of
        ``"mean"``).
    backend : {"auto", "reference", "triton"}, default "auto"
        For the contextual predicate term (:func:`fastnips.scenegraph.predicate_bc`).

    Returns
    -------
    torch.Tensor
        A scalar (``"mean"``, ``"sum"``) or shape (G,) (``"none"``), in [0, 1] per graph.

    Examples
    --------
    >>> import torch
    >>> nodes = torch.tensor([[4.0, -4.0], [-4.0, 4.0]]); edges = torch.tensor([[3.0, -3.0, -3.0]])
    >>> ei = torch.tensor([[0], [1]])
    >>> loss = hellinger_triplet_loss(nodes, edges, ei, (torch.tensor([0, 1]), torch.tensor([0])))
    >>> 0 < float(loss) < 0.05
    True
    """
    _checks.mode(mode)
    _checks.reduction(reduction)
    w = _checks.node_weight(node_weight)
    _checks.logits("node_logits", node_logits, dims=(2,))
    _checks.logits("edge_logits", edge_logits, dims=(4,) if contextual else (2,))
    N, C = node_logits.shape
    ei = _checks.edge_index(edge_index, N)
    E = ei.shape[1]
    if edge_logits.shape[0] != E or (contextual and tuple(edge_logits.shape[1:3]) != (C, C)):
        want = f"(E={E}, {C}, {C}, R)" if contextual else f"(E={E}, R)"
        raise ValueError(f"edge_logits must have shape {want}, got {tuple(edge_logits.shape)}")
    R = edge_logits.shape[-1]
    nt, et, tb = _unpack_targets(targets)
    dtype = node_logits.dtype
    q_nodes = _node_targets(nt, N, C, dtype)
    q_edges = _edge_targets(et, E, R, C, contextual, multilabel, edge_logits.dtype)
    b = _checks.batch(batch if batch is not None else tb, N, node_logits.device)

    rn_p = torch.exp(0.5 * F.log_softmax(node_logits, dim=-1))
    rn_q = torch.sqrt(q_nodes)
    node_h2 = 1 - (rn_p * rn_q).sum(-1)
    if contextual:
        c = predicate_bc(edge_logits, q_edges, multilabel=multilabel, mode=mode, backend=backend)
        bc = triplet_bc(rn_p, rn_q, c, ei, contextual=True)
    else:
        if multilabel:
            rp = (torch.exp(0.5 * F.logsigmoid(edge_logits)), torch.exp(0.5 * F.logsigmoid(-edge_logits)))
            rq = (torch.sqrt(q_edges), torch.sqrt(1 - q_edges))
        else:
            rp, rq = torch.exp(0.5 * F.log_softmax(edge_logits, dim=-1)), torch.sqrt(q_edges)
        bc = triplet_bc(rn_p, rn_q, (rp, rq), ei, contextual=False, multilabel=multilabel, mode=mode)
    return _reduce(node_h2, torch.clamp(1 - bc, min=0), b, ei, w, reduction)


def _reduce(node_h2, edge_h2, b, ei, w: float, reduction: str) -> torch.Tensor:
    G = int(b.max()) + 1 if b.numel() else 0
    dt = node_h2.dtype
    n_cnt = torch.zeros(G, dtype=dt, device=b.device).index_add_(0, b, torch.ones_like(node_h2))
    n_sum = torch.zeros(G, dtype=dt, device=b.device).index_add_(0, b, node_h2)
    eb = b[ei[0]]
    e_cnt = torch.zeros(G, dtype=dt, device=b.device).index_add_(0, eb, torch.ones_like(edge_h2, dtype=dt))
    e_sum = torch.zeros(G, dtype=dt, device=b.device).index_add_(0, eb, edge_h2.to(dt))
    node_term = n_sum / n_cnt.clamp(min=1)
    edge_term = e_sum / e_cnt.clamp(min=1)
    per_graph = torch.where(e_cnt > 0, w * node_term + (1 - w) * edge_term, node_term)
    if reduction == "none":
        return per_graph
    if reduction == "sum":
        return per_graph.sum()
    present = n_cnt > 0
    return per_graph[present].mean() if bool(present.any()) else per_graph.sum()


class HellingerTripletLoss(nn.Module):
    r"""Module form of :func:`hellinger_triplet_loss` (same keyword options, fixed at construction).

    Call as ``loss(node_logits, edge_logits, edge_index, targets, batch=None)``.

    Parameters
    ----------
    contextual, multilabel, mode, node_weight, reduction, backend
        As in :func:`hellinger_triplet_loss`.

    Examples
    --------
    >>> import torch
    >>> crit = HellingerTripletLoss(node_weight=0.3)
    >>> out = crit(torch.zeros(2, 3), torch.zeros(1, 4), torch.tensor([[0], [1]]), (torch.tensor([0, 1]),
    ...            torch.tensor([2])))
    >>> round(float(out), 4)  # uniform predictions: H^2 = 1 - 1/sqrt(3) (nodes), 1 - 1/6 (triplet)
    0.7101
    """

    def __init__(self, *, contextual: bool = False, multilabel: bool = False, mode: str = "mean",
                 node_weight: float = 0.5, reduction: str = "mean", backend: str = "auto"):
        super().__init__()
        _checks.mode(mode)
        _checks.reduction(reduction)
        _checks.node_weight(node_weight)
        self.contextual, self.multilabel, self.mode = contextual, multilabel, mode
        self.node_weight, self.reduction, self.backend = node_weight, reduction, backend

    def forward(self, node_logits: torch.Tensor, edge_logits: torch.Tensor, edge_index: torch.Tensor,
                targets: tuple | Any, batch: torch.Tensor | None = None) -> torch.Tensor:
        """The loss (:func:`hellinger_triplet_loss` with this module's options)."""
        return hellinger_triplet_loss(node_logits, edge_logits, edge_index, targets, contextual=self.contextual,
                                      multilabel=self.multilabel, mode=self.mode, node_weight=self.node_weight,
                                      batch=batch, reduction=self.reduction, backend=self.backend)

    def extra_repr(self) -> str:
        """The options, shown by ``repr``."""
        return (f"contextual={self.contextual}, multilabel={self.multilabel}, mode={self.mode!r}, "
                f"node_weight={self.node_weight}, reduction={self.reduction!r}")

