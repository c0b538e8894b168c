r"""SEMID's identification family as one fixpoint over identification steps (SEMID ``generalGenericID``).

State: the set of still-unsolved parents of every node.  A *step* sweeps the nodes ``0..n-1`` once
(Gauss-Seidel: what it solves is used at once) and removes the edges it identifies.  The fixpoint runs the
steps in the given order and restarts from the first step as soon as one identifies something; it stops
when the last step identifies nothing (exactly SEMID's loop).  With ``tian=True`` it runs on the component
graph of every Tian c-component and maps the answers back (SEMID ``generalGenericID(tianDecompose=TRUE)``).

Steps (each the criterion of SEMID 0.4.2's function of the same role):

``"htc"`` (``htcIdentifyStep``; Foygel, Draisma & Drton 2012)
    :math:`v` is solved when a half-trek system reaches all of :math:`\mathrm{pa}(v)` from
    :math:`(S \cup (V \setminus \mathrm{htr\_from}(v))) \setminus \mathrm{sib}(v)`; exact max-flow.
``"edgewise"`` (``edgewiseIdentifyStep``; Weihs et al. 2018)
    the largest usable parent set :math:`S^*` (ranks over :math:`\mathbb{F}_p`, see
    :mod:`._ref_edgewise`) or, with a ``subset_size_control`` :math:`c`, SEMID's own search order over subset
    sizes :math:`k, k-1, \dots, k-c+1` then :math:`1, \dots, c` (:math:`k = |U|`), one rank test per subset.
``"trek_separation"`` (``trekSeparationIdentifyStep``; Weihs et al. 2018, Thm 3): see
    :mod:`._ref_trek`.
``"ancestral"`` (``ancestralIdentifyStep``; Drton & Weihs 2016): see :mod:`._ref_ancestral`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import combinations
from typing import Any

import numpy as np

from ._ref_edgewise import _edgewise_allowed
from ._ref_fixpoint import component_graph, tian_decompose
from ._ref_maxflow import half_trek_system
from ._ref_mixed_graph import _G, htr_from, tr_from
from ._ref_modp import DEFAULT_PRIME, _random_half_trek_matrix
from ._ref_rank import _independent_rows, _unit_vectors_in_rowspace

STEPS = ("htc", "edgewise", "trek_separation", "ancestral")
"""The step names :func:`generic_identify` accepts."""


class _Ctx:
    """One graph and the data its steps share, computed on first use."""

    def __init__(self, g: _G, seed: int, prime: int, subset_size_control: int | None,
                 max_subset_size: int, native: Any = None) -> None:
        self.g, self.seed, self.prime = g, int(seed), int(prime)
        self.native = native  # a native backend's htc / ancestral sweeps and trek search (same answers), or None
        self.subset_size_control, self.max_subset_size = subset_size_control, int(max_subset_size)
        self._cache: dict[str, Any] = {}

    def get(self, key: str, make: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    @property
    def htr(self) -> list[set[int]]:
        return self.get("htr", lambda: [htr_from(self.g, v) for v in range(self.g.n)])

    @property
    def trf(self) -> list[set[int]]:
        return self.get("trf", lambda: [tr_from(self.g, v) for v in range(self.g.n)])

    @property
    def M(self) -> list[list[int]]:
        return self.get("M", lambda: _random_half_trek_matrix(self.g, self.seed, self.prime))


def _solved_nodes(unsolved: list[set[int]]) -> set[int]:
    return {v for v, u in enumerate(unsolved) if not u}


def native_sweep(sweep: Callable[[_Ctx, list[bool]], list[int]], ctx: _Ctx,
                 unsolved: list[set[int]]) -> list[tuple[int, int]]:
    """A native node sweep (``sweep(ctx, solved)``: the nodes it solves, in order) as a step: the edges it
    identifies, every unsolved edge into those nodes, removed from ``unsolved``."""
    new: list[tuple[int, int]] = []
    for i in sweep(ctx, [not u for u in unsolved]):
        new += [(j, i) for j in sorted(unsolved[i])]
        unsolved[i] = set()
    return new


def htc_step(ctx: _Ctx, unsolved: list[set[int]]) -> list[tuple[int, int]]:
    """One Gauss-Seidel sweep of SEMID's ``htcIdentifyStep`` (exact max-flow); returns the new edges."""
    if ctx.native is not None:  # the same sweep in the native core (exact max-flows)
        return native_sweep(ctx.native.htc_sweep, ctx, unsolved)
    g, n = ctx.g, ctx.g.n
    new: list[tuple[int, int]] = []
    solved = _solved_nodes(unsolved)
    for i in range(n):
        if not unsolved[i]:
            continue
        allowed = sorted((solved - set(g.sib[i])) | (set(range(n)) - ctx.htr[i]))
        if len(allowed) < len(g.pa[i]):
            continue
        size, _ = half_trek_system(g, allowed, g.pa[i])
        if size == len(g.pa[i]):
            new += [(j, i) for j in sorted(unsolved[i])]
            unsolved[i] = set()
            solved.add(i)
    return new


def _semid_subset_sizes(k: int, c: int) -> list[int]:
    """SEMID's order of subset sizes: ``k, k-1, ..., max(k-c+1, 1)``, then ``1..min(k, c)`` not yet tried."""
    sizes = list(range(k, max(k - c + 1, 1) - 1, -1))
    return sizes + [s for s in range(1, min(k, c) + 1) if s not in sizes]


