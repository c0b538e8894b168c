r"""Trek-separation identification (Weihs et al. 2018; SEMID ``trekSeparationIdentifyStep``).

For a node :math:`i` on no directed cycle and an unsolved parent :math:`j`, the edge :math:`j \to i` is
identified by sources :math:`S` (any :math:`k` nodes, :math:`k \le` ``max_subset_size``) and targets
:math:`T` (:math:`k-1` non-descendants of :math:`i` other than :math:`j`) when a trek system without sided
intersection goes from :math:`S` onto :math:`T \cup \{j\}`, and none goes from :math:`S` onto
:math:`T \cup \{i\}` once the edges :math:`j \to i` and :math:`q \to i` (:math:`q` an already solved parent)
are removed from the right sides; then :math:`\lambda_{ji} = \det \Sigma^-_{S, T \cup i} / \det
\Sigma^-_{S, T \cup j}` (SEMID ``createTrekSeparationIdentifier``).

By the trek-separation theorem (Sullivant, Talaska & Draisma 2010) the largest trek system from :math:`S`
onto :math:`T'` is the generic rank of :math:`\Sigma_{S,T'}`, and removing right edges into :math:`i`
(not on a cycle) replaces column :math:`i` by :math:`\Sigma_{\cdot,i} - \sum_q \Sigma_{\cdot,q}\lambda_{qi}`.
SEMID enumerates :math:`(S, T)` with two max-flows each (:math:`\Theta(n^{2k-1})` pairs per edge).  Here one
random point :math:`\Sigma` over :math:`\mathbb{F}_q` (:math:`q = 2^{31}-1`, so products fit in int64) is used:
a source set :math:`S` fits iff :math:`\det[\Sigma_{S,T}, a_S] \ne 0` and :math:`b_S = \Sigma_{S,T}\mu` for some
:math:`\mu` (:math:`a = \Sigma_{\cdot j}`, :math:`b` the column of :math:`i` with the removed edges taken off),
so the :math:`\mu` solved by all :math:`(k-1)`-row sets are grouped by one sort (numpy) and only groups that
repeat are examined: :math:`O(n^{2k-2}\log n)` per edge instead of :math:`n^{2k-1}` determinants.  A candidate is
then confirmed by SEMID's two exact max-flows, so an edge reported identified always is.  A true candidate is
missed only if a nonzero polynomial (degree at most :math:`2nk`) vanishes at the random point: probability at
most :math:`2nk/q \approx 10^{-7}` per edge for :math:`n = 33` (Schwartz-Zippel).
"""

from __future__ import annotations

from functools import cache
from itertools import combinations

import numpy as np

from ._ref_maxflow import _FlowNetwork
from ._ref_mixed_graph import _G, _descendants, _strong_components
from ._ref_modp import _inverse_mod_p
from ._ref_rank import _independent_rows

SEARCH_PRIME = (1 << 31) - 1
"""The field of the determinant search (candidates are then confirmed by exact max-flows)."""


def trek_system_size(g: _G, sources: list[int], targets: list[int],
                     avoid_right_edges: tuple[tuple[int, int], ...] = (),
                     avoid_left_edges: tuple[tuple[int, int], ...] = ()) -> int:
    r"""Largest trek system without sided intersection from ``sources`` onto ``targets`` (SEMID
    ``getTrekSystem``): vertex-disjoint left sides (directed paths up from a source), vertex-disjoint
    right sides (directed paths down to a target), joined at a top node or by one bidirected edge.

    Parameters
    ----------
    g : _G
    sources, targets : list of int
    avoid_right_edges, avoid_left_edges : tuple of (int, int)
        Directed edges that right (left) sides may not use.

    Returns
    -------
    int
        The max-flow; a system onto all targets exists iff it equals ``len(targets)``.

    Examples
    --------
    >>> trek_system_size(_G(3, [(0, 1), (0, 2)], []), [1], [2])  # 1 <- 0 -> 2
    1
    """
    n = g.n
    s, t = 0, 1

    def node(side: int, v: int) -> int:  # side 0..3: left in/out, right in/out
        return 2 + side * n + v

    net = _FlowNetwork(2 + 4 * n)
    avoid, avoid_left = set(avoid_right_edges), set(avoid_left_edges)
    for a in sources:
        net.add_arc(s, node(0, a))
    for v in range(n):
        net.add_arc(node(0, v), node(1, v))
        net.add_arc(node(2, v), node(3, v))
        net.add_arc(node(1, v), node(2, v))
        for u in g.pa[v]:
            if (u, v) not in avoid_left:
                net.add_arc(node(1, v), node(0, u))
        for u in g.sib[v]:
            net.add_arc(node(1, v), node(2, u))
        for w in g.ch[v]:
            if (v, w) not in avoid:
                net.add_arc(node(3, v), node(2, w))
    for b in targets:
        net.add_arc(node(3, b), t)
    return net.max_flow(s, t, limit=len(targets))


