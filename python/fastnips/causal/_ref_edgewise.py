r"""Edgewise identification (Weihs et al. 2018; SEMID ``edgewiseIdentifyStep``), iterated to a fixpoint.

:func:`edgewise_identify` decides it in polynomial time by ranks over :math:`\mathbb{F}_p` (the largest
usable parent set is unique); :func:`edgewise_identify_enumerate` is SEMID's subset enumeration, kept as
the oracle for small graphs.  Both share the fixpoint (:func:`_edgewise_fixpoint`) and differ only in how
one node's usable set :math:`S` is found.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import combinations
from typing import Any

import numpy as np

from ._ref_maxflow import half_trek_system
from ._ref_mixed_graph import _G, htr_from, tr_from
from ._ref_modp import DEFAULT_PRIME, _check_method_prime, _random_half_trek_matrix
from ._ref_rank import _independent_rows, _unit_vectors_in_rowspace


def _edgewise_allowed(g: _G, i: int, U: set[int], unsolved: list[set[int]], htr: list[set[int]],
                      trf: list[set[int]]) -> tuple[list[int], dict[int, set[int]]]:
    """SEMID's allowed nodes for node ``i`` and, for each, T(a) = (htrFrom(a) ∪ trFrom(unsolvedPa(a))) ∩ U."""
    sib_i = set(g.sib[i])
    allowed = [j for j in range(g.n)
               if j != i and j not in sib_i and htr[j] & U and not (htr[i] & unsolved[j])]
    T = {}
    for a in allowed:
        reach = set(htr[a])
        for u in unsolved[a]:
            reach |= trf[u]
        T[a] = reach & U
    return allowed, T


def _edgewise_fixpoint(g: _G, find: Callable) -> dict:
    """Gauss-Seidel sweeps over nodes ``0..n-1`` until no edge is newly identified.

    ``find(i, U, allowed, T)`` returns ``(S, Y, tests)``: the parents ``S`` of ``i`` identified now via
    sources ``Y`` (``S`` empty if none) and the number of tests it ran.
    """
    htr = [htr_from(g, v) for v in range(g.n)]
    trf = [tr_from(g, v) for v in range(g.n)]
    unsolved = [set(g.pa[v]) for v in range(g.n)]
    steps: list[tuple[int, list[int], list[int]]] = []
    rounds = tests = 0
    changed = True
    while changed:
        changed = False
        for i in range(g.n):
            U = unsolved[i]
            if not U:
                continue
            allowed, T = _edgewise_allowed(g, i, U, unsolved, htr, trf)
            S, Y, k = find(i, U, allowed, T)
            tests += k
            if S:
                steps.append((i, S, Y))
                unsolved[i] = U - set(S)
                changed = True
        rounds += changed
    edge_solved = np.array([i not in unsolved[j] for i, j in g.directed], dtype=bool)
    node_solved = np.array([not unsolved[v] for v in range(g.n)], dtype=bool)
    return {"edge_solved": edge_solved, "node_solved": node_solved, "steps": steps,
            "rounds": rounds, "tests": tests}


def edgewise_identify_enumerate(n: int, directed: Any, bidirected: Any, seed: int = 0,
                                prime: int = DEFAULT_PRIME) -> dict:
    r"""Edgewise identification by SEMID's subset enumeration (unlimited subset size): the oracle.

    Mirrors ``edgewiseIdentifyStep(..., subsetSizeControl=Inf)`` iterated to a fixpoint (SEMID
    ``generalGenericID``), in Gauss-Seidel sweeps over nodes ``0..n-1``.  For node :math:`i` with unsolved
    parents :math:`U \ne \emptyset`:

    1. allowed :math:`j`: :math:`j \ne i`, :math:`j \notin \mathrm{sib}(i)`,
       :math:`\mathrm{htr\_from}(j) \cap U \ne \emptyset` and
       :math:`\mathrm{htr\_from}(i) \cap \mathrm{unsolvedPa}(j) = \emptyset`;
    2. :math:`T(a) = \bigl(\mathrm{htr\_from}(a) \cup \bigcup_{u \in \mathrm{unsolvedPa}(a)}
       \mathrm{tr\_from}(u)\bigr) \cap U`;
    3. for :math:`S \subseteq U` by decreasing size, then lexicographically: with
       :math:`A_S = \{a : T(a) \subseteq S\} \ne \emptyset`, if a half-trek system from a subset
       :math:`Y \subseteq A_S` onto :math:`S` exists, the edges :math:`S \to i` are identified via :math:`Y`;
       at most one :math:`S` per node per sweep.

    Exponential in the in-degree (it is the oracle the polynomial :func:`edgewise_identify` is tested
    against).

    Parameters
    ----------
    n, directed, bidirected
        The graph: node count, (k, 2) and (m, 2) integer edge arrays, as in :func:`htc_identify`.
    seed, prime : int
        Accepted for signature compatibility with :func:`edgewise_identify` and ignored.

    Returns
    -------
    dict
        ``edge_solved`` : bool array over the input directed edges (input order);
        ``node_solved`` : bool array (n,) -- all edges into the node identified;
        ``steps`` : list of ``(node, S, Y)`` (sorted lists) in application order;
        ``rounds`` : sweeps that identified at least one edge; ``tests`` : max-flow calls.

    Examples
    --------
    >>> edgewise_identify_enumerate(3, [(0, 1), (1, 2)], [(1, 2)])["steps"]
    [(1, [0], [0]), (2, [1], [0])]
    """
    g = _G(n, directed, bidirected)

    def find(i: int, U: set[int], allowed: list[int], T: dict[int, set[int]]):
        tests = 0
        if not allowed:
            return [], [], 0
        for k in range(len(U), 0, -1):
            for S in combinations(sorted(U), k):
                A = [a for a in allowed if T[a] <= set(S)]
                if not A:
                    continue
                tests += 1
                size, active = half_trek_system(g, A, list(S))
                if size == len(S):
                    return list(S), active, tests
        return [], [], tests

    return _edgewise_fixpoint(g, find)


