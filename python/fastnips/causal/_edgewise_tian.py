"""SEMID's default Tian edgewise (``edgewise_identify(g, tian=True)``): the readable split into component graphs
around the plain criterion (the reference, and the oracle of the native one) and the one native call."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import reference
from .graph import MixedGraph
from .htc import IdentificationResult, _bad_output, _edgewise_result
from .reference import _G


def edgewise_tian(g: MixedGraph, impl: Any, *, backend: str, seed: int, prime: int) -> IdentificationResult:
    """The native core decomposes, solves and maps back in one call; the reference splits here."""
    d, b = g.to_arrays()
    if backend != "cpp":
        return _edgewise_tian(g, impl, backend=backend, seed=seed, prime=prime)
    raw = impl.edgewise_identify(g.n, d, b, seed, prime, tian=True)
    return _edgewise_result(g, raw, backend=backend, seed=seed, prime=prime, tian=True)


def _edgewise_tian(g: MixedGraph, impl: Any, *, backend: str, seed: int, prime: int) -> IdentificationResult:
    """Edgewise per Tian component graph (SEMID ``generalGenericID(tianDecompose=TRUE)``), mapped back (the
    readable form of the native ``edgewise_identify(..., tian=True)``)."""
    d, b = g.to_arrays()
    comps, component = reference.tian_decompose(_G(g.n, d, b))
    head_comp, bi_comp = component[d[:, 1]], component[b[:, 0]]
    loc = np.full(g.n, -1, dtype=np.int32)
    edge_solved = np.zeros(len(d), dtype=bool)
    steps, rounds, tests = [], 0, 0
    for c in np.unique(head_comp).tolist():  # components with a directed edge into them
        nodes = comps[c]["top_order"]
        loc[nodes] = np.arange(len(nodes), dtype=np.int32)
        mine = np.flatnonzero(head_comp == c)
        ld, lb = np.ascontiguousarray(loc[d[mine]]), np.ascontiguousarray(loc[b[bi_comp == c]]).reshape(-1, 2)
        raw = impl.edgewise_identify(len(nodes), ld, lb, seed, prime)
        try:
            local = np.asarray(raw["edge_solved"], dtype=bool).reshape(-1)
            part = [(int(v), [int(x) for x in S], [int(y) for y in Y]) for v, S, Y in raw["steps"]]
            rounds, tests = max(rounds, int(raw["rounds"])), tests + int(raw["tests"])
        except (KeyError, TypeError, ValueError) as e:
            raise _bad_output(backend, repr(e)) from e
        if local.shape != (len(mine),):
            raise _bad_output(backend, "edge_solved has the wrong length")
        edge_solved[mine] = local
        steps += [(nodes[v], tuple(sorted(nodes[x] for x in S)), tuple(sorted(nodes[y] for y in Y)))
                  for v, S, Y in part]
    node_solved = np.ones(g.n, dtype=bool)
    np.logical_and.at(node_solved, d[:, 1], edge_solved)
    raw = {"edge_solved": edge_solved, "node_solved": node_solved, "steps": steps, "rounds": rounds, "tests": tests}
    return _edgewise_result(g, raw, backend=backend, seed=seed, prime=prime, tian=True)
