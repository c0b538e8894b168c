r"""SEMID's identification family: combined steps, trek separation, ancestral decomposition, global
identifiability, and a plot of a mixed graph.

All answers are SEMID 0.4.2's (its test graphs and random graphs are the oracle of the tests):

* :func:`identify` -- SEMID ``generalGenericID`` / the generic part of ``semID``: a fixpoint over
  identification steps (``"htc"``, ``"edgewise"``, ``"trek_separation"``, ``"ancestral"``), optionally per
  Tian c-component;
* :func:`trek_separation_identify` -- SEMID ``edgewiseTSID`` (HTC, edgewise, trek separation);
* :func:`ancestral_identify` -- SEMID ``ancestralID`` (Drton & Weihs 2016);
* :func:`global_identifiable` -- SEMID ``globalID`` (Drton, Foygel & Sullivant 2011);
* :func:`lfhtc_identify` -- SEMID ``lfhtcID``, the latent-factor HTC (Barber, Drton, Sturma & Weihs 2022);
* :func:`plot` -- directed edges as arrows, bidirected edges as dashed curves (networkx + matplotlib).

These run on the reference code of :mod:`fastnips.causal.reference` (max-flows, ranks over :math:`\mathbb{F}_p`,
numpy determinants).  ``backend="cpp"`` (picked by ``"auto"`` when the native core is built) runs
:func:`identify`'s loops over ``"htc"``, ``"ancestral"`` and ``"edgewise"`` steps (the ancestral criterion with
its Tian split among them), the latent-factor HTC and the per-edge trek-separation search natively, with the
same candidates and the same exact max-flows (the edgewise step by the same rank method), so the same answers;
inside a loop with trek separation or SEMID's restricted edgewise search (``subset_size_control=3``, which stays
Python) the ``"htc"`` and ``"ancestral"`` sweeps are native too.
A loop that starts with ``"htc"`` first runs that step to its fixpoint in one native call; where it solves
every node, that is the loop's answer (the other steps have nothing left to do) and no Python runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _backend
from ._ref_ancestral import global_identifiable as _ref_global
from ._ref_generic import STEPS, generic_identify
from ._ref_lfhtc import lfhtc_identify as _ref_lfhtc
from ._ref_modp import DEFAULT_PRIME
from .graph import MixedGraph
from .htc import IdentificationResult, _check_common, _check_graph, _check_int, _readonly

__all__ = ["ancestral_identify", "global_identifiable", "identify", "lfhtc_identify", "plot",
           "trek_separation_identify"]


def _check_steps(steps: Any) -> tuple[str, ...]:
    if isinstance(steps, str):
        steps = (steps,)
    try:
        out = tuple(steps)
    except TypeError:
        raise ValueError(f"steps must be a sequence of step names from {STEPS}, got {steps!r}") from None
    if not out or any(s not in STEPS for s in out):
        raise ValueError(f"steps must be a non-empty sequence of names from {STEPS}, got {list(out)!r}")
    return out


def _native_reason(backend: str, steps: tuple[str, ...], max_subset_size: int, subset_size_control: int | None) -> str:
    """Why ``backend`` cannot run these steps ("" when it can): cpp runs every step natively (the loop itself
    natively unless it holds a restricted edgewise or a trek-separation step) except SEMID's restricted edgewise
    search, which is Python (cpp is refused when that is all the list runs), and trek-separation source sets of
    more than 3 nodes."""
    if backend != "cpp":
        return ""
    if set(steps) == {"edgewise"} and subset_size_control is not None:
        return ("identify has no 'cpp' backend for steps ['edgewise'] with subset_size_control (SEMID's restricted "
                "search is Python; subset_size_control=None runs natively)")
    if "trek_separation" in steps and max_subset_size > 3:
        return ("identify has no 'cpp' backend for max_subset_size > 3 (the native trek search takes "
                f"max_subset_size <= 3, got {max_subset_size})")
    return ""


def _arrays32(ctx: Any) -> tuple[np.ndarray, np.ndarray]:
    return ctx.get("arrays32", lambda: (np.asarray(ctx.g.directed, dtype=np.int32).reshape(-1, 2),
                                        np.asarray(ctx.g.bidirected, dtype=np.int32).reshape(-1, 2)))


class _NativeSteps:
    """The native pieces of ``generic_identify``'s loop (``native=``): the ``"htc"`` and ``"ancestral"`` sweeps
    and the per-edge trek-separation search, with the reference's answers."""

    @staticmethod
    def htc_sweep(ctx: Any, solved: list[bool]) -> list[int]:
        """The nodes one Gauss-Seidel ``"htc"`` sweep solves, in order (``_ref_generic.htc_step``)."""
        d, bi = _arrays32(ctx)
        return _backend.native().htc_sweep(ctx.g.n, d, bi, np.asarray(solved, dtype=np.uint8)).tolist()

    @staticmethod
    def ancestral_sweep(ctx: Any, solved: list[bool]) -> list[int]:
        """The nodes one Gauss-Seidel ``"ancestral"`` sweep solves, in order (``_ref_ancestral.ancestral_step``)."""
        d, bi = _arrays32(ctx)
        return _backend.native().ancestral_sweep(ctx.g.n, d, bi, np.asarray(solved, dtype=np.uint8)).tolist()

    @staticmethod
    def trek_search(ctx: Any, i: int, j: int, a: np.ndarray, b: np.ndarray, pool: list[int], removed: list[int],
                    max_k: int) -> bool:
        """Whether ``j -> i`` is identified (``_ref_trek._edge_identified``'s candidates and max-flows)."""
        d, bi = _arrays32(ctx)
        Sig, _ = ctx.get("sigma", None)
        return _backend.native().trek_edge_identified(ctx.g.n, d, bi, i, j, Sig, a, b,
                                                      np.asarray(pool, dtype=np.int32),
                                                      np.asarray(removed, dtype=np.int32), max_k)


