r"""The HTC fixpoint, plain and per Tian c-component.

Plain HTC (Foygel, Draisma & Drton 2012, §6; SEMID ``htcIdentifyStep`` / ``graphID.htcID``): start with
the parentless nodes solved; a node :math:`v` becomes solved when some :math:`Y \subseteq A_v` with
:math:`|Y| = |\mathrm{pa}(v)|` reaches :math:`\mathrm{pa}(v)` by a system of half-treks without sided
intersection, where the *allowed nodes* are

.. math:: A_v = \bigl(S \cup (V \setminus \mathrm{htr\_from}(v))\bigr) \setminus (\{v\} \cup \mathrm{sib}(v)).

:math:`A_v` only grows with the solved set :math:`S`, so the fixpoint does not depend on visiting order.
The reference uses Jacobi rounds (every unsolved node is tested against the solved set of the previous
round), SEMID Gauss-Seidel sweeps; the fixpoint is the same.

Tian mode (Tian 2005; SEMID's default ``htcID``) splits :math:`G` into c-components: the connected
components of the graph on :math:`V` whose edges are the bidirected edges plus "same strongly connected
component of :math:`(V, D)`" (SEMID's ``tianDecompose``, which merges bidirected components that share a
directed cycle).  Component :math:`C` gives the *component graph* :math:`G_C` on :math:`C \cup
\mathrm{pa}(C)` with every directed edge into :math:`C` and every bidirected edge inside :math:`C`; plain HTC
runs on each :math:`G_C` and a node of :math:`C` is solved iff it is solved in :math:`G_C`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._ref_maxflow import half_trek_system
from ._ref_mixed_graph import _G, _condensation_positions, _strong_components, htr_from
from ._ref_modp import DEFAULT_PRIME, _check_method_prime, _random_half_trek_matrix
from ._ref_rank import _independent_rows


def _htc_plain(g: _G, method: str, seed: int, prime: int) -> dict:
    n = g.n
    htr = [htr_from(g, v) for v in range(n)]
    if method == "randomized" and n > 0:
        M = _random_half_trek_matrix(g, seed, prime)

    def test(v: int, allowed: list[int]) -> list[int] | None:
        P = g.pa[v]
        if method == "maxflow":
            size, active = half_trek_system(g, allowed, P)
            return active if size == len(P) else None
        chosen = _independent_rows(M, allowed, P, prime, need=len(P))
        return sorted(chosen) if len(chosen) == len(P) else None

    solved = [not g.pa[v] for v in range(n)]
    order = [v for v in range(n) if solved[v]]
    sources: list[list[int]] = [[] for _ in range(n)]
    rounds = tests = 0
    while True:
        newly = []
        for v in range(n):
            if solved[v]:
                continue
            excluded = {v, *g.sib[v]}
            allowed = [a for a in range(n) if a not in excluded and (solved[a] or a not in htr[v])]
            if len(allowed) < len(g.pa[v]):
                continue
            tests += 1
            Y = test(v, allowed)
            if Y is not None:
                newly.append((v, Y))
        if not newly:
            break
        rounds += 1
        for v, Y in newly:  # Jacobi: apply after the sweep
            solved[v] = True
            order.append(v)
            sources[v] = Y
    return {"solved": np.array(solved, dtype=bool), "order": order, "sources": sources,
            "rounds": rounds, "tests": tests}


def tian_decompose(g: _G) -> tuple[list[dict], np.ndarray]:
    r"""Tian c-components in SEMID's sense (bidirected components merged along directed cycles).

    Returns ``(components, component)``: ``component[v]`` is the id of the component with :math:`v`
    internal; components are numbered ``0, 1, ...`` by increasing smallest internal node.  Each entry of
    ``components`` is a dict with

    ``internal``
        sorted nodes :math:`C` of the component;
    ``incoming``
        sorted :math:`\mathrm{pa}(C) \setminus C`;
    ``top_order``
        :math:`C \cup \mathrm{pa}(C)` in a topological order of the condensation of :math:`(V, D)` (ties
        broken by smallest node; nodes of one strongly connected component in increasing order), as
        needed by the Tian covariance map (SEMID ``tianSigmaForComponent``).

    Parameters
    ----------
    g : _G
        The graph (``_G(n, directed, bidirected)``).

    Returns
    -------
    components : list of dict
        As above, indexed by component id.
    component : ndarray of int64, shape (n,)
        The component id of every node.

    Examples
    --------
    >>> comps, component = tian_decompose(_G(3, [(0, 1), (1, 2)], [(1, 2)]))
    >>> component.tolist(), comps[1]["incoming"]
    ([0, 1, 1], [0])
    """
    n = g.n
    scc = _strong_components(g)
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    first_in_scc: dict[int, int] = {}
    for v in range(n):
        if scc[v] in first_in_scc:
            union(v, first_in_scc[scc[v]])
        else:
            first_in_scc[scc[v]] = v
    for i, j in g.bidirected:
        union(i, j)
    members: dict[int, list[int]] = {}  # root -> its nodes, ascending; roots in order of their smallest node
    for v in range(n):
        members.setdefault(find(v), []).append(v)
    component = np.zeros(n, dtype=np.int64)
    for c, internal in enumerate(members.values()):
        component[internal] = c

    position = _condensation_positions(g, scc)

    comps = []
    for internal in members.values():
        inset = set(internal)
        incoming = sorted({p for v in internal for p in g.pa[v]} - inset)
        top_order = sorted(internal + incoming, key=lambda v: position[v])
        comps.append({"internal": internal, "incoming": incoming, "top_order": top_order})
    return comps, component


def component_graph(g: _G, comp: dict) -> tuple[_G, list[int]]:
    r"""The component graph :math:`G_C`: nodes :math:`C \cup \mathrm{pa}(C)`, every directed edge into
    :math:`C`, every bidirected edge inside :math:`C`, labelled by position in ``comp["top_order"]``.

    Parameters
    ----------
    g : _G
    comp : dict
        One entry of the components returned by :func:`tian_decompose`.

    Returns
    -------
    local_graph : _G
    nodes : list of int
        ``nodes[local] = global``.
    """
    nodes = comp["top_order"]
    local = {v: k for k, v in enumerate(nodes)}
    internal = set(comp["internal"])
    d = [(local[i], local[j]) for i, j in g.directed if j in internal]
    b = [(local[i], local[j]) for i, j in g.bidirected if i in internal]
    return _G(len(nodes), np.array(d, dtype=np.int64).reshape(-1, 2),
              np.array(b, dtype=np.int64).reshape(-1, 2)), nodes


def _htc_tian(g: _G, method: str, seed: int, prime: int) -> dict:
    n = g.n
    comps, component = tian_decompose(g)
    solved = np.zeros(n, dtype=bool)
    order: list[int] = []
    sources: list[list[int]] = [[] for _ in range(n)]
    rounds = tests = 0
    for comp in comps:
        lg, nodes = component_graph(g, comp)
        res = _htc_plain(lg, method, seed, prime)
        internal = set(comp["internal"])
        for lv in res["order"]:
            v = nodes[lv]
            if v in internal:
                solved[v] = True
                order.append(v)
                sources[v] = sorted(nodes[y] for y in res["sources"][lv])
        rounds = max(rounds, res["rounds"])
        tests += res["tests"]
    return {"solved": solved, "order": order, "sources": sources, "rounds": rounds, "tests": tests,
            "component": component}


def htc_identify(n: int, directed: Any, bidirected: Any, method: str = "randomized", tian: bool = False,
                 seed: int = 0, prime: int = DEFAULT_PRIME) -> dict:
    r"""HTC fixpoint (plain or Tian-decomposed), same signature and output as ``fastnips._C.htc_identify``.

    Solves node :math:`v` once :math:`\operatorname{rank} M[A_v, \mathrm{pa}(v)] = |\mathrm{pa}(v)|`
    (``"randomized"``, :math:`M = \Omega(I-\Lambda)^{-1}` at a random point of :math:`\mathbb{F}_p`) or once
    the max-flow onto :math:`\mathrm{pa}(v)` from :math:`A_v` is :math:`|\mathrm{pa}(v)|` (``"maxflow"``);
    Foygel, Draisma & Drton (2012), "Half-trek criterion for generic identifiability of linear structural
    equation models", Ann. Statist. 40(3); Tian (2005) for ``tian=True``.

    Parameters
    ----------
    n : int
        Number of nodes.
    directed, bidirected : int arrays of shape (k, 2), (m, 2)
        Edges :math:`i \to j` and :math:`i \leftrightarrow j`.
    method : {"randomized", "maxflow"}
    tian : bool
        Run the fixpoint on each Tian c-component.
    seed : int
        Seeds the random field elements (``method="randomized"`` only).
    prime : int
        The field size :math:`p` (``method="randomized"`` only).

    Returns
    -------
    dict
        ``solved`` : bool array (n,) -- every edge into the node is identified;
        ``order`` : list of the solved nodes in solve order (parentless nodes first, ascending; in Tian
        mode grouped by component id);
        ``sources`` : list (n,) of sorted lists -- the :math:`Y_v` used for :math:`v` (``[]`` if parentless
        or unsolved); in Tian mode :math:`Y_v \subseteq C \cup \mathrm{pa}(C)` in global ids, and the
        half-trek system lives in the component graph :math:`G_C`;
        ``rounds`` : number of Jacobi rounds that solved at least one node (Tian: max over components);
        ``tests`` : number of max-flow / rank tests run (Tian: summed over components);
        ``component`` (Tian only) : int array (n,) of component ids, see :func:`tian_decompose`.

    Examples
    --------
    >>> htc_identify(3, [(0, 1), (1, 2)], [(1, 2)], method="maxflow")["sources"]
    [[], [0], [0]]
    """
    _check_method_prime(method, prime)
    g = _G(n, directed, bidirected)
    return _htc_tian(g, method, int(seed), int(prime)) if tian else _htc_plain(g, method, int(seed), int(prime))


def htc_identify_many(graphs: list, method: str = "randomized", tian: bool = False, seed: int = 0,
                      prime: int = DEFAULT_PRIME) -> list[dict]:
    """:func:`htc_identify` over a list of ``(n, directed, bidirected)`` triples (a plain loop).

    Parameters
    ----------
    graphs : list of (int, array, array)
        ``(n, directed, bidirected)`` per graph.
    method, tian, seed, prime
        As in :func:`htc_identify`, the same for every graph.

    Returns
    -------
    list of dict
        One :func:`htc_identify` result per graph, in order.

    Examples
    --------
    >>> [bool(r["solved"].all()) for r in htc_identify_many([(2, [(0, 1)], []), (2, [(0, 1)], [(0, 1)])])]
    [True, False]
    """
    return [htc_identify(n, d, b, method, tian, seed, prime) for n, d, b in graphs]
