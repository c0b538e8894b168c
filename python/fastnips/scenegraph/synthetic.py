r"""Rule-generated 3-D scenes with object classes and spatial predicates: honest synthetic data for the scene-graph
loss (the paper's 3DSSG / 3RScan data needs a signed agreement and cannot be had here).

Generation. The *world* (per class: a size prior, width, depth and height uniform in [0.3, 1.5] m, and whether it
is a floor class or a "small" class, a third of the classes, whose objects stand on another object) comes from
``numpy.random.default_rng(world_seed)``, so scenes drawn with different ``seed`` share it (train and test sets);
the scenes come from ``numpy.random.default_rng(seed)``:

* n objects, n uniform in ``n_objects``; class c uniform over ``n_classes``; sizes = the class prior times a
  uniform factor in [0.85, 1.15].
* Positions uniform on a 5 m x 5 m floor; a small object is put on top of a random floor object (z = that
  object's height) with probability 0.7.
* Edges: every ordered pair (i, j), i != j, of a scene (subject i, object j).
* Predicates of (i, j), by rules on the true geometry (margin 0.25 m; several can hold, 3DSSG-style multi-label):
  ``left`` (x_i < x_j - m), ``right``, ``front`` (y_i < y_j - m), ``behind``, ``above`` (z_i >= z_j + h_j / 2),
  ``near`` (centre distance < 1 m), ``bigger`` (volume_i > 1.5 volume_j). The categorical label is the first that
  holds in the order above, near, bigger, left, right, front, behind, else ``none`` (index 0 of
  ``PREDICATES_CATEGORICAL``).
* Observed node features: the size with multiplicative noise, the height z with additive noise, and a noisy
  one-hot "appearance" of the class (Gaussian noise of std ``noise``); observed positions with noise
  ``0.1 * noise`` m. A predictor must infer classes from appearance and size and predicates from the observed
  geometry.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import torch

#: The multi-label predicates, in column order of ``edge_y_multi``.
PREDICATES = ("left", "right", "front", "behind", "above", "near", "bigger")
#: The categorical labels of ``edge_y`` (``none`` when no predicate holds).
PREDICATES_CATEGORICAL = ("none", *PREDICATES)
_PRIORITY = ("above", "near", "bigger", "left", "right", "front", "behind")
MARGIN = 0.25


@dataclass
class SceneBatch:
    """A batch of scenes in PyG conventions (attributes read by :func:`fastnips.scenegraph.hellinger_triplet_loss`).

    Attributes
    ----------
    x : torch.Tensor, (N, 4 + C) float32
        Observed node features: noisy size (3), noisy height (1), noisy class appearance (C).
    pos : torch.Tensor, (N, 3) float32
        Observed (noisy) centres.
    y : torch.Tensor, (N,) int64
        True classes.
    edge_index : torch.Tensor, (2, E) int64
        All ordered pairs within each scene.
    edge_y : torch.Tensor, (E,) int64
        Categorical predicate (index into ``PREDICATES_CATEGORICAL``).
    edge_y_multi : torch.Tensor, (E, 7) float32
        Multi-hot predicates (columns ``PREDICATES``).
    batch : torch.Tensor, (N,) int64
        Scene of each node.
    num_graphs : int
    """

    x: torch.Tensor
    pos: torch.Tensor
    y: torch.Tensor
    edge_index: torch.Tensor
    edge_y: torch.Tensor
    edge_y_multi: torch.Tensor
    batch: torch.Tensor
    num_graphs: int

    def to(self, device: torch.device | str) -> SceneBatch:
        """A copy on ``device``."""
        return SceneBatch(**{f.name: (getattr(self, f.name).to(device) if f.name != "num_graphs" else self.num_graphs)
                             for f in fields(self)})


def _scene(rng, n: int, C: int, sizes: np.ndarray, small: np.ndarray, noise: float):
    cls = rng.integers(0, C, size=n)
    dims = sizes[cls] * rng.uniform(0.85, 1.15, size=(n, 3))
    xy = rng.uniform(0, 5, size=(n, 2))
    z = np.zeros(n)
    floor = np.flatnonzero(~small[cls])
    for i in np.flatnonzero(small[cls]):
        if floor.size and rng.random() < 0.7:
            j = rng.choice(floor)
            xy[i] = xy[j] + rng.uniform(-0.2, 0.2, size=2)
            z[i] = dims[j, 2]
    centre = np.column_stack([xy, z + dims[:, 2] / 2])
    src, dst = np.nonzero(~np.eye(n, dtype=bool))
    d = centre[dst] - centre[src]
    vol = dims.prod(1)
    rules = {
        "left": d[:, 0] > MARGIN, "right": d[:, 0] < -MARGIN, "front": d[:, 1] > MARGIN, "behind": d[:, 1] < -MARGIN,
        "above": z[src] >= z[dst] + dims[dst, 2] / 2, "near": np.linalg.norm(d, axis=1) < 1.0,
        "bigger": vol[src] > 1.5 * vol[dst],
    }
    multi = np.column_stack([rules[p] for p in PREDICATES]).astype(np.float32)
    cat = np.zeros(len(src), dtype=np.int64)
    for p in reversed(_PRIORITY):  # the first in priority order wins
        cat[rules[p]] = PREDICATES_CATEGORICAL.index(p)
    feats = np.column_stack([dims * rng.lognormal(0, 0.1 * noise, size=(n, 3)), z + rng.normal(0, 0.05 * noise, n),
                             np.eye(C)[cls] + rng.normal(0, noise, size=(n, C))]).astype(np.float32)
    obs = (centre + rng.normal(0, 0.1 * noise, size=(n, 3))).astype(np.float32)
    return feats, obs, cls, np.stack([src, dst]), cat, multi


def synthetic_scenes(n_scenes: int, *, n_classes: int = 8, n_objects: tuple[int, int] = (4, 9), noise: float = 0.5,
                     seed: int = 0, world_seed: int = 0) -> SceneBatch:
    """``n_scenes`` rule-generated scenes in one batch (module docstring has the rules).

    Parameters
    ----------
    n_scenes : int
        At least 1.
    n_classes : int, default 8
        Object classes (>= 2).
    n_objects : (int, int), default (4, 9)
        Inclusive range of objects per scene (>= 2 each, low <= high).
    noise : float, default 0.5
        Observation noise level (>= 0): appearance std, and 0.1 x (m) on positions.
    seed : int, default 0
        The scenes are drawn from ``numpy.random.default_rng(seed)``.
    world_seed : int, default 0
        The class priors (sizes, floor or small) come from ``numpy.random.default_rng(world_seed)``: keep it fixed
        across the train and test sets of one experiment.

    Returns
    -------
    SceneBatch

    Examples
    --------
    >>> b = synthetic_scenes(3, seed=0)
    >>> b.num_graphs, b.x.shape[1], b.edge_y_multi.shape[1]
    (3, 12, 7)
    """
    if not isinstance(n_scenes, (int, np.integer)) or n_scenes < 1:
        raise ValueError(f"n_scenes must be a positive integer, got {n_scenes!r}")
    if not isinstance(n_classes, (int, np.integer)) or n_classes < 2:
        raise ValueError(f"n_classes must be an integer >= 2, got {n_classes!r}")
    lo, hi = n_objects
    if not (2 <= lo <= hi):
        raise ValueError(f"n_objects must be (low, high) with 2 <= low <= high, got {n_objects!r}")
    if not noise >= 0:
        raise ValueError(f"noise must be >= 0, got {noise!r}")
    world = np.random.default_rng(world_seed)
    sizes = world.uniform(0.3, 1.5, size=(n_classes, 3))
    small = np.zeros(n_classes, dtype=bool)
    small[world.permutation(n_classes)[: max(1, n_classes // 3)]] = True
    rng = np.random.default_rng(seed)
    parts, offset = [], 0
    for g in range(n_scenes):
        f, p, c, ei, cat, multi = _scene(rng, int(rng.integers(lo, hi + 1)), n_classes, sizes, small, noise)
        parts.append((f, p, c, ei + offset, cat, multi, np.full(len(c), g)))
        offset += len(c)
    cat_ = lambda k: np.concatenate([q[k] for q in parts], axis=-1 if k == 3 else 0)
    t = torch.from_numpy
    return SceneBatch(x=t(cat_(0)), pos=t(cat_(1)), y=t(cat_(2)).long(), edge_index=t(cat_(3)).long(),
                      edge_y=t(cat_(4)), edge_y_multi=t(cat_(5)), batch=t(cat_(6)).long(), num_graphs=n_scenes)