def identify(g: MixedGraph, steps: Sequence[str] = ("htc",), *, tian: bool = True,
             subset_size_control: int | None = None, max_subset_size: int = 3, seed: int = 0,
             prime: int = DEFAULT_PRIME, backend: str = "auto") -> IdentificationResult:
    r"""Generic identification by a fixpoint over identification steps (SEMID ``generalGenericID``).

    Every edge starts unsolved.  The steps are tried in order; as soon as one identifies an edge the loop
    restarts at the first step, and it stops when the last step identifies nothing.  Each step sweeps the
    nodes once and uses what it solves at once:

    * ``"htc"``: node :math:`v` is solved when a half-trek system without sided intersection reaches
      :math:`\mathrm{pa}(v)` from :math:`(S \cup (V \setminus \mathrm{htr}(v))) \setminus \mathrm{sib}(v)`
      (Foygel, Draisma & Drton 2012; exact max-flow);
    * ``"edgewise"``: a subset of a node's unsolved parents via the determinantal criterion of Weihs et al.
      (2018); the largest usable set (``subset_size_control=None``, exhaustive) or SEMID's restricted search
      order (an int :math:`c`: sizes :math:`k..k-c+1`, then :math:`1..c`);
    * ``"trek_separation"``: one edge :math:`j \to i` at a time by a ratio of two minors of :math:`\Sigma`
      (Weihs et al. 2018, trek separation; source sets up to ``max_subset_size`` nodes);
    * ``"ancestral"``: HTC on the Tian component of :math:`v` in its ancestral subgraph (Drton & Weihs 2016).

    With ``tian=True`` the fixpoint runs on each Tian c-component's graph (Tian 2005), SEMID's default.

    Parameters
    ----------
    g : MixedGraph
    steps : sequence of {"htc", "edgewise", "trek_separation", "ancestral"}, default ("htc",)
    tian : bool, default True
    subset_size_control : int or None, default None
        The edgewise search: ``None`` exhaustive (polynomial here), an int >= 1 SEMID's restricted order.
    max_subset_size : int, default 3
        Largest source set of the trek-separation step (SEMID ``maxSubsetSize``); its search costs
        :math:`O(n^{2k-2} \log n)` per unsolved edge (SEMID: :math:`n^{2k-1}` pairs of max-flows).
    seed : int, default 0
        The random points of the rank tests (edgewise) and of the determinant search (trek separation).
    prime : int, default 2**61 - 1
        Field of the edgewise rank tests, a prime :math:`3 \le p < 2^{62}`.
    backend : {"auto", "cpp", "reference"}, default "auto"
        ``"cpp"``: any list of ``"htc"``, ``"ancestral"`` and ``"edgewise"`` runs natively as a whole when its
        edgewise step is the exhaustive one (``subset_size_control=None``); in other lists the ``"htc"`` and
        ``"ancestral"`` sweeps and the per-edge trek-separation search (``max_subset_size <= 3``) run natively
        and the restricted edgewise search stays Python (with ``"htc"`` first, a graph that the ``"htc"`` phase
        solves completely never reaches Python).  ``["edgewise"]`` with ``subset_size_control`` and trek
        separation with ``max_subset_size > 3`` refuse ``"cpp"`` (``"auto"`` takes the reference then).

    Returns
    -------
    IdentificationResult
        ``criterion`` is the steps joined by ``"+"``; ``.identified_edges``, ``.identifiable``;
        ``.identifier`` is not available for these runs.

    Notes
    -----
    Errors are one-sided: every edge reported identified is (the HTC, ancestral steps are exact max-flows,
    an edgewise rank that is full over :math:`\mathbb{F}_p` is generically full, and a trek-separation
    candidate is confirmed by SEMID's two exact max-flows).  An identifiable edge is missed with probability
    at most :math:`n^3/(p-1)` (edgewise) and :math:`2n\cdot k/(2^{31}-1)` per edge (trek separation).
    SEMID 0.4.2's ``ancestralIdentifyStep`` stops with an error on some graphs (a source set outside the
    component graph); here those sources are dropped instead.

    References
    ----------
    R. Foygel, J. Draisma, M. Drton (2012). Ann. Statist. 40(3):1682-1713. arXiv:1107.5552.
    L. Weihs et al. (2018). Determinantal generalizations of instrumental variables. J. Causal Inference 6(1).
    M. Drton, L. Weihs (2016). Generic identifiability of linear structural equation models by ancestor
    decomposition. Scand. J. Stat. 43(4):1035-1045. arXiv:1504.02992.
    J. Tian (2005). Identifying direct causal effects in linear models. AAAI 2005.

    Examples
    --------
    >>> from fastnips.causal import MixedGraph, identify
    >>> g = MixedGraph(3, directed=[(0, 1), (1, 2)], bidirected=[(1, 2)])
    >>> identify(g, steps=["htc", "edgewise"]).identifiable
    True
    """
    g = _check_graph(g)
    steps = _check_steps(steps)
    seed, prime = _check_common(None, tian, seed, prime)
    if subset_size_control is not None:
        subset_size_control = _check_int(subset_size_control, "subset_size_control", 1, 1 << 31)
    max_subset_size = _check_int(max_subset_size, "max_subset_size", 1, 1 << 31)
    name = _backend.resolve(backend, op="identify", supported=("reference", "cpp"),
                            check=lambda b: _native_reason(b, steps, max_subset_size, subset_size_control))
    d, b = g.to_arrays()
    native = name == "cpp"
    raw = None
    if native and set(steps) <= {"htc", "edgewise", "ancestral"} and (
            subset_size_control is None or "edgewise" not in steps):
        # the whole loop, Tian split included, in one native call (the exhaustive edgewise step is the native
        # rank method's)
        raw = _backend.native().generic_identify(g.n, d, b, list(steps), tian=bool(tian), seed=seed, prime=prime)
    elif native and steps[0] == "htc":
        # The loop starts with "htc" sweeps to their fixpoint (per Tian component); where they solve every
        # node, the other steps find nothing to do and that is the loop's answer, rounds included.
        raw = _backend.native().htc_sweeps(g.n, d, b, tian=bool(tian))
        if not raw["node_solved"].all():
            raw = None
    if raw is None:
        raw = generic_identify(g.n, d, b, steps, bool(tian), seed, prime, subset_size_control, max_subset_size,
                               native=_NativeSteps() if native else None)
    return IdentificationResult(graph=g, criterion="+".join(steps), tian=bool(tian), method="mixed",
                                backend=name, node_solved=_readonly(raw["node_solved"]),
                                edge_solved=_readonly(raw["edge_solved"]), rounds=raw["rounds"], tests=0,
                                seed=seed, prime=prime)