def _random_sigma(g: _G, seed: int) -> tuple[np.ndarray, dict[tuple[int, int], int]]:
    """:math:`\\Sigma = (I-\\Lambda)^{-T}\\Omega(I-\\Lambda)^{-1}` over F_q at a random point, and the
    :math:`\\lambda` of that point."""
    q = SEARCH_PRIME
    rng = np.random.default_rng([seed, 31])
    for _attempt in range(100):
        lam = {e: int(x) for e, x in zip(g.directed, rng.integers(1, q, size=len(g.directed)))}
        A = [[int(i == j) for j in range(g.n)] for i in range(g.n)]
        for (i, j), x in lam.items():
            A[i][j] = (-x) % q
        inv = _inverse_mod_p(A, q)
        if inv is not None:
            break
    else:  # pragma: no cover - probability about n / 2**31 per draw
        raise RuntimeError("could not draw a nonsingular I - Lambda")
    Om = np.zeros((g.n, g.n), dtype=object)
    for v, x in enumerate(rng.integers(1, q, size=g.n)):
        Om[v, v] = int(x)
    for (i, j), x in zip(g.bidirected, rng.integers(1, q, size=len(g.bidirected))):
        Om[i, j] = Om[j, i] = int(x)
    B = np.array(inv, dtype=object).reshape(g.n, g.n)
    S = (B.T.dot(Om).dot(B)) % q if g.n else B
    return np.asarray(S, dtype=np.int64).reshape(g.n, g.n), lam


@cache
def _row_sets(n: int, k: int) -> np.ndarray:
    return np.array(list(combinations(range(n), k)), dtype=np.int64).reshape(-1, k)


def _inv_mod(x: np.ndarray) -> np.ndarray:
    """Elementwise inverse mod q of nonzero int64 entries (Fermat: :math:`x^{q-2}`)."""
    q = SEARCH_PRIME
    out, base, e = np.ones_like(x), x % q, q - 2
    while e:
        if e & 1:
            out = out * base % q
        base = base * base % q
        e >>= 1
    return out


