r"""The mixed graph as adjacency lists, reachability (half-treks, treks) and strongly connected components.

Conventions (SEMID's): ``htr_from(v)`` :math:`= \mathrm{de}(\{v\} \cup \mathrm{sib}(v))` is every node a
half-trek from :math:`v` reaches, *including* :math:`v` and :math:`\mathrm{sib}(v)` (Foygel, Draisma & Drton
2012 define :math:`\mathrm{htr}(v)` without them, which makes no difference to the criteria);
``tr_from(v)`` :math:`= \mathrm{de}(\mathrm{an}(v) \cup \mathrm{sib}(\mathrm{an}(v)))` is every node a trek
from :math:`v` reaches.
"""

from __future__ import annotations

import heapq
from collections import deque
from typing import Any

import numpy as np


class _G:
    """Adjacency lists of a mixed graph given as raw edge arrays (internal helper)."""

    def __init__(self, n: int, directed: Any, bidirected: Any) -> None:
        self.n = int(n)
        self.directed = list(map(tuple, np.asarray(directed, dtype=np.int64).reshape(-1, 2).tolist()))
        self.bidirected = list(map(tuple, np.asarray(bidirected, dtype=np.int64).reshape(-1, 2).tolist()))
        self.pa: list[list[int]] = [[] for _ in range(self.n)]
        self.ch: list[list[int]] = [[] for _ in range(self.n)]
        self.sib: list[list[int]] = [[] for _ in range(self.n)]
        for i, j in self.directed:
            self.pa[j].append(i)
            self.ch[i].append(j)
        for i, j in self.bidirected:
            self.sib[i].append(j)
            self.sib[j].append(i)
        for lst in (self.pa, self.ch, self.sib):
            for x in lst:
                x.sort()


def _descendants(starts: set[int] | list[int], ch: list[list[int]]) -> set[int]:
    """Nodes reachable from ``starts`` along directed edges, ``starts`` included."""
    seen = set(starts)
    queue = deque(seen)
    while queue:
        u = queue.popleft()
        for w in ch[u]:
            if w not in seen:
                seen.add(w)
                queue.append(w)
    return seen


def htr_from(g: _G, v: int) -> set[int]:
    r"""Half-trek reachable set, SEMID convention: :math:`\mathrm{de}(\{v\} \cup \mathrm{sib}(v))`.

    Parameters
    ----------
    g : _G
        The graph (``_G(n, directed, bidirected)``).
    v : int
        A node.

    Returns
    -------
    set of int

    Examples
    --------
    >>> sorted(htr_from(_G(3, [(0, 1), (1, 2)], [(0, 2)]), 0))
    [0, 1, 2]
    """
    return _descendants({v, *g.sib[v]}, g.ch)


def tr_from(g: _G, v: int) -> set[int]:
    r"""Trek reachable set (SEMID ``trFrom``): :math:`\mathrm{de}(\mathrm{an}(v) \cup \mathrm{sib}(\mathrm{an}(v)))`.

    Parameters
    ----------
    g : _G
    v : int

    Returns
    -------
    set of int

    Examples
    --------
    >>> sorted(tr_from(_G(3, [(0, 1)], [(0, 2)]), 1))
    [0, 1, 2]
    """
    an = _descendants({v}, g.pa)  # ancestors of v, v included
    tops = set(an)
    for a in an:
        tops.update(g.sib[a])
    return _descendants(tops, g.ch)


def _strong_components(g: _G) -> list[int]:
    """Strongly connected component id of every node (Kosaraju, iterative)."""
    n = g.n
    seen = [False] * n
    finish: list[int] = []
    for s in range(n):
        if seen[s]:
            continue
        seen[s] = True
        stack = [(s, iter(g.ch[s]))]
        while stack:
            u, it = stack[-1]
            for w in it:
                if not seen[w]:
                    seen[w] = True
                    stack.append((w, iter(g.ch[w])))
                    break
            else:
                stack.pop()
                finish.append(u)
    comp = [-1] * n
    c = 0
    for s in reversed(finish):
        if comp[s] != -1:
            continue
        comp[s] = c
        stack2 = [s]
        while stack2:
            u = stack2.pop()
            for w in g.pa[u]:
                if comp[w] == -1:
                    comp[w] = c
                    stack2.append(w)
        c += 1
    return comp


def _condensation_positions(g: _G, scc: list[int]) -> list[int]:
    """Position of every node in a topological order of the condensation of :math:`(V, D)` (Kahn, the
    strongly connected component with the smallest node first; members of one component ascending)."""
    n = g.n
    nscc = max(scc) + 1 if n else 0
    members: list[list[int]] = [[] for _ in range(nscc)]
    for v in range(n):
        members[scc[v]].append(v)
    succ: list[set[int]] = [set() for _ in range(nscc)]
    indeg = [0] * nscc
    for i, j in g.directed:
        a, b = scc[i], scc[j]
        if a != b and b not in succ[a]:
            succ[a].add(b)
            indeg[b] += 1
    heap = [(members[c][0], c) for c in range(nscc) if indeg[c] == 0]
    heapq.heapify(heap)
    position = [0] * n
    k = 0
    while heap:
        _, c = heapq.heappop(heap)
        for v in members[c]:
            position[v] = k
            k += 1
        for d in succ[c]:
            indeg[d] -= 1
            if indeg[d] == 0:
                heapq.heappush(heap, (members[d][0], d))
    return position