def trek_separation_identify(g: MixedGraph, *, tian: bool = True, subset_size_control: int | None = 3,
                             max_subset_size: int = 3, seed: int = 0,
                             backend: str = "auto") -> IdentificationResult:
    r"""HTC, edgewise and trek-separation steps together (SEMID ``edgewiseTSID``, with its defaults).

    Equals ``identify(g, ["htc", "edgewise", "trek_separation"], ...)``; see :func:`identify` for the
    criteria and the error bound.  The trek-separation step identifies :math:`j \to i` (for :math:`i` on no
    directed cycle) when some sources :math:`S` reach :math:`T \cup \{j\}` by a trek system without sided
    intersection (:math:`T` non-descendants of :math:`i`, :math:`|S| = |T| + 1 \le` ``max_subset_size``) and
    no such system reaches :math:`T \cup \{i\}` once :math:`j \to i` and the solved edges into :math:`i` are
    taken off the right sides (Weihs et al. 2018).

    Parameters
    ----------
    g : MixedGraph
    tian : bool, default True
    subset_size_control : int or None, default 3
        SEMID's default restricted edgewise search; ``None`` for the exhaustive one.
    max_subset_size : int, default 3
    seed : int, default 0
    backend : {"auto", "cpp", "reference"}, default "auto"
        ``"cpp"``: the native per-edge trek-separation search (``max_subset_size <= 3``).

    Returns
    -------
    IdentificationResult

    Examples
    --------
    >>> from fastnips.causal import MixedGraph, trek_separation_identify
    >>> L = [[0, 1, 1, 0, 0], [0, 0, 1, 1, 1], [0, 0, 0, 1, 0], [0, 0, 0, 0, 1], [0] * 5]
    >>> O = [[0, 0, 0, 1, 0], [0, 0, 1, 0, 1], [0, 1, 0, 0, 0], [1, 0, 0, 0, 0], [0, 1, 0, 0, 0]]
    >>> trek_separation_identify(MixedGraph.from_adjacency(L, O), tian=False).identifiable  # SEMID README
    True
    """
    return identify(g, ["htc", "edgewise", "trek_separation"], tian=tian, subset_size_control=subset_size_control,
                    max_subset_size=max_subset_size, seed=seed, backend=backend)