def _candidates(Sig: np.ndarray, a: np.ndarray, b: np.ndarray, pool: list[int], k: int):
    r"""Pairs ``(S, T)``, :math:`T \subseteq` ``pool``, :math:`|S| = k = |T| + 1`, with
    :math:`\det[\Sigma_{S,T}, a_S] \ne 0` and :math:`\det[\Sigma_{S,T}, b_S] = 0` over F_q; at least one for
    every target set :math:`T` that has any.

    Such an :math:`S` has :math:`b_S = \Sigma_{S,T}\mu` for one :math:`\mu`, so it lies in
    :math:`Z_\mu = \{s : b_s = \Sigma_{s,T}\mu\}`, and :math:`Z_\mu` holds two (k-1)-row sets with nonsingular
    :math:`\Sigma_{\cdot,T}` that solve to :math:`\mu` (or a row with :math:`\Sigma_{s,T} = 0, b_s = 0,
    a_s \ne 0`, which completes any of them).  So the :math:`\mu` of all (k-1)-row sets are grouped (one sort
    for all target sets) instead of enumerating the k-row sets: :math:`O(n^{k-1}|T\text{-sets}| \log n)`."""
    if k == 1:
        return [([int(s)], ()) for s in np.flatnonzero((a != 0) & (b == 0))[:4]]
    T_all = np.array(list(combinations(pool, k - 1)), dtype=np.int64).reshape(-1, k - 1)
    if not len(T_all):
        return []
    out = []
    zero = (Sig[:, T_all] == 0).all(axis=2) & ((b == 0) & (a != 0))[:, None]  # (n, m)
    for t in np.flatnonzero(zero.any(axis=0)):
        S = _with_row(Sig[:, T_all[t]], int(np.flatnonzero(zero[:, t])[0]))
        if S:
            out.append((S, tuple(T_all[t].tolist())))
    P = _row_sets(Sig.shape[0], k - 1)  # (p, k-1) row sets
    step = max(1, 1_000_000 // len(P))
    for lo in range(0, len(T_all), step):
        out += _grouped(Sig, a, b, T_all[lo:lo + step], P)
    return out


def _grouped(Sig: np.ndarray, a: np.ndarray, b: np.ndarray, T_all: np.ndarray, P: np.ndarray) -> list:
    """The grouping step of :func:`_candidates` for a block of target sets ``T_all`` and the row sets ``P``."""
    q = SEARCH_PRIME
    k = T_all.shape[1] + 1
    out = []
    X = Sig[P][:, :, T_all]  # (p, k-1 rows, m, k-1 cols)
    if k == 2:
        pi, ti = np.nonzero(X[:, 0, :, 0])
        kv = b[P[pi, 0]] * _inv_mod(X[pi, 0, ti, 0]) % q
    else:
        pi, ti = np.nonzero((X[:, 0, :, 0] * X[:, 1, :, 1] - X[:, 1, :, 0] * X[:, 0, :, 1]) % q)
        x00, x01, x10, x11 = (X[pi, r, ti, c] for r, c in ((0, 0), (0, 1), (1, 0), (1, 1)))
        inv = _inv_mod((x00 * x11 - x10 * x01) % q)
        b0, b1 = b[P[pi, 0]], b[P[pi, 1]]
        mu0 = (b0 * x11 - b1 * x01) % q * inv % q
        mu1 = (x00 * b1 - x10 * b0) % q * inv % q
        kv = mu0 * q + mu1
    order = np.lexsort((kv, ti))
    same = (ti[order][1:] == ti[order][:-1]) & (kv[order][1:] == kv[order][:-1])
    starts = np.flatnonzero(same & ~np.concatenate([[False], same[:-1]]))
    ends = np.flatnonzero(same & ~np.concatenate([same[1:], [False]])) + 1
    for st, end in zip(starts, ends):  # one group of (k-1)-row sets per (T, mu) that occurs at least twice
        t = int(ti[order][st])
        Z = np.unique(P[pi[order][st:end + 1]])
        C = [[int(v) for v in Sig[s, T_all[t]]] + [int(a[s])] for s in Z]
        chosen = _independent_rows(C, list(range(len(Z))), list(range(k)), q, need=k)
        if len(chosen) == k:
            out.append((sorted(int(Z[c]) for c in chosen), tuple(T_all[t].tolist())))
    return out


def _with_row(X: np.ndarray, s0: int) -> list[int]:
    """``s0`` plus k-1 rows with nonsingular ``X``, or ``[]`` if there are none."""
    C = [[int(v) for v in row] for row in X]
    rows = _independent_rows(C, list(range(len(C))), list(range(X.shape[1])), SEARCH_PRIME, need=X.shape[1])
    return sorted([*rows, s0]) if len(rows) == X.shape[1] else []


def _edge_identified(ctx, i: int, j: int, nondesc: list[int], solved_pa: list[int]) -> bool:
    g, q = ctx.g, SEARCH_PRIME
    Sig, lam = ctx.get("sigma", lambda: _random_sigma(ctx.g, ctx.seed))
    removed = [j, *solved_pa]
    col_i = Sig[:, i].astype(object)
    for p in removed:
        col_i = col_i - Sig[:, p].astype(object) * lam[(p, i)]
    col_i = np.asarray(col_i % q, dtype=np.int64)
    avoid = tuple((p, i) for p in removed)
    pool = [t for t in nondesc if t != j]
    if ctx.native is not None:  # the native backend: the same candidates and max-flows
        return ctx.native.trek_search(ctx, i, j, Sig[:, j], col_i, pool, removed, min(ctx.max_subset_size, g.n - 1))
    for k in range(1, min(ctx.max_subset_size, g.n - 1) + 1):
        for S, T in _candidates(Sig, Sig[:, j], col_i, pool, k):
            if trek_system_size(g, S, [*T, j]) == k and trek_system_size(g, S, [*T, i], avoid) < k:
                return True
    return False


def trek_separation_step(ctx, unsolved: list[set[int]]) -> list[tuple[int, int]]:
    """One sweep of SEMID's ``trekSeparationIdentifyStep`` (``maxSubsetSize = ctx.max_subset_size``)."""
    g = ctx.g
    scc = ctx.get("scc", lambda: _strong_components(g))
    scc_size = np.bincount(np.asarray(scc, dtype=np.int64), minlength=g.n) if g.n else []
    new: list[tuple[int, int]] = []
    for i in range(g.n):
        if not unsolved[i] or scc_size[scc[i]] != 1:
            continue
        desc = _descendants({i}, g.ch)
        nondesc = [v for v in range(g.n) if v not in desc]
        for j in sorted(unsolved[i]):
            solved_pa = [p for p in g.pa[i] if p not in unsolved[i]]
            if _edge_identified(ctx, i, j, nondesc, solved_pa):
                new.append((j, i))
                unsolved[i].discard(j)
    return new
