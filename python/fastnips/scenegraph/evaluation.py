r"""A baseline scene-graph predictor and the evaluation metrics of a scene-graph prediction.

* :class:`SceneGraphPredictor`: a small message-passing network over observed objects (features and positions)
  that outputs node class logits (N, C) and predicate logits (E, R): the shape of output that
  :func:`fastnips.scenegraph.hellinger_triplet_loss` takes from any predictor (3DSSG / VL-SAT heads included).
* :func:`triplet_recall`: recall@k of the true (subject, predicate, object) triplet among the C x R x C triplets
  of each edge, scored by :math:`P_i(s) P_e(r) P_j(o)` (the 3DSSG convention of triplet recall).
* :func:`calibration_error`: expected calibration error of the top-1 predictions (equal-width bins).
"""

from __future__ import annotations

import itertools
from typing import Any

import torch
from torch import nn


class SceneGraphPredictor(nn.Module):
    """Node encoder, ``rounds`` rounds of mean message passing over the edges with the relative position, and node
    and edge heads.

    .. math:: h_i \\leftarrow h_i + \\frac{1}{\\deg i} \\sum_{(i, j) \\in E} \\mathrm{MLP}([h_i, h_j, x_j - x_i]),
              \\quad z_e = \\mathrm{MLP}([h_i, h_j, x_j - x_i, \\lVert x_j - x_i \\rVert]).

    Parameters
    ----------
    n_features : int
        Node feature size.
    n_classes, n_predicates : int
        Output sizes C and R.
    hidden : int, default 64
    rounds : int, default 2

    Examples
    --------
    >>> from fastnips.scenegraph import synthetic_scenes
    >>> b = synthetic_scenes(2, seed=0)
    >>> zn, ze = SceneGraphPredictor(b.x.shape[1], 8, 8)(b)
    >>> zn.shape[1], ze.shape[0] == b.edge_index.shape[1]
    (8, True)
    """

    def __init__(self, n_features: int, n_classes: int, n_predicates: int, *, hidden: int = 64, rounds: int = 2):
        super().__init__()
        for name, v in (("n_features", n_features), ("n_classes", n_classes), ("n_predicates", n_predicates),
                        ("hidden", hidden)):
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        self.enc = nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
        self.msg = nn.ModuleList(nn.Sequential(nn.Linear(2 * hidden + 3, hidden), nn.ReLU()) for _ in range(rounds))
        self.node_head = nn.Linear(hidden, n_classes)
        self.edge_head = nn.Sequential(nn.Linear(2 * hidden + 4, hidden), nn.ReLU(), nn.Linear(hidden, n_predicates))

    def forward(self, scenes: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """``scenes``: an object with ``x`` (N, F), ``pos`` (N, 3) and ``edge_index`` (2, E) (a
        :class:`~fastnips.scenegraph.SceneBatch` or a PyG ``Data``). Returns (node logits, edge logits)."""
        src, dst = scenes.edge_index
        h = self.enc(scenes.x)
        rel = scenes.pos[dst] - scenes.pos[src]
        deg = torch.zeros(h.shape[0], device=h.device).index_add_(0, src, torch.ones_like(src, dtype=h.dtype))
        deg = deg.clamp(min=1)[:, None]
        for layer in self.msg:
            h = h + torch.zeros_like(h).index_add_(0, src, layer(torch.cat([h[src], h[dst], rel], 1))) / deg
        dist = rel.norm(dim=1, keepdim=True)
        return self.node_head(h), self.edge_head(torch.cat([h[src], h[dst], rel, dist], 1))


def triplet_recall(node_probs: torch.Tensor, edge_probs: torch.Tensor, edge_index: torch.Tensor,
                   node_labels: torch.Tensor, edge_labels: torch.Tensor, *, k: int = 1) -> float:
    """Fraction of edges whose true (subject, predicate, object) is among the ``k`` best of its C x R x C triplets
    (ties counted against: rank = number of strictly better triplets).

    Parameters
    ----------
    node_probs : torch.Tensor, (N, C)
    edge_probs : torch.Tensor, (E, R)
    edge_index : torch.Tensor, (2, E)
    node_labels : torch.Tensor, (N,)
    edge_labels : torch.Tensor, (E,)
    k : int, default 1

    Returns
    -------
    float
        In [0, 1] (1.0 when there is no edge).

    Examples
    --------
    >>> import torch
    >>> p = torch.tensor([[0.9, 0.1], [0.2, 0.8]]); e = torch.tensor([[0.6, 0.4]])
    >>> triplet_recall(p, e, torch.tensor([[0], [1]]), torch.tensor([0, 1]), torch.tensor([0]))
    1.0
    """
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    src, dst = edge_index
    if src.numel() == 0:
        return 1.0
    C, R = node_probs.shape[1], edge_probs.shape[1]
    joint = (node_probs[src][:, :, None, None] * edge_probs[:, None, :, None] * node_probs[dst][:, None, None, :])
    joint = joint.flatten(1)
    true = (node_labels[src] * R + edge_labels) * C + node_labels[dst]
    rank = (joint > joint.gather(1, true[:, None])).sum(1)
    return float((rank < k).float().mean())


def calibration_error(probs: torch.Tensor, labels: torch.Tensor, *, bins: int = 15) -> float:
    r"""Expected calibration error of the top-1 prediction, :math:`\sum_b \frac{n_b}{n} |\mathrm{acc}_b -
    \mathrm{conf}_b|` over ``bins`` equal-width confidence bins.

    Parameters
    ----------
    probs : torch.Tensor, (n, K)
    labels : torch.Tensor, (n,)
    bins : int, default 15

    Returns
    -------
    float

    Examples
    --------
    >>> import torch
    >>> calibration_error(torch.tensor([[1.0, 0.0], [0.0, 1.0]]), torch.tensor([0, 1]))
    0.0
    """
    conf, pred = probs.max(1)
    edges = torch.linspace(0, 1, bins + 1, dtype=conf.dtype)
    total = 0.0
    for lo, hi in itertools.pairwise(edges):
        m = (conf > lo) & (conf <= hi)
        if m.any():
            total += float(m.float().mean()) * abs(float((pred[m] == labels[m]).float().mean() - conf[m].mean()))
    return total