def ancestral_identify(g: MixedGraph, *, tian: bool = True, backend: str = "auto") -> IdentificationResult:
    r"""Ancestral decomposition (Drton & Weihs 2016; SEMID ``ancestralID``).

    The HTC test of node :math:`v` runs in the Tian component graph of :math:`v` inside the subgraph induced
    by the ancestors of :math:`v` (or of :math:`v` and its allowed sources), where fewer nodes compete for
    the half-trek system.  Drton & Weihs's criterion is at least as strong as the HTC on acyclic graphs; SEMID
    0.4.2's step, reproduced here with its branch order, finds fewer edges than ``htcID`` on some graphs (2 of
    its 164 recorded graphs).  Exact max-flows.

    Parameters
    ----------
    g : MixedGraph
    tian : bool, default True
    backend : {"auto", "cpp", "reference"}, default "auto"
        ``"cpp"``: the whole ancestral fixpoint natively (exact max-flows; the same answers).

    Returns
    -------
    IdentificationResult

    Examples
    --------
    >>> from fastnips.causal import MixedGraph, ancestral_identify
    >>> ancestral_identify(MixedGraph(3, directed=[(0, 1), (1, 2)], bidirected=[(1, 2)])).identifiable
    True
    """
    return identify(g, ["ancestral"], tian=tian, backend=backend)


