r"""Ancestral identification (Drton & Weihs 2016; SEMID ``ancestralIdentifyStep``) and global identifiability
(Drton, Foygel & Sullivant 2011; SEMID ``globalID``).

Ancestral step, for an unsolved node :math:`i` (SEMID 0.4.2's two branches, kept as they are):

1. :math:`G_1` = the Tian component graph of :math:`i` inside the subgraph induced by the ancestors
   :math:`\mathrm{an}(i)`; allowed :math:`A_1 = ((S \setminus \mathrm{sib}_{G_1}(i)) \cup (V(G_1)
   \setminus \mathrm{htr}_{G_1}(i))) \cap V(G_1)` (:math:`S` = solved nodes).  If :math:`|A_1| \ge
   |\mathrm{pa}(i)|` the node is solved iff a half-trek system in :math:`G_1` reaches :math:`\mathrm{pa}(i)`
   from :math:`A_1`, and the second branch is not tried.
2. Otherwise, with :math:`B = (\mathrm{an}(i) \cup \mathrm{sib}(\mathrm{an}(i))) \cap ((S \cup (V \setminus
   \mathrm{htr}(i))) \setminus (\{i\} \cup \mathrm{sib}(i)))`, :math:`H` = the subgraph induced by
   :math:`\mathrm{an}(\{i\} \cup B)`, :math:`G_2` = the Tian component graph of :math:`i` in :math:`H`, and
   allowed :math:`A_2` built as :math:`A_1` but in :math:`H`, the half-trek system is sought in :math:`G_2`.
   SEMID 0.4.2 stops with an error ("nodes given to function getTrekSystem ... must be nodes in the graph")
   when :math:`A_2 \not\subseteq V(G_2)`; here :math:`A_2` is intersected with :math:`V(G_2)` instead.

Global identifiability (the criterion of Drton, Foygel & Sullivant 2011, Thm 2, as SEMID checks it): the
graph is acyclic and, recursively, every bidirected component with more than one node has at least two
sinks, and so do the bidirected components of the subgraph induced by the ancestors (within the
component) of each of its sinks.
"""

from __future__ import annotations

from ._ref_fixpoint import component_graph, tian_decompose
from ._ref_generic import native_sweep
from ._ref_maxflow import half_trek_system
from ._ref_mixed_graph import _G, _descendants, _strong_components, htr_from


def _induced(g: _G, nodes: set[int]) -> tuple[_G, list[int]]:
    """The subgraph induced by ``nodes`` on local ids ``0..`` (ascending global ids) and the id list."""
    glob = sorted(nodes)
    loc = {v: k for k, v in enumerate(glob)}
    d = [(loc[i], loc[j]) for i, j in g.directed if i in loc and j in loc]
    b = [(loc[i], loc[j]) for i, j in g.bidirected if i in loc and j in loc]
    return _G(len(glob), d, b), glob


def _tian_component_graph(h: _G, hglob: list[int], i: int) -> tuple[_G, list[int]]:
    """Tian component graph of global node ``i`` inside ``h`` (global ids ``hglob``), with global ids."""
    comps, component = tian_decompose(h)
    cg, cnodes = component_graph(h, comps[component[hglob.index(i)]])
    return cg, [hglob[x] for x in cnodes]


def _solves(i: int, pa: list[int], cg: _G, cglob: list[int], allowed: set[int]) -> bool:
    loc = {v: k for k, v in enumerate(cglob)}
    size, _ = half_trek_system(cg, sorted(loc[a] for a in allowed if a in loc), [loc[p] for p in pa])
    return size == len(pa)


def _allowed_in(h: _G, hglob: list[int], i: int, solved: set[int]) -> set[int]:
    loc = hglob.index(i)
    sib = {hglob[x] for x in h.sib[loc]}
    htr = {hglob[x] for x in htr_from(h, loc)}
    return ((solved - sib) | (set(hglob) - htr)) & set(hglob)


def ancestral_step(ctx, unsolved: list[set[int]]) -> list[tuple[int, int]]:
    """One Gauss-Seidel sweep of SEMID's ``ancestralIdentifyStep`` (exact max-flows)."""
    if ctx.native is not None:  # the same sweep in the native core (exact max-flows)
        return native_sweep(ctx.native.ancestral_sweep, ctx, unsolved)
    g = ctx.g
    new: list[tuple[int, int]] = []
    solved = {v for v, u in enumerate(unsolved) if not u}
    for i in range(g.n):
        if not unsolved[i]:
            continue
        pa = g.pa[i]
        an = ctx.get(f"an{i}", lambda i=i: _descendants({i}, g.pa))
        cg, cglob = ctx.get(f"anc{i}", lambda i=i, an=an: _tian_component_graph(*_induced(g, an), i))
        allowed = _allowed_in(cg, cglob, i, solved)
        if len(allowed) >= len(pa):
            ok = _solves(i, pa, cg, cglob, allowed)
        else:
            an_sib = an | {s for a in an for s in g.sib[a]}
            excluded = {i, *g.sib[i]}
            B = {v for v in an_sib if (v in solved or v not in ctx.htr[i]) and v not in excluded}
            h, hglob = _induced(g, _descendants({i} | B, g.pa))
            cg, cglob = _tian_component_graph(h, hglob, i)
            allowed = _allowed_in(h, hglob, i, solved)
            ok = len(allowed) >= len(pa) and _solves(i, pa, cg, cglob, allowed)
        if ok:
            new += [(j, i) for j in sorted(unsolved[i])]
            unsolved[i] = set()
            solved.add(i)
    return new


def global_identifiable(n: int, directed, bidirected) -> bool:
    """SEMID ``globalID``: ``False`` for a cyclic graph, else the recursive two-sinks criterion.

    Parameters
    ----------
    n, directed, bidirected
        The graph: node count, (k, 2) and (m, 2) integer edge arrays.

    Returns
    -------
    bool

    Examples
    --------
    >>> global_identifiable(3, [(0, 1), (1, 2)], [(1, 2)])  # the IV graph: generically, not globally
    False
    """
    g = _G(n, directed, bidirected)
    scc = _strong_components(g)
    if len(set(scc)) != g.n:
        return False
    todo = _bidirected_components(g, set(range(g.n)))
    while todo:
        comp = todo.pop(0)
        sinks = [v for v in sorted(comp) if not any(w in comp for w in g.ch[v])]
        if len(sinks) == 1:
            return False
        for s in sinks:
            anc = _reach_within(g.pa, s, comp)
            if len(anc) > 1:
                todo += _bidirected_components(g, anc)
    return True


def _reach_within(adj: list[list[int]], start: int, nodes: set[int]) -> set[int]:
    """Nodes reachable from ``start`` along ``adj`` without leaving ``nodes`` (``start`` included)."""
    seen, stack = {start}, [start]
    while stack:
        u = stack.pop()
        for w in adj[u]:
            if w in nodes and w not in seen:
                seen.add(w)
                stack.append(w)
    return seen


def _bidirected_components(g: _G, nodes: set[int]) -> list[set[int]]:
    """Connected components (more than one node) of the bidirected edges inside ``nodes``."""
    out, seen = [], set()
    for v in sorted(nodes):
        if v not in seen:
            comp = _reach_within(g.sib, v, nodes)
            seen |= comp
            if len(comp) > 1:
                out.append(comp)
    return out
