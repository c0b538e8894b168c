"""Graph builders and comparison helpers shared by the graph tests (PyG-style edge lists: every undirected
edge in both directions)."""

from __future__ import annotations

import numpy as np

from fastnips import _optional
from fastnips.data.graphs import erdos_renyi_edges
from fastnips.data.graphs import undirected_edge_index as undirected


def erdos_renyi(n, p, seed):
    """(edge_index, n) of an Erdős–Rényi graph G(n, p)."""
    return erdos_renyi_edges(n, p, seed=seed), n


def grid(rows, cols):
    """(edge_index, rows * cols) of the rows x cols grid graph."""
    idx = np.arange(rows * cols).reshape(rows, cols)
    pairs = np.concatenate([np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1),
                            np.stack([idx[:-1].ravel(), idx[1:].ravel()], 1)])
    return undirected(pairs), rows * cols


def star(n):
    """(edge_index, n) of the star with centre 0."""
    return undirected([(0, i) for i in range(1, n)]), n


def problem(n, F, seed, K=4, q_range=(0.2, 3.0)):
    """(theta, q, X): Bernstein coefficients in [0, 1), q uniform in q_range, X standard normal (n, F)."""
    rng = np.random.default_rng(seed)
    theta = rng.uniform(0.0, 1.0, K + 1)
    q = rng.uniform(*q_range, n)
    X = rng.standard_normal((n, F))
    return theta, q, X


def assert_close(Y, Yref, rel, what=""):
    """max |Y - Yref| <= rel * max |Yref| (Y may be a torch tensor on any device)."""
    Y = Y.detach().cpu().double().numpy() if _optional.is_torch_tensor(Y) else np.asarray(Y, dtype=np.float64)
    Yref = np.asarray(Yref, dtype=np.float64)
    assert Y.shape == Yref.shape, what
    scale = max(float(np.abs(Yref).max(initial=0.0)), 1e-300)
    err = float(np.abs(Y - Yref).max(initial=0.0))
    assert err <= rel * scale, f"{what}: max error {err:.3e} > {rel:g} * {scale:.3e}"
