"""Graphs as PyG-style samples of numpy arrays, and their batching.

A :class:`GraphSample` holds ``edge_index`` of shape ``(2, 2E)`` with every undirected edge stored in both
directions, sorted by source then target, no self loops, no duplicates; :func:`collate` batches samples the
way ``torch_geometric.data.Batch`` does (block-diagonal, node offsets added to ``edge_index``, a ``batch``
vector mapping nodes to graphs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["GraphSample", "collate"]


@dataclass
class GraphSample:
    """One graph in PyG conventions, as numpy arrays.

    Attributes
    ----------
    edge_index : numpy.ndarray
        ``int64`` array of shape ``(2, 2E)``: every undirected edge ``{u, v}`` appears as ``(u, v)`` and
        ``(v, u)``; columns sorted by source then target; no self loops and no duplicates.
    x : numpy.ndarray
        ``float32`` node features of shape ``(n, d)``.
    y : int or numpy.ndarray
        The graph label (a Python ``int``) for graph classification, or an ``int64`` array of shape
        ``(n,)`` with one label per node for node classification.
    motif_mask : numpy.ndarray or None
        ``bool`` array of shape ``(n,)``, True on the ground-truth important nodes (the motif of
        :func:`ba_motifs`); None where a dataset has no ground truth.
    train_mask, val_mask, test_mask : numpy.ndarray or None
        ``bool`` arrays of shape ``(n,)`` for node classification (disjoint, covering all nodes);
        None for graph classification.
    """

    edge_index: np.ndarray
    x: np.ndarray
    y: int | np.ndarray
    motif_mask: np.ndarray | None = None
    train_mask: np.ndarray | None = None
    val_mask: np.ndarray | None = None
    test_mask: np.ndarray | None = None

    def __repr__(self) -> str:
        parts = [f"num_nodes={self.num_nodes}", f"num_edges={self.num_edges}", f"num_features={self.num_features}"]
        parts.append(f"y={self.y}" if np.ndim(self.y) == 0 else f"y=<{np.asarray(self.y).dtype} {np.shape(self.y)}>")
        if self.motif_mask is not None:
            parts.append(f"motif_nodes={int(np.count_nonzero(self.motif_mask))}")
        if self.train_mask is not None:
            parts.append("masks=train/val/test")
        return f"GraphSample({', '.join(parts)})"

    @property
    def num_nodes(self) -> int:
        """Number of nodes, ``x.shape[0]``."""
        return int(self.x.shape[0])

    @property
    def num_edges(self) -> int:
        """Number of directed edges, ``edge_index.shape[1]`` (twice the undirected count, as in PyG)."""
        return int(self.edge_index.shape[1])

    @property
    def num_features(self) -> int:
        """Feature dimension ``d``."""
        return int(self.x.shape[1])


def collate(samples, *, return_motif_mask: bool = False):
    """Batch graphs into one block-diagonal graph, PyG-style.

    Parameters
    ----------
    samples : sequence of GraphSample
        At least one sample; all must have the same feature dimension and the same kind of label
        (all graph-level ``int`` or all node-level arrays).
    return_motif_mask : bool, default False
        Also return the concatenated ``motif_mask`` (every sample must have one).

    Returns
    -------
    x : numpy.ndarray
        ``float32``, shape ``(N, d)`` with ``N`` the total number of nodes.
    edge_index : numpy.ndarray
        ``int64``, shape ``(2, sum of E_i)``; the edges of sample ``i`` are shifted by the number of
        nodes in samples ``0..i-1``.
    batch : numpy.ndarray
        ``int64``, shape ``(N,)``: the index of the sample each node came from.
    y : numpy.ndarray
        ``int64``; shape ``(B,)`` for graph labels, ``(N,)`` for node labels.
    motif_mask : numpy.ndarray
        ``bool``, shape ``(N,)``; only with ``return_motif_mask=True``.

    Raises
    ------
    ValueError
        If ``samples`` is empty, feature dimensions differ, label kinds are mixed, or a motif mask is
        requested but missing.
    TypeError
        If an element is not a :class:`GraphSample`.

    Examples
    --------
    >>> from fastnips.data.graphs import ba_motifs
    >>> x, edge_index, batch, y = collate(ba_motifs(4, seed=1))
    >>> x.shape[0] == batch.shape[0] and y.shape == (4,)
    True
    """
    samples = list(samples)
    if not samples:
        raise ValueError("collate: need at least one GraphSample, got an empty sequence")
    for i, s in enumerate(samples):
        if not isinstance(s, GraphSample):
            raise TypeError(f"collate: element {i} is a {type(s).__name__}, not a GraphSample")
    d = samples[0].num_features
    bad = [i for i, s in enumerate(samples) if s.num_features != d]
    if bad:
        raise ValueError(f"collate: feature dimension differs: sample 0 has {d}, "
                         f"sample {bad[0]} has {samples[bad[0]].num_features}")
    node_level = [np.ndim(s.y) > 0 for s in samples]
    if any(node_level) and not all(node_level):
        raise ValueError("collate: cannot mix graph-level (int) and node-level (array) labels")

    sizes = np.array([s.num_nodes for s in samples], dtype=np.int64)
    offsets = np.zeros(len(samples), dtype=np.int64)
    np.cumsum(sizes[:-1], out=offsets[1:])
    x = np.concatenate([s.x for s in samples], axis=0).astype(np.float32, copy=False)
    edge_index = np.concatenate([s.edge_index.astype(np.int64, copy=False) + off
                                 for s, off in zip(samples, offsets)], axis=1)
    batch = np.repeat(np.arange(len(samples), dtype=np.int64), sizes)
    if node_level[0]:
        y = np.concatenate([np.asarray(s.y, dtype=np.int64) for s in samples])
    else:
        y = np.array([int(s.y) for s in samples], dtype=np.int64)
    if not return_motif_mask:
        return x, edge_index, batch, y
    missing = [i for i, s in enumerate(samples) if s.motif_mask is None]
    if missing:
        raise ValueError(f"collate: return_motif_mask=True but sample {missing[0]} has no motif_mask")
    motif_mask = np.concatenate([np.asarray(s.motif_mask, dtype=bool) for s in samples])
    return x, edge_index, batch, y, motif_mask