def edgewise_identify(n: int, directed: Any, bidirected: Any, seed: int = 0,
                      prime: int = DEFAULT_PRIME) -> dict:
    r"""Edgewise identification in polynomial time (no subset enumeration), randomized over :math:`\mathbb{F}_p`.

    With :math:`M = \Omega(I-\Lambda)^{-1}` over :math:`\mathbb{F}_p` as in :func:`htc_identify`, and
    :math:`A`, :math:`T(a)` as in :func:`edgewise_identify_enumerate`, call :math:`S \subseteq U` *good* if
    :math:`\operatorname{rank} M[A_S, S] = |S|` with :math:`A_S = \{a \in A : T(a) \subseteq S\}`.  Rows of
    :math:`M[A_S, U]` vanish outside :math:`S` (``M[a, w] != 0`` only for :math:`w \in \mathrm{htr\_from}(a)`),
    so :math:`S` is good iff :math:`\mathrm{rowspace}\, M[A_S, U] = \mathbb{F}_p^S`; hence the union of good
    sets is good and the largest good set :math:`S^*` is the limit of
    :math:`S_0 = U,\ S_{k+1} = \{w \in S_k : e_w \in \mathrm{rowspace}\, M[A_{S_k}, U]\}`.
    Each sweep applies :math:`S^*` (if nonempty) for every node; the fixpoint equals the enumeration's.
    Same signature and output as ``fastnips._C.edgewise_identify`` and as the enumeration oracle
    :func:`edgewise_identify_enumerate` (``tests`` counts rank computations); same one-sided error as the
    randomized HTC test.  The sources :math:`Y` of a step are the first rows (ascending) of
    :math:`A_{S^*}` that span :math:`\mathbb{F}_p^{S^*}`.

    L. Weihs, B. Robinson, E. Dufresne et al. (2018), "Determinantal generalizations of instrumental
    variables", J. Causal Inference 6(1).

    Parameters
    ----------
    n, directed, bidirected
        The graph: node count, (k, 2) and (m, 2) integer edge arrays, as in :func:`htc_identify`.
    seed : int
        Seeds the random field elements.
    prime : int
        The field size :math:`p` (a prime below :math:`2^{62}`).

    Returns
    -------
    dict
        As :func:`edgewise_identify_enumerate` (``tests`` counts rank computations).

    Examples
    --------
    >>> edgewise_identify(3, [(0, 1), (1, 2)], [(1, 2)])["node_solved"].tolist()
    [True, True, True]
    """
    _check_method_prime("randomized", prime)
    g = _G(n, directed, bidirected)
    p = int(prime)
    M = _random_half_trek_matrix(g, int(seed), p) if g.n else []

    def find(i: int, U: set[int], allowed: list[int], T: dict[int, set[int]]):
        S, tests = sorted(U), 0
        while S:
            tests += 1
            keep = _unit_vectors_in_rowspace(M, [a for a in allowed if T[a] <= set(S)], S, p)
            if len(keep) == len(S):
                break
            S = keep
        Y = sorted(_independent_rows(M, [a for a in allowed if T[a] <= set(S)], S, p, need=len(S))) if S else []
        return S, Y, tests

    return _edgewise_fixpoint(g, find)
