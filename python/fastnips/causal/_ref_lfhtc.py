r"""The latent-factor half-trek criterion (Barber, Drton, Sturma & Weihs 2022; SEMID ``lfhtcIdentifyStep``).

Graph: observed nodes :math:`0..n-1` with directed edges among them, and latent nodes :math:`n..n+\ell-1`
that are sources (every latent edge is latent :math:`\to` observed).  An observed node :math:`v` is solved
(all its observed parents :math:`P` identified) when, for some set :math:`L` of latent nodes with at least 4
children and some :math:`Z \subseteq (S \cap \mathrm{ch}(L)) \setminus (\{v\} \cup P)`, :math:`|Z| = |L|`
(:math:`S` = solved nodes), a trek system without sided intersection goes from

.. math:: Y \subseteq O \setminus \bigl((\mathrm{de}(\{v\} \cup Z) \cup \mathrm{tr}(H)) \setminus S\bigr)
          \setminus (\mathrm{ch}(H) \cup Z \cup \{v\})

onto :math:`P \cup Z`, where :math:`H` are the latent parents of :math:`\{v\} \cup Z` outside :math:`L`, the
left sides use no edge between observed nodes (a left side is a node or a node and one latent parent),
and the right sides enter :math:`Z` by no edge between observed nodes.  As in SEMID each step solves at
most one node (the first in node order) and the loop repeats until nothing changes; exact max-flows.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from ._ref_mixed_graph import _G, _descendants
from ._ref_trek import trek_system_size


def _solves(g: _G, n: int, v: int, solved: set[int], controlled: list[int], obs_edges: tuple) -> bool:
    latent = set(range(n, g.n))
    P = [p for p in g.pa[v] if p < n]
    for k in range(len(controlled) + 1):
        for L in combinations(controlled, k):
            ch_L = {c for h in L for c in g.ch[h]}
            pool = sorted((solved & ch_L) - {v, *P})
            for Z in combinations(pool, k):
                H = {h for x in (v, *Z) for h in g.pa[x] if h in latent} - set(L)
                reach = _descendants({v, *Z}, g.ch) | _descendants(H, g.ch)
                banned = (reach - solved) | {c for h in H for c in g.ch[h]} | set(Z) | {v}
                allowed = [a for a in range(n) if a not in banned]
                avoid_right = tuple(e for e in obs_edges if e[1] in Z)
                if trek_system_size(g, allowed, [*P, *Z], avoid_right, obs_edges) == len(P) + len(Z):
                    return True
    return False


def lfhtc_identify(n: int, n_latent: int, directed, latent_edges) -> dict:
    r"""LF-HTC fixpoint (SEMID ``lfhtcID``) on a latent digraph.

    Parameters
    ----------
    n : int
        Observed nodes ``0..n-1``.
    n_latent : int
        Latent nodes, numbered ``0..n_latent-1`` in ``latent_edges``.
    directed : (k, 2) int array
        Edges among observed nodes.
    latent_edges : (m, 2) int array
        ``(h, v)``: latent ``h`` :math:`\to` observed ``v``.

    Returns
    -------
    dict
        ``edge_solved`` (bool per observed directed edge), ``node_solved`` (bool (n,)), ``rounds``.

    Examples
    --------
    >>> lfhtc_identify(3, 1, [(0, 1), (1, 2)], [(0, 0), (0, 2)])["node_solved"].tolist()
    [True, True, True]
    """
    d = [(int(i), int(j)) for i, j in np.asarray(directed, dtype=np.int64).reshape(-1, 2)]
    le = [(n + int(h), int(v)) for h, v in np.asarray(latent_edges, dtype=np.int64).reshape(-1, 2)]
    g = _G(n + n_latent, d + le, [])
    obs_edges = tuple(d)
    controlled = [h for h in range(n, n + n_latent) if len(g.ch[h]) >= 4]
    solved = {v for v in range(n) if not any(p < n for p in g.pa[v])}
    rounds = 0
    changed = True
    while changed:
        changed = False
        for v in range(n):
            if v not in solved and _solves(g, n, v, solved, controlled, obs_edges):
                solved.add(v)
                rounds += 1
                changed = True
                break
    edge_solved = np.array([j in solved for _, j in d], dtype=bool)
    node_solved = np.array([v in solved for v in range(n)], dtype=bool)
    return {"edge_solved": edge_solved, "node_solved": node_solved, "rounds": rounds}
