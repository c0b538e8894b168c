r"""The Hellinger geometry of scene graphs: categorical and Bernoulli Hellinger distances, and the distance between
the triplet fields of two probabilistic scene graphs, in factorised and contextual form.

Math
----
For categorical distributions p, q: :math:`BC(p, q) = \sum_k \sqrt{p_k q_k}`, :math:`H^2 = 1 - BC` and
:math:`H = \sqrt{1 - BC}`, a metric on the simplex with values in [0, 1], 0 iff p = q.

A scene graph with node class distributions :math:`P_i` (C classes) and predicate distributions :math:`P_e`
(R predicates) on edges e = (i, j) defines per edge the **triplet field**
:math:`P_e(s, r, o) = P_i(s) P_e(r) P_j(o)`. The BC of a product distribution is the product of the BCs, so

.. math:: BC(P_e, Q_e) = BC(P_i, Q_i)\; BC(P_e(\cdot), Q_e(\cdot))\; BC(P_j, Q_j),

:math:`O(C + R)` per edge instead of the :math:`O(C^2 R)` of the joint (the **factorised** form). In the
**contextual** form the predicate is conditioned on the classes, :math:`P_e(r \mid s, o)` (E, C, C, R), and

.. math:: BC(P_e, Q_e) = \sum_{s, o} \sqrt{P_i(s) Q_i(s)}\, \sqrt{P_j(o) Q_j(o)}\;
          BC\big(P_e(\cdot \mid s, o), Q_e(\cdot \mid s, o)\big),

one einsum of :math:`O(C^2 R)` per edge (:mod:`fastnips.scenegraph.contextual` fuses its inner sum).

**Multi-label predicates** (3DSSG's predicates are sigmoid outputs: R independent labels,
:math:`y_r \sim \mathrm{Bern}(p_r)`). The predicate BC is built from the per-label Bernoulli BCs
:math:`u_r = \sqrt{p_r q_r} + \sqrt{(1 - p_r)(1 - q_r)}`:

* ``mode="mean"`` (default): :math:`BC = \frac1R \sum_r u_r`, exactly the BC of the distributions of
  (r, y_r) with r uniform over the predicates; :math:`H^2` is the mean per-label squared Hellinger distance.
* ``mode="joint"``: :math:`BC = \prod_r u_r`, the BC of the joint label vectors
  :math:`y \in \{0, 1\}^R`. It saturates (:math:`H^2 \to 1`) as soon as a few labels differ, which is why
  it is not the default.

Both are BCs of genuine distributions, so every distance here is a Hellinger distance between two
distributions (on triplets): the metric axioms hold, including the triangle inequality.

Paper: "Contextual Hellinger Triplet Geometry: graph-level supervision for 3D scene graph prediction"
(NeurIPS 2026; a descriptive title, see docs/papers.md). The paper's code is not
public; the factorisation, the two multi-label forms and the gradient treatment are this library's reading,
stated here and checked against the explicit joints of :mod:`fastnips.scenegraph.reference`.

Gradients: :math:`\sqrt{p}` has an infinite derivative at p = 0. Functions taking probabilities use a square
root whose backward divides by :math:`\sqrt{\max(p, \epsilon)}` (``eps``, default 1e-12): the value is exact,
the gradient finite. The loss takes logits and uses :math:`\sqrt{\mathrm{softmax}(z)} =
\exp(\tfrac12 \log\mathrm{softmax}(z))`, exact and smooth with no clamp at all.
"""

from __future__ import annotations

import torch

from . import _checks

#: Gradient floor of the square roots of probabilities (value stays exact).
EPS = 1e-12


class _SqrtProb(torch.autograd.Function):
    @staticmethod
    def forward(ctx, p, eps):
        r = torch.sqrt(p)
        ctx.save_for_backward(p)
        ctx.eps = eps
        return r

    @staticmethod
    def backward(ctx, g):
        (p,) = ctx.saved_tensors
        return g / (2 * torch.sqrt(torch.clamp(p, min=ctx.eps))), None