def global_identifiable(g: MixedGraph, *, backend: str = "auto") -> bool:
    r"""Global identifiability (Drton, Foygel & Sullivant 2011, Thm 2; SEMID ``globalID``).

    The map :math:`(\Lambda, \Omega) \mapsto \Sigma` is injective on the whole parameter space iff the graph
    is acyclic and every bidirected component with at least two nodes has at least two sinks, and,
    recursively, so do the bidirected components of the ancestral subgraph of each such sink.  Cyclic graphs
    give ``False`` (as in SEMID).

    Parameters
    ----------
    g : MixedGraph
    backend : {"auto", "cpp", "reference"}, default "auto"
        ``"cpp"``: the same recursion natively (each distinct component examined once; the same answer).

    Returns
    -------
    bool

    References
    ----------
    M. Drton, R. Foygel, S. Sullivant (2011). Global identifiability of linear structural equation models.
    Ann. Statist. 39(2):865-886. arXiv:1003.1146.

    Examples
    --------
    >>> from fastnips.causal import MixedGraph, global_identifiable
    >>> global_identifiable(MixedGraph(3, directed=[(0, 1), (1, 2)], bidirected=[(0, 2)]))
    True
    """
    g = _check_graph(g)
    name = _backend.resolve(backend, op="global_identifiable", supported=("reference", "cpp"))
    if name == "cpp":
        return bool(_backend.native().global_identifiable(g.n, *g.to_arrays()))
    return bool(_ref_global(g.n, *g.to_arrays()))


def lfhtc_identify(g: MixedGraph, latent_children: Sequence[Sequence[int]], *,
                   backend: str = "auto") -> IdentificationResult:
    r"""Latent-factor half-trek criterion (Barber, Drton, Sturma & Weihs 2022; SEMID ``lfhtcID``).

    The model has observed nodes :math:`0..n-1` (the directed edges of ``g``) and latent factors, each a
    source pointing to its observed children; a latent factor with four or more children may be *controlled*:
    a solved child :math:`z` of it joins the targets, so that :math:`v`'s parents are identified through a
    trek system onto :math:`\mathrm{pa}(v) \cup Z` (see :mod:`fastnips.causal._ref_lfhtc` for the exact
    conditions).  Exact max-flows.  SEMID solves one node per step and restarts; the criterion is monotone
    in the solved set, so the native fixpoint goes on after a solved node instead (the same solved set;
    ``rounds`` counts the solved nodes in both).

    Parameters
    ----------
    g : MixedGraph
        The observed graph; each of its bidirected edges :math:`i \leftrightarrow j` becomes one more latent
        factor with children :math:`\{i, j\}` (after those of ``latent_children``).
    latent_children : sequence of sequences of int
        ``latent_children[h]`` = the observed children of latent factor ``h`` (distinct node ids).
    backend : {"auto", "cpp", "reference"}, default "auto"
        ``"cpp"``: the fixpoint natively (the same max-flows and answers as the Python reference).

    Returns
    -------
    IdentificationResult
        Over the directed edges of ``g``; ``criterion == "lfhtc"``.

    References
    ----------
    R. F. Barber, M. Drton, N. Sturma, L. Weihs (2022). Half-trek criterion for identifiability of latent
    variable models. Ann. Statist. 50(6):3174-3196. arXiv:2201.04457.

    Examples
    --------
    >>> from fastnips.causal import MixedGraph, lfhtc_identify
    >>> g = MixedGraph(5, directed=[(0, 1), (1, 2), (3, 4)])  # SEMID's README: one factor on all five
    >>> lfhtc_identify(g, [[0, 1, 2, 3, 4]]).identifiable
    True
    """
    g = _check_graph(g)
    if isinstance(latent_children, (str, bytes)):
        raise ValueError("latent_children must be a sequence of sequences of observed node ids")
    edges = []
    try:
        groups = [list(c) for c in latent_children]
    except TypeError:
        raise ValueError("latent_children must be a sequence of sequences of observed node ids, got "
                         f"{latent_children!r}") from None
    groups += [list(e) for e in g.bidirected]
    n = g.n
    for h, children in enumerate(groups):  # plain ints in range pass without the general check
        ids = [c if type(c) is int and 0 <= c < n else _check_int(c, f"latent_children[{h}] entries", 0, n)
               for c in children]
        if len(set(ids)) != len(ids):
            raise ValueError(f"latent_children[{h}] repeats a node: {ids}")
        edges += [(h, c) for c in ids]
    name = _backend.resolve(backend, op="lfhtc_identify", supported=("reference", "cpp"))
    d, _ = g.to_arrays()
    latent = np.asarray(edges, dtype=np.int32).reshape(-1, 2)
    if name == "cpp":
        raw = _backend.native().lfhtc_identify(g.n, d, len(groups), latent)
    else:
        raw = _ref_lfhtc(g.n, len(groups), d, latent)
    return IdentificationResult(graph=g, criterion="lfhtc", tian=False, method="mixed", backend=name,
                                node_solved=_readonly(raw["node_solved"]),
                                edge_solved=_readonly(raw["edge_solved"]), rounds=raw["rounds"], tests=0)


