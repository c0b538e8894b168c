r"""Max-flow tests: half-trek systems (Menger) and the non-identifiability certificate.

A system of half-treks without sided intersection (distinct starts, vertex-disjoint right sides) from a
subset of :math:`A` onto :math:`P` exists iff the max-flow on the network of Foygel, Draisma & Drton (2012)
is :math:`|P|`.  Nodes: source :math:`s`, sink :math:`t`, a left copy :math:`L(w)` and a split right copy
:math:`R_{in}(w) \to R_{out}(w)` (capacity 1) of every node; arcs :math:`s \to L(a)` (:math:`a \in A`),
:math:`L(w) \to R_{in}(w)`, :math:`L(w) \to R_{in}(u)` for :math:`u \in \mathrm{sib}(w)`,
:math:`R_{out}(w) \to R_{in}(u)` for :math:`w \to u`, and :math:`R_{out}(p) \to t` for :math:`p \in P`; all
capacities 1.  Solved by a plain BFS augmenting-path (Edmonds-Karp) max-flow.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from ._ref_mixed_graph import _G


class _FlowNetwork:
    """A small unit-capacity flow network with BFS augmenting paths (Edmonds-Karp)."""

    def __init__(self, num_nodes: int) -> None:
        self.adj: list[list[int]] = [[] for _ in range(num_nodes)]
        self.head: list[int] = []
        self.cap: list[int] = []

    def add_arc(self, u: int, v: int, cap: int = 1) -> int:
        """Add ``u -> v`` with capacity ``cap`` and its residual twin; return the arc id."""
        self.adj[u].append(len(self.head))
        self.head.append(v)
        self.cap.append(cap)
        self.adj[v].append(len(self.head))
        self.head.append(u)
        self.cap.append(0)
        return len(self.head) - 2

    def max_flow(self, s: int, t: int, limit: int | None = None) -> int:
        """Augment shortest paths until none is left (or ``limit`` units are routed)."""
        flow = 0
        while limit is None or flow < limit:
            parent_arc = [-1] * len(self.adj)
            parent_arc[s] = -2
            queue = deque([s])
            while queue and parent_arc[t] == -1:
                u = queue.popleft()
                for a in self.adj[u]:
                    w = self.head[a]
                    if self.cap[a] > 0 and parent_arc[w] == -1:
                        parent_arc[w] = a
                        queue.append(w)
            if parent_arc[t] == -1:
                break
            w = t
            while w != s:  # every arc has capacity 1 here, so the bottleneck is 1
                a = parent_arc[w]
                self.cap[a] -= 1
                self.cap[a ^ 1] += 1
                w = self.head[a ^ 1]
            flow += 1
        return flow


def half_trek_system(g: _G, sources: list[int], targets: list[int]) -> tuple[int, list[int]]:
    r"""Largest system of half-treks without sided intersection from a subset of ``sources`` into ``targets``.

    The max-flow from :math:`s` to :math:`t` on the network described in the module docstring (Foygel,
    Draisma & Drton 2012, Lemma 3 and §6).

    Parameters
    ----------
    g : _G
        The graph (``_G(n, directed, bidirected)``).
    sources : list of int
        Candidate start nodes :math:`A`.
    targets : list of int
        End nodes :math:`P`.

    Returns
    -------
    size : int
        The size of a maximum system; a system onto all of ``targets`` exists iff ``size == len(targets)``.
    active_sources : list of int
        Sorted starts of the half-treks of one maximum system.

    Examples
    --------
    The instrument 0 reaches the parent 1 of node 2 (:math:`0 \to 1 \to 2`, :math:`1 \leftrightarrow 2`):

    >>> half_trek_system(_G(3, [(0, 1), (1, 2)], [(1, 2)]), [0], [1])
    (1, [0])
    """
    n = g.n
    s, t = 0, 1

    def L(w: int) -> int:
        return 2 + w

    def Rin(w: int) -> int:
        return 2 + n + w

    def Rout(w: int) -> int:
        return 2 + 2 * n + w

    net = _FlowNetwork(2 + 3 * n)
    src_arc = {a: net.add_arc(s, L(a)) for a in sources}
    for a in sources:  # left sides: the trivial one, or one bidirected edge
        net.add_arc(L(a), Rin(a))
        for u in g.sib[a]:
            net.add_arc(L(a), Rin(u))
    for w in range(n):  # right sides: vertex-disjoint directed paths
        net.add_arc(Rin(w), Rout(w))
        for u in g.ch[w]:
            net.add_arc(Rout(w), Rin(u))
    for p in targets:
        net.add_arc(Rout(p), t)
    size = net.max_flow(s, t, limit=len(targets))
    active = sorted(a for a, arc in src_arc.items() if net.cap[arc] == 0)
    return size, active


def htc_nonidentifiable(n: int, directed: Any, bidirected: Any) -> bool:
    r"""Certificate of generic infinite-to-one-ness (Foygel, Draisma & Drton 2012, Theorem 2).

    If every family :math:`(Y_v)_{v}` of node sets either has a :math:`Y_v` failing the HTC for :math:`v`
    or has :math:`v \in Y_w, w \in Y_v` for some pair, the parametrization is generically infinite-to-one
    (SEMID ``graphID.nonHtcID``).  This is decided by one max-flow on a network with :math:`2n^2 + N + 2`
    nodes (:math:`N` = number of non-sibling pairs): source :math:`\to L\{i,j\}` for each non-sibling pair,
    :math:`L\{i,j\}` to :math:`R_i(j)` and :math:`R_i(k)_{in}` for :math:`k \in \mathrm{sib}(j)` (and
    symmetrically), :math:`R_i(j)_{in} \to R_i(j)_{out}`, :math:`R_i(j)_{out} \to R_i(k)_{in}` for
    :math:`j \to k`, :math:`R_i(j)_{out} \to` sink for :math:`j \in \mathrm{pa}(i)`; unit capacities.  Uses
    :func:`scipy.sparse.csgraph.maximum_flow`; memory :math:`O(n^2 + n|D| + n|B| + N)`.

    Parameters
    ----------
    n, directed, bidirected
        The graph: node count, (k, 2) and (m, 2) integer edge arrays, as in :func:`htc_identify`.

    Returns
    -------
    bool
        ``True`` (certified non-identifiable) iff the max-flow is below :math:`|D|`; ``False`` means
        inconclusive or identifiable.

    Examples
    --------
    >>> htc_nonidentifiable(2, [(0, 1)], [(0, 1)])  # the bow: never identifiable
    True
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    g = _G(n, directed, bidirected)
    m = g.n
    if m <= 1:
        return False
    sibset = [set(s) for s in g.sib]
    nonsibs = [(i, j) for i in range(m) for j in range(i + 1, m) if j not in sibset[i]]
    N = len(nonsibs)
    src, snk = 0, 1

    def Rin(i: int, j: int) -> int:
        return 2 + N + i * m + j

    def Rout(i: int, j: int) -> int:
        return 2 + N + m * m + i * m + j

    arcs: set[tuple[int, int]] = set()
    for k, (i, j) in enumerate(nonsibs):
        Lk = 2 + k
        arcs.add((src, Lk))
        for kk in [j, *g.sib[j]]:
            arcs.add((Lk, Rin(i, kk)))
        for kk in [i, *g.sib[i]]:
            arcs.add((Lk, Rin(j, kk)))
    for i in range(m):
        for j in g.pa[i]:
            arcs.add((Rout(i, j), snk))
        for j in range(m):
            arcs.add((Rin(i, j), Rout(i, j)))
            for k in g.ch[j]:
                arcs.add((Rout(i, j), Rin(i, k)))
    size = 2 + N + 2 * m * m
    rows, cols = zip(*sorted(arcs))
    C = csr_matrix((np.ones(len(rows), dtype=np.int32), (np.array(rows), np.array(cols))), shape=(size, size))
    value = maximum_flow(C, src, snk).flow_value
    return bool(value < len(g.directed))