def sqrt_prob(p: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    r""":math:`\sqrt{p}` with a finite gradient at 0: the backward is :math:`g / (2 \sqrt{\max(p, \epsilon)})`.

    Parameters
    ----------
    p : torch.Tensor
        Non-negative values.
    eps : float, default 1e-12
        Floor of the denominator of the gradient only.

    Returns
    -------
    torch.Tensor
        ``sqrt(p)`` (exact).

    Examples
    --------
    >>> import torch
    >>> p = torch.tensor([0.0, 0.25], requires_grad=True)
    >>> sqrt_prob(p).sum().backward(); bool(torch.isfinite(p.grad).all())
    True
    """
    return _SqrtProb.apply(p, eps)


def _roots(p: torch.Tensor, multilabel: bool, eps: float):
    """The square roots a BC needs: sqrt(p) (categorical) or (sqrt(p), sqrt(1 - p)) (Bernoulli labels)."""
    if multilabel:
        return sqrt_prob(p, eps), sqrt_prob(1 - p, eps)
    return sqrt_prob(p, eps)


def bc_from_roots(rp, rq, *, multilabel: bool, mode: str = "mean") -> torch.Tensor:
    """BC over the last dimension from the square roots of two distributions (see the module docstring)."""
    if not multilabel:
        return (rp * rq).sum(-1)
    u = rp[0] * rq[0] + rp[1] * rq[1]
    return u.mean(-1) if mode == "mean" else u.prod(-1)


def hellinger(p: torch.Tensor, q: torch.Tensor, *, squared: bool = False, eps: float = EPS) -> torch.Tensor:
    r"""Hellinger distance between categorical distributions along the last dimension.

    .. math:: H(p, q) = \sqrt{1 - \textstyle\sum_k \sqrt{p_k q_k}} \in [0, 1].

    Parameters
    ----------
    p, q : torch.Tensor, shape (..., K)
        Probability vectors (entries in [0, 1], summing to 1 within 1e-6: ``ValueError`` otherwise); broadcast.
    squared : bool, default False
        Return :math:`H^2 = 1 - BC` (smooth; the form to use in a loss).
    eps : float
        Gradient floor of the square roots (:func:`sqrt_prob`).

    Returns
    -------
    torch.Tensor, shape (...)

    Examples
    --------
    >>> import torch
    >>> float(hellinger(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])))
    1.0
    """
    _checks.probabilities("p", p)
    _checks.probabilities("q", q)
    return _finish(1 - bc_from_roots(sqrt_prob(p, eps), sqrt_prob(q, eps), multilabel=False), squared, eps)


def bernoulli_hellinger(p: torch.Tensor, q: torch.Tensor, *, mode: str = "mean", squared: bool = False,
                        eps: float = EPS) -> torch.Tensor:
    r"""Hellinger distance between two sets of R independent Bernoulli labels (multi-label predicates), along the
    last dimension: :math:`H^2 = 1 - \frac1R \sum_r u_r` (``"mean"``) or :math:`1 - \prod_r u_r` (``"joint"``),
    :math:`u_r = \sqrt{p_r q_r} + \sqrt{(1 - p_r)(1 - q_r)}` (module docstring).

    Parameters
    ----------
    p, q : torch.Tensor, shape (..., R)
        Label probabilities in [0, 1] (multi-hot targets are fine).
    mode : {"mean", "joint"}, default "mean"
    squared : bool, default False
    eps : float

    Returns
    -------
    torch.Tensor, shape (...)

    Examples
    --------
    >>> import torch
    >>> float(bernoulli_hellinger(torch.tensor([1.0, 0.0]), torch.tensor([1.0, 1.0]), squared=True))
    0.5
    """
    _checks.mode(mode)
    _checks.probabilities("p", p, bernoulli=True)
    _checks.probabilities("q", q, bernoulli=True)
    bc = bc_from_roots(_roots(p, True, eps), _roots(q, True, eps), multilabel=True, mode=mode)
    return _finish(1 - bc, squared, eps)


def _finish(h2: torch.Tensor, squared: bool, eps: float) -> torch.Tensor:
    h2 = torch.clamp(h2, min=0)  # rounding can give -1e-17
    return h2 if squared else sqrt_prob(h2, eps)


def triplet_bc(node_roots_p, node_roots_q, edge_bc_or_roots, edge_index: torch.Tensor, *, contextual: bool,
               multilabel: bool = False, mode: str = "mean") -> torch.Tensor:
    """BC of the triplet fields per edge from node square roots (N, C) and either the predicate roots
    (factorised) or the per-(s, o) predicate BC c (E, C, C) (contextual). Internal building block."""
    src, dst = edge_index[0], edge_index[1]
    a = node_roots_p * node_roots_q  # sqrt(P_i(s) Q_i(s)), (N, C)
    if not contextual:
        rp, rq = edge_bc_or_roots
        bn = a.sum(-1)
        return bn[src] * bc_from_roots(rp, rq, multilabel=multilabel, mode=mode) * bn[dst]
    return torch.einsum("es,eo,eso->e", a[src], a[dst], edge_bc_or_roots)


def _expand_pred(t: torch.Tensor, C: int) -> torch.Tensor:
    return t if t.dim() == 4 else t[:, None, None, :].expand(-1, C, C, -1)


def triplet_hellinger(p_nodes: torch.Tensor, p_edges: torch.Tensor, q_nodes: torch.Tensor, q_edges: torch.Tensor,
                      edge_index: torch.Tensor, *, contextual: bool = False, multilabel: bool = False,
                      mode: str = "mean", squared: bool = False, eps: float = EPS) -> torch.Tensor:
    r"""Hellinger distance between the triplet fields of two probabilistic scene graphs on the same nodes and
    edges, one value per edge (module docstring: factorised and contextual forms).

    Parameters
    ----------
    p_nodes, q_nodes : torch.Tensor, shape (N, C)
        Node class distributions.
    p_edges, q_edges : torch.Tensor, shape (E, R), or (E, C, C, R) for ``contextual``
        Predicate distributions (categorical), or label probabilities (``multilabel``). In the contextual
        form either side may also be (E, R): a predicate that does not depend on the classes (e.g. a target).
    edge_index : torch.Tensor of int, shape (2, E)
        Subject (row 0) and object (row 1) of each edge (PyG convention).
    contextual, multilabel : bool, default False
    mode : {"mean", "joint"}, default "mean"
        The multi-label form (module docstring).
    squared : bool, default False
        Return :math:`H^2`.
    eps : float

    Returns
    -------
    torch.Tensor, shape (E,)
        In [0, 1]; 0 iff the two triplet distributions of the edge are equal.

    Examples
    --------
    >>> import torch
    >>> P = torch.tensor([[0.9, 0.1], [0.2, 0.8]]); R = torch.tensor([[0.5, 0.5]])
    >>> ei = torch.tensor([[0], [1]])
    >>> float(triplet_hellinger(P, R, P, R, ei))
    0.0
    """
    _checks.mode(mode)
    N, C = _node_shapes(p_nodes, q_nodes)
    ei = _checks.edge_index(edge_index, N)
    dims = (2, 4) if contextual else (2,)
    for name, t in (("p_edges", p_edges), ("q_edges", q_edges)):
        _checks.logits(name, t, dims=dims)
        if t.shape[0] != ei.shape[1] or (t.dim() == 4 and tuple(t.shape[1:3]) != (C, C)):
            raise ValueError(f"{name} must have shape (E={ei.shape[1]}, R)" + (f" or (E, {C}, {C}, R)" if
                             contextual else "") + f", got {tuple(t.shape)}")
        _checks.probabilities(name, t, bernoulli=multilabel)
    if p_edges.shape[-1] != q_edges.shape[-1]:
        raise ValueError(f"p_edges and q_edges must have the same number of predicates, got {p_edges.shape[-1]} "
                         f"and {q_edges.shape[-1]}")
    rn_p, rn_q = sqrt_prob(p_nodes, eps), sqrt_prob(q_nodes, eps)
    rp, rq = _roots(p_edges, multilabel, eps), _roots(q_edges, multilabel, eps)
    if contextual:
        if multilabel:
            rp, rq = tuple(_expand_pred(t, C) for t in rp), tuple(_expand_pred(t, C) for t in rq)
        else:
            rp, rq = _expand_pred(rp, C), _expand_pred(rq, C)
        edge = bc_from_roots(rp, rq, multilabel=multilabel, mode=mode)
    else:
        edge = (rp, rq)
    bc = triplet_bc(rn_p, rn_q, edge, ei, contextual=contextual, multilabel=multilabel, mode=mode)
    return _finish(1 - bc, squared, eps)


def _node_shapes(p_nodes, q_nodes) -> tuple[int, int]:
    for name, t in (("p_nodes", p_nodes), ("q_nodes", q_nodes)):
        _checks.tensor(name, t)
        if t.dim() != 2:
            raise ValueError(f"{name} must have shape (N, C), got {tuple(t.shape)}")
        _checks.probabilities(name, t)
    if p_nodes.shape != q_nodes.shape:
        raise ValueError(f"p_nodes and q_nodes must have the same shape, got {tuple(p_nodes.shape)} and "
                         f"{tuple(q_nodes.shape)}")
    return p_nodes.shape[0], p_nodes.shape[1]
