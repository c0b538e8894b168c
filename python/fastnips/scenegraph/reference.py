r"""Brute-force oracles of :mod:`fastnips.scenegraph`: the Bhattacharyya coefficient of two triplet fields computed
on the explicit joint distributions, with no factorisation and no trick. Used by the tests only (they cost
:math:`O(C^2 R)` per edge, and :math:`O(C^2 2^R)` for the joint multi-label form).

For edge :math:`e = (i, j)` the triplet field of a scene graph is the joint distribution of (subject class s,
predicate r, object class o):

.. math:: P_e(s, r, o) = P_i(s)\, P_e(r \mid s, o)\, P_j(o),

with :math:`P_e(r \mid s, o) = P_e(r)` in the plain (non-contextual) form. The Bhattacharyya coefficient is
:math:`BC(P_e, Q_e) = \sum_{s, r, o} \sqrt{P_e(s, r, o)\, Q_e(s, r, o)}` and the squared Hellinger distance
:math:`H^2 = 1 - BC`.

Multi-label predicates (R independent Bernoulli labels :math:`y_r \sim \mathrm{Bern}(p_r)`) enter in one of two
ways (see :mod:`fastnips.scenegraph.metric`):

* ``"joint"``: the predicate variable is the whole label vector :math:`y \in \{0, 1\}^R`;
* ``"mean"``: the predicate variable is a pair (r, y_r) with r uniform on the R predicates.

Both are spelled out here as explicit distributions.
"""

from __future__ import annotations

import itertools

import torch


def joint_triplet(p_sub: torch.Tensor, p_pred: torch.Tensor, p_obj: torch.Tensor) -> torch.Tensor:
    """The explicit joint :math:`P(s, r, o)`, shape (E, C, R', C), from subject (E, C), object (E, C) and predicate
    distributions: (E, R') (plain) or (E, C, C, R') (contextual, :math:`P(r \\mid s, o)`)."""
    if p_pred.dim() == 2:
        return p_sub[:, :, None, None] * p_pred[:, None, :, None] * p_obj[:, None, None, :]
    return p_sub[:, :, None, None] * p_pred.permute(0, 1, 3, 2) * p_obj[:, None, None, :]


def bernoulli_joint(p: torch.Tensor) -> torch.Tensor:
    """All :math:`2^R` label vectors' probabilities for independent Bernoulli labels p (..., R): shape (..., 2^R)."""
    R = p.shape[-1]
    cols = []
    for bits in itertools.product((0, 1), repeat=R):
        b = torch.tensor(bits, dtype=p.dtype, device=p.device)
        cols.append(torch.prod(torch.where(b.bool(), p, 1 - p), dim=-1))
    return torch.stack(cols, dim=-1)


def bernoulli_mixture(p: torch.Tensor) -> torch.Tensor:
    """The distribution of (r, y_r) with r uniform: shape (..., 2R), entries :math:`p_r / R` and
    :math:`(1 - p_r) / R`."""
    R = p.shape[-1]
    return torch.cat([p, 1 - p], dim=-1) / R


def predicate_distribution(p: torch.Tensor, multilabel: bool, mode: str) -> torch.Tensor:
    """The predicate variable's explicit distribution (last dim) for categorical or multi-label predicates."""
    if not multilabel:
        return p
    return bernoulli_joint(p) if mode == "joint" else bernoulli_mixture(p)


def triplet_bc_bruteforce(p_nodes: torch.Tensor, p_edges: torch.Tensor, q_nodes: torch.Tensor,
                          q_edges: torch.Tensor, edge_index: torch.Tensor, *, multilabel: bool = False,
                          mode: str = "mean") -> torch.Tensor:
    """BC of the triplet fields of two scene graphs on the same nodes and edges, per edge (E,), from the explicit
    joints. Node distributions (N, C); predicate distributions (E, R) or contextual (E, C, C, R) (probabilities,
    or Bernoulli label probabilities when ``multilabel``)."""
    src, dst = edge_index[0], edge_index[1]
    pp = predicate_distribution(p_edges, multilabel, mode)
    qp = predicate_distribution(q_edges, multilabel, mode)
    if pp.dim() == 2 and qp.dim() == 4:
        pp = pp[:, None, None, :].expand(-1, qp.shape[1], qp.shape[2], -1)
    if qp.dim() == 2 and pp.dim() == 4:
        qp = qp[:, None, None, :].expand(-1, pp.shape[1], pp.shape[2], -1)
    P = joint_triplet(p_nodes[src], pp, p_nodes[dst])
    Q = joint_triplet(q_nodes[src], qp, q_nodes[dst])
    return torch.sqrt(P * Q).flatten(1).sum(1)


def hellinger_bruteforce(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Hellinger distance over the last dim, :math:`\\sqrt{1 - \\sum_k \\sqrt{p_k q_k}}` (clamped at 0)."""
    return torch.sqrt(torch.clamp(1 - torch.sqrt(p * q).sum(-1), min=0))