def plot(g: MixedGraph, *, ax: Any = None, pos: dict | None = None, seed: int = 0) -> Any:
    """Draw a mixed graph: directed edges as arrows, bidirected edges as dashed red two-headed curves.

    Parameters
    ----------
    g : MixedGraph
    ax : matplotlib Axes, optional
        Default: a new figure's axes.
    pos : dict, optional
        Node positions ``{v: (x, y)}``; default: networkx's circular layout for ``n <= 12``, else a spring
        layout seeded by ``seed``.
    seed : int, default 0

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    ImportError
        Without matplotlib or networkx (extras ``fastnips[graph,plot]``).
    ValueError
        If ``pos`` misses a node.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from fastnips.causal import MixedGraph, plot
    >>> ax = plot(MixedGraph(3, directed=[(0, 1), (1, 2)], bidirected=[(1, 2)]))
    """
    g = _check_graph(g)
    try:
        import matplotlib.pyplot as plt
        import networkx as nx
    except ImportError as e:
        raise ImportError(f"plot needs matplotlib and networkx ({e}); install them with "
                          "pip install 'fastnips[graph,plot]'") from None

    if ax is None:
        _, ax = plt.subplots(figsize=(4, 4))
    G = nx.DiGraph()
    G.add_nodes_from(range(g.n))
    if pos is None:
        pos = nx.circular_layout(G) if g.n <= 12 else nx.spring_layout(G, seed=int(seed))
    missing = [v for v in range(g.n) if v not in pos]
    if missing:
        raise ValueError(f"pos has no position for nodes {missing[:5]}")
    nx.draw_networkx_nodes(G, pos, ax=ax, node_color="white", edgecolors="black")
    nx.draw_networkx_labels(G, pos, ax=ax)
    nx.draw_networkx_edges(G, pos, edgelist=list(g.directed), ax=ax, arrows=True, arrowstyle="-|>",
                           node_size=300)
    nx.draw_networkx_edges(G, pos, edgelist=list(g.bidirected), ax=ax, arrows=True, arrowstyle="<|-|>",
                           style="dashed", edge_color="tab:red", connectionstyle="arc3,rad=0.3", node_size=300)
    ax.set_axis_off()
    return ax