def _good_set(ctx: _Ctx, U: set[int], allowed: list[int], T: dict[int, set[int]]) -> list[int]:
    """The parents identified for one node: :math:`S^*` or the first usable set in SEMID's order."""
    M, p = ctx.M, ctx.prime
    c = ctx.subset_size_control
    if c is None:
        S = sorted(U)
        while S:
            keep = _unit_vectors_in_rowspace(M, [a for a in allowed if T[a] <= set(S)], S, p)
            if len(keep) == len(S):
                return S
            S = keep
        return []
    for k in _semid_subset_sizes(len(U), c):
        for S in combinations(sorted(U), k):
            A = [a for a in allowed if T[a] <= set(S)]
            if A and len(_independent_rows(M, A, list(S), p, need=k)) == k:
                return list(S)
    return []


def edgewise_step(ctx: _Ctx, unsolved: list[set[int]]) -> list[tuple[int, int]]:
    """One Gauss-Seidel sweep of SEMID's ``edgewiseIdentifyStep``; returns the new edges."""
    g = ctx.g
    new: list[tuple[int, int]] = []
    for i in range(g.n):
        U = unsolved[i]
        if not U:
            continue
        allowed, T = _edgewise_allowed(g, i, U, unsolved, ctx.htr, ctx.trf)
        S = _good_set(ctx, U, allowed, T) if allowed else []
        if S:
            new += [(j, i) for j in S]
            unsolved[i] = U - set(S)
    return new


def _step_table() -> dict[str, Callable[[_Ctx, list[set[int]]], list[tuple[int, int]]]]:
    from ._ref_ancestral import ancestral_step
    from ._ref_trek import trek_separation_step

    return {"htc": htc_step, "edgewise": edgewise_step, "trek_separation": trek_separation_step,
            "ancestral": ancestral_step}


def _fixpoint(ctx: _Ctx, steps: Sequence[str]) -> tuple[list[set[int]], int]:
    table = _step_table()
    unsolved = [set(ctx.g.pa[v]) for v in range(ctx.g.n)]
    rounds = 0
    changed = True
    while changed:
        changed = False
        for name in steps:
            if table[name](ctx, unsolved):
                changed = True
                rounds += 1
                break
    return unsolved, rounds


def generic_identify(n: int, directed: Any, bidirected: Any, steps: Sequence[str] = ("htc",),
                     tian: bool = True, seed: int = 0, prime: int = DEFAULT_PRIME,
                     subset_size_control: int | None = None, max_subset_size: int = 3,
                     fixpoint: Callable[[_G], tuple[list[set[int]], int]] | None = None,
                     native: Any = None) -> dict:
    r"""The fixpoint of the given identification steps (SEMID ``generalGenericID``).

    Parameters
    ----------
    n, directed, bidirected
        The graph: node count, (k, 2) and (m, 2) integer edge arrays.
    steps : sequence of str
        Names from :data:`STEPS`, tried in this order (restarting at the first after any success).
    tian : bool
        Run on every Tian c-component's graph (SEMID ``tianDecompose=TRUE``).
    seed, prime : int
        The random point of the rank tests (``"edgewise"``) and the trek-separation search.
    subset_size_control : int or None
        ``None``: exhaustive edgewise search (:math:`S^*`); an int :math:`c`: SEMID's restricted search.
    max_subset_size : int
        Largest source set of the trek-separation step (SEMID ``maxSubsetSize``).
    fixpoint : callable, optional
        Replaces the fixpoint of ``steps`` on one (component) graph: ``fixpoint(g) -> (unsolved, rounds)``
        (a native backend's; same results).
    native : object, optional
        A native backend's ``htc_sweep(ctx, solved)`` and ``ancestral_sweep(ctx, solved)`` (the nodes one
        ``"htc"`` / ``"ancestral"`` sweep solves, in order) and ``trek_search(ctx, ...)`` (the per-edge search
        of :mod:`._ref_trek`), used by those steps instead.

    Returns
    -------
    dict
        ``edge_solved`` (bool per input directed edge), ``node_solved`` (bool (n,)), ``rounds`` (steps that
        identified something; Tian: summed over components).

    Examples
    --------
    >>> generic_identify(3, [(0, 1), (1, 2)], [(1, 2)], steps=["htc"])["node_solved"].tolist()
    [True, True, True]
    """
    g = _G(n, directed, bidirected)
    opts = (int(seed), int(prime), subset_size_control, int(max_subset_size))
    if fixpoint is None:
        def fixpoint(lg: _G) -> tuple[list[set[int]], int]:
            return _fixpoint(_Ctx(lg, *opts, native=native), steps)
    if not tian:
        unsolved, rounds = fixpoint(g)
    else:
        unsolved = [set() for _ in range(g.n)]
        rounds = 0
        comps, _ = tian_decompose(g)
        for comp in comps:
            lg, nodes = component_graph(g, comp)
            loc_unsolved, r = fixpoint(lg)
            rounds += r
            for lv, v in enumerate(nodes):
                if v in comp["internal"]:
                    unsolved[v] = {nodes[x] for x in loc_unsolved[lv]}
    edge_solved = np.array([i not in unsolved[j] for i, j in g.directed], dtype=bool)
    node_solved = np.array([not u for u in unsolved], dtype=bool)
    return {"edge_solved": edge_solved, "node_solved": node_solved, "rounds": rounds}
