from __future__ import annotations

import numpy as np
import pytest

from fastnips.causal import htc_identify
from fastnips.causal.generators import instrument_chain, random_mixed_graph


@pytest.mark.parametrize("n", [2, 5, 12, 40])
def test_instrument_chain_needs_one_round_per_node(htc_backend, n):
    for method in ("randomized", "maxflow"):
        r = htc_identify(instrument_chain(n), method=method, backend=htc_backend)
        assert r.identifiable
        if htc_backend == "cpp" or method == "maxflow":
            assert r.rounds == n - 1


def test_instrument_chain_counts_parameters():
    g = instrument_chain(9)
    assert g.n + g.num_directed + g.num_bidirected == 9 * 10 // 2
    assert instrument_chain(9, reverse=False).permute(list(range(8, -1, -1))) == g


def _is_acyclic(g):
    indeg = np.zeros(g.n, int)
    for _, j in g.directed:
        indeg[j] += 1
    stack = [v for v in range(g.n) if indeg[v] == 0]
    seen = 0
    while stack:
        v = stack.pop()
        seen += 1
        for c in g.children(v):
            indeg[c] -= 1
            if indeg[c] == 0:
                stack.append(c)
    return seen == g.n


def test_random_mixed_graph_density_and_acyclicity():
    g = random_mixed_graph(200, p_directed=0.1, p_bidirected=0.05, seed=3)
    pairs = 200 * 199 / 2
    assert abs(g.num_directed / pairs - 0.1) < 0.01
    assert abs(g.num_bidirected / pairs - 0.05) < 0.01
    assert _is_acyclic(g)
    assert random_mixed_graph(200, p_directed=0.1, seed=3) == random_mixed_graph(200, p_directed=0.1, seed=3)
    cyc = random_mixed_graph(60, p_directed=0.2, acyclic=False, seed=1)
    assert not _is_acyclic(cyc)


def test_generator_errors():
    with pytest.raises(ValueError, match="p_directed must be a probability"):
        random_mixed_graph(5, p_directed=1.5)
    with pytest.raises(ValueError, match="n must be a non-negative integer"):
        random_mixed_graph(-1, p_directed=0.1)
    with pytest.raises(ValueError, match="n must be a positive integer"):
        instrument_chain(0)
