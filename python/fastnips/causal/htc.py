r"""Generic identifiability of linear SEMs: half-trek criterion (HTC) and edgewise identification.

A linear SEM with mixed graph :math:`G = (V, D, B)` has covariance
:math:`\Sigma = (I-\Lambda)^{-T}\Omega(I-\Lambda)^{-1}`; it is *generically identifiable* if
:math:`(\Lambda, \Omega) \mapsto \Sigma` is injective for generic parameters.  The half-trek criterion
(Foygel, Draisma & Drton 2012) is a sufficient condition decided by a fixpoint: a node :math:`v` is *solved*
(all edges into it identified) once some :math:`Y_v` of :math:`|\mathrm{pa}(v)|` *allowed* nodes
(not :math:`v`, not a sibling of :math:`v`, and either already solved or not half-trek reachable from
:math:`v`) reaches :math:`\mathrm{pa}(v)` by a system of half-treks without sided intersection.  Then

.. math:: \lambda_{\mathrm{pa}(v),v} = \bigl[((I-\Lambda)^T\Sigma)_{Y_v,\mathrm{pa}(v)}\bigr]^{-1}
          ((I-\Lambda)^T\Sigma)_{Y_v,v}.

The graph is HTC-identifiable iff every node is solved.  Edgewise identification (Weihs et al. 2018)
identifies subsets of a node's edges and reuses partially solved nodes; it is at least as strong.  Tian
mode (Tian 2005; SEMID's default ``htcID``) runs the HTC on each c-component and is stronger still.

Public functions: :func:`htc_identify`, :func:`edgewise_identify`, :func:`htc_nonidentifiable`,
:func:`htc_identify_many`; results are :class:`IdentificationResult`.

Backends (``backend=``, decided by :func:`fastnips._backend.resolve`): ``"cpp"`` is the native core
``fastnips._C`` (incremental rank / max-flow, GIL released); ``"reference"`` is
:mod:`fastnips.causal.reference` (pure Python, the test oracle); ``"auto"`` picks ``"cpp"`` when the compiled
module is available, else ``"reference"``.  :func:`htc_nonidentifiable` has the reference backend only.

Backend contract (what ``fastnips._C`` and :mod:`~fastnips.causal.reference` both return)
-----------------------------------------------------------------------------------------
``htc_identify(n, directed int32 (k,2), bidirected int32 (m,2), method: str, tian: bool, seed: int,
prime: int) -> dict`` with keys

* ``"solved"``: bool per node (n,) -- every edge into the node is identified (parentless nodes: True);
* ``"order"``: the solved nodes in an order in which the identification formula can be evaluated -- every
  source :math:`y \in Y_v` half-trek reachable from :math:`v` precedes :math:`v` (the reference lists
  parentless nodes first, then Jacobi rounds; Tian mode concatenates components by id);
* ``"sources"``: per node the sorted list :math:`Y_v` (``[]`` if parentless or unsolved);
  :math:`|Y_v| = |\mathrm{pa}(v)|`.  In Tian mode :math:`Y_v \subseteq C \cup \mathrm{pa}(C)` for the
  component :math:`C \ni v`, in global node ids, and the half-trek system is one of the component graph
  :math:`G_C` (nodes :math:`C \cup \mathrm{pa}(C)`, every directed edge into :math:`C`, every bidirected
  edge inside :math:`C`);
* ``"rounds"``: fixpoint rounds that solved something (Tian: max over components); implementation-defined
  work counter, not compared across backends;
* ``"tests"``: max-flow or rank tests run (Tian: summed); implementation-defined;
* ``"component"`` (Tian only): int per node, the id of its c-component; components are the connected
  components of (bidirected edges + "same strongly connected component of :math:`(V, D)`"), numbered
  ``0, 1, ...`` by increasing smallest node.

``edgewise_identify(n, directed, bidirected, seed, prime) -> dict`` with keys ``"edge_solved"`` (bool per
input directed edge, input order), ``"node_solved"`` (bool (n,)), ``"steps"`` (list of ``(v, S, Y)`` with
sorted lists, in application order; replaying them reproduces the solved edges, and every :math:`y \in Y`
satisfies the edgewise conditions w.r.t. the edges solved by earlier steps), ``"rounds"``, ``"tests"``;
the native one also takes ``tian=True`` (SEMID's default: per Tian component graph, the steps in original ids
grouped by component; what :func:`edgewise_identify` with ``tian=True`` computes in Python for the reference).

``htc_identify_many(list of (n, directed, bidirected), method, tian, seed, prime) -> list of dict``.
Arrays may come back as lists.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _backend
from . import identifier as _ident
from . import reference
from ._ref_modp import _is_prime
from .graph import MixedGraph
from .reference import _G, DEFAULT_PRIME

__all__ = [
    "IdentificationResult",
    "edgewise_identify",
    "htc_identify",
    "htc_identify_many",
    "htc_nonidentifiable",
]

#: Backends of htc_identify, edgewise_identify and htc_identify_many (htc_nonidentifiable: reference only).
BACKENDS = ("reference", "cpp")


# ---------------------------------------------------------------------------------------------- arguments
def _check_graph(g: Any, name: str = "g") -> MixedGraph:
    if not isinstance(g, MixedGraph):
        raise ValueError(f"{name} must be a fastnips.causal.MixedGraph, got {type(g).__name__} (build one "
                         "with MixedGraph(n, directed=..., bidirected=...) or MixedGraph.from_adjacency)")
    return g


def _check_int(x: Any, name: str, lo: int, hi: int) -> int:
    if isinstance(x, (bool, np.bool_)):
        raise ValueError(f"{name} must be an integer, got {x!r}")
    try:
        x = operator.index(x)
    except TypeError:
        raise ValueError(f"{name} must be an integer, got {x!r}") from None
    if not lo <= x < hi:
        raise ValueError(f"{name} must be in [{lo}, {hi}), got {x}")
    return x


def _check_common(method: str | None, tian: Any, seed: Any, prime: Any) -> tuple[int, int]:
    if method is not None and method not in ("randomized", "maxflow"):
        raise ValueError(f"method must be 'randomized' or 'maxflow', got {method!r}")
    if tian is not None and not isinstance(tian, (bool, np.bool_)):
        raise ValueError(f"tian must be a bool, got {tian!r}")
    seed = _check_int(seed, "seed", 0, 1 << 64)
    prime = _check_int(prime, "prime", 3, 1 << 62)
    if not _is_prime(prime):
        raise ValueError(f"prime must be a prime number p with 3 <= p < 2**62, got {prime}")
    return seed, prime


# ---------------------------------------------------------------------------------------------- results
@dataclass(frozen=True, eq=False, repr=False)
class IdentificationResult:
    r"""Outcome of an identification run on a :class:`MixedGraph`.

    Attributes
    ----------
    graph : MixedGraph
    criterion : str
        ``"htc"``, ``"edgewise"``, or the steps of :func:`~fastnips.causal.identify` joined by ``"+"``
        (e.g. ``"htc+edgewise+trek_separation"``).
    tian : bool
        Run per Tian c-component.
    method : str
        ``"randomized"`` or ``"maxflow"`` (edgewise: ``"randomized"``; :func:`~fastnips.causal.identify`:
        ``"mixed"``).
    backend : {"cpp", "reference"}
    node_solved : ndarray of bool, shape (n,)
        All edges into the node are identified (parentless nodes are).
    edge_solved : ndarray of bool, shape (|D|,)
        Per directed edge of ``graph.directed``.
    rounds, tests : int
        Work counters reported by the backend (fixpoint rounds, rank / max-flow tests).
    order, sources, steps, component
        The certificate used by :meth:`identifier` (see the module docstring).
    seed, prime : int

    Examples
    --------
    >>> from fastnips.causal import MixedGraph, htc_identify
    >>> r = htc_identify(MixedGraph(3, directed=[(0, 1), (1, 2)], bidirected=[(1, 2)]))
    >>> r.identified_edges, r.sources
    ([(0, 1), (1, 2)], ((), (0,), (0,)))
    """

    graph: MixedGraph
    criterion: str
    tian: bool
    method: str
    backend: str
    node_solved: np.ndarray
    edge_solved: np.ndarray
    rounds: int
    tests: int
    order: tuple[int, ...] = ()
    sources: tuple[tuple[int, ...], ...] = ()
    steps: tuple[tuple[int, tuple[int, ...], tuple[int, ...]], ...] = ()
    component: np.ndarray | None = None
    seed: int = 0
    prime: int = DEFAULT_PRIME

    @property
    def identifiable(self) -> bool:
        """``True`` iff every directed edge is identified (then :math:`\\Omega` is too)."""
        return bool(self.node_solved.all())

    @property
    def identified_nodes(self) -> list[int]:
        """Sorted nodes all of whose incoming edges are identified (parentless nodes included)."""
        return np.flatnonzero(self.node_solved).tolist()

    @property
    def identified_edges(self) -> list[tuple[int, int]]:
        """Sorted directed edges ``(i, j)`` whose coefficient :math:`\\lambda_{ij}` is identified."""
        return sorted(e for e, s in zip(self.graph.directed, self.edge_solved) if s)

    @property
    def unidentified_edges(self) -> list[tuple[int, int]]:
        """Sorted directed edges not shown identifiable."""
        return sorted(e for e, s in zip(self.graph.directed, self.edge_solved) if not s)

    def __repr__(self) -> str:
        name = "htc" + ("+tian" if self.tian else "") if self.criterion == "htc" else self.criterion
        return (f"IdentificationResult({name}, method={self.method!r}, backend={self.backend!r}, "
                f"identifiable={self.identifiable}, nodes={len(self.identified_nodes)}/{self.graph.n}, "
                f"edges={int(self.edge_solved.sum())}/{self.graph.num_directed}, rounds={self.rounds}, "
                f"tests={self.tests})")

    def to_dict(self) -> dict:
        """A JSON-serialisable summary."""
        out = {"criterion": self.criterion, "tian": self.tian, "method": self.method, "backend": self.backend,
               "n": self.graph.n, "identifiable": self.identifiable,
               "identified_nodes": self.identified_nodes,
               "identified_edges": [list(e) for e in self.identified_edges],
               "rounds": self.rounds, "tests": self.tests}
        if self.criterion == "edgewise":
            out["steps"] = [[v, list(S), list(Y)] for v, S, Y in self.steps]
        else:
            out["order"] = list(self.order)
            out["sources"] = [list(s) for s in self.sources]
        if self.component is not None:
            out["component"] = self.component.tolist()
        return out

    def identifier(self, Sigma: Any) -> tuple[np.ndarray, np.ndarray]:
        r"""Recover the identified entries of :math:`\Lambda` and :math:`\Omega` from a covariance matrix.

        Parameters
        ----------
        Sigma : array_like, shape (n, n)
            A (generic) covariance matrix of the model, finite and symmetric.

        Returns
        -------
        Lambda : ndarray, shape (n, n)
            :math:`\lambda_{ij}` for identified edges, ``0`` where there is no edge, ``NaN`` for edges not
            identified.
        Omega : ndarray, shape (n, n)
            :math:`\omega_{ij} = [(I-\Lambda)^T\Sigma(I-\Lambda)]_{ij}` when columns :math:`i` and :math:`j`
            of :math:`\Lambda` are identified, ``0`` off the bidirected edges (off the diagonal), ``NaN``
            otherwise.  (SEMID returns :math:`\Omega` only when the whole graph is identified; the values
            agree then.)

        Raises
        ------
        ValueError
            If ``Sigma`` has the wrong shape, is not symmetric, has NaN/inf, or is not generic enough for
            the linear systems of the criterion (condition number above 1e12).
        NotImplementedError
            For results of :func:`~fastnips.causal.identify` and its wrappers, and for Tian-mode edgewise.

        Notes
        -----
        The HTC map is FDD's Theorem 1 formula evaluated in solve order (SEMID ``createHtcIdentifier``);
        edgewise steps use the "Sigma minus identified edges" systems of Weihs et al. (2018) (SEMID
        ``createEdgewiseIdentifier``); Tian mode first maps :math:`\Sigma` to each component's covariance
        (Tian 2005; SEMID ``tianSigmaForComponent``).
        """
        if self.method == "mixed" or (self.criterion == "edgewise" and self.tian):
            raise NotImplementedError(f"identifier() covers the HTC (plain, Tian) and plain edgewise runs; this "
                                      f"result is {self.criterion!r} (tian={self.tian})")
        g = _G(self.graph.n, *self.graph.to_arrays())
        S = _ident.validate_sigma(Sigma, g.n)
        if self.criterion == "edgewise":
            Lam = _ident.edgewise_lambda(g, S, self.steps)
        elif self.tian:
            Lam = _ident.tian_lambda(g, S, self.order, self.sources)
        else:
            Lam = _ident.htc_lambda(g, S, self.order, self.sources)
        return Lam, _ident.omega_from_lambda(g, S, Lam)


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _bad_output(backend: str, what: str) -> RuntimeError:
    return RuntimeError(f"backend {backend!r} returned a malformed result: {what}")


def _htc_result(g: MixedGraph, raw: dict, *, tian: bool, method: str, backend: str, seed: int,
                prime: int) -> IdentificationResult:
    n = g.n
    try:
        solved = np.asarray(raw["solved"], dtype=bool).reshape(-1)
        order = tuple(int(v) for v in raw["order"])
        sources = tuple(tuple(sorted(int(y) for y in s)) for s in raw["sources"])
        rounds, tests = int(raw["rounds"]), int(raw["tests"])
        component = np.asarray(raw["component"], dtype=np.int64).reshape(-1) if tian else None
    except (KeyError, TypeError, ValueError) as e:
        raise _bad_output(backend, repr(e)) from e
    if solved.shape != (n,) or len(sources) != n or (component is not None and component.shape != (n,)):
        raise _bad_output(backend, "per-node arrays do not have length n")
    if sorted(order) != np.flatnonzero(solved).tolist():
        raise _bad_output(backend, "'order' is not a permutation of the solved nodes")
    d, _ = g.to_arrays()
    edge_solved = solved[d[:, 1]] if len(d) else np.zeros(0, dtype=bool)
    return IdentificationResult(graph=g, criterion="htc", tian=bool(tian), method=method, backend=backend,
                                node_solved=_readonly(solved), edge_solved=_readonly(edge_solved),
                                rounds=rounds, tests=tests, order=order, sources=sources,
                                steps=(), component=None if component is None else _readonly(component),
                                seed=seed, prime=prime)


def _edgewise_result(g: MixedGraph, raw: dict, *, backend: str, seed: int, prime: int,
                     tian: bool = False) -> IdentificationResult:
    try:
        edge_solved = np.asarray(raw["edge_solved"], dtype=bool).reshape(-1)
        node_solved = np.asarray(raw["node_solved"], dtype=bool).reshape(-1)
        steps = tuple((int(v), tuple(int(x) for x in S), tuple(int(y) for y in Y)) for v, S, Y in raw["steps"])
        rounds, tests = int(raw["rounds"]), int(raw["tests"])
    except (KeyError, TypeError, ValueError) as e:
        raise _bad_output(backend, repr(e)) from e
    if edge_solved.shape != (g.num_directed,) or node_solved.shape != (g.n,):
        raise _bad_output(backend, "edge_solved / node_solved have the wrong length")
    return IdentificationResult(graph=g, criterion="edgewise", tian=tian, method="randomized",
                                backend=backend, node_solved=_readonly(node_solved),
                                edge_solved=_readonly(edge_solved), rounds=rounds, tests=tests,
                                steps=steps, seed=seed, prime=prime)


# ---------------------------------------------------------------------------------------------- public API
def htc_identify(g: MixedGraph, *, method: str = "randomized", tian: bool = False, seed: int = 0,
                 prime: int = DEFAULT_PRIME, backend: str = "auto") -> IdentificationResult:
    r"""Decide which nodes and edges of a mixed graph are identifiable by the half-trek criterion.

    Runs the HTC fixpoint (Foygel, Draisma & Drton 2012, §6): starting from the parentless nodes, a node
    :math:`v` is solved when a half-trek system without sided intersection reaches
    :math:`\mathrm{pa}(v)` from :math:`|\mathrm{pa}(v)|` allowed nodes
    :math:`A_v = (S \cup (V \setminus \mathrm{htr}(v))) \setminus (\{v\} \cup \mathrm{sib}(v))`.

    Parameters
    ----------
    g : MixedGraph
    method : {"randomized", "maxflow"}, default "randomized"
        ``"randomized"``: the test is :math:`\operatorname{rank} M[A_v, \mathrm{pa}(v)] = |\mathrm{pa}(v)|`
        for :math:`M = \Omega(I-\Lambda)^{-1}` at a random point of :math:`\mathbb{F}_p` (FDD Lemma 2).  The
        error is one-sided: a node reported solved is always HTC-solvable; a solvable node is missed with
        probability at most :math:`n^3/(p-1)` over the whole run (:math:`\approx 4\cdot10^{-10}` at
        :math:`n=1000`, :math:`p=2^{61}-1`).  ``"maxflow"``: the exact max-flow test on FDD's vertex-split
        half-trek network.
    tian : bool, default False
        Run the HTC on each Tian c-component (SEMID's default ``htcID``; Tian 2005); strictly stronger than
        plain HTC on some graphs.  ``False`` is plain FDD HTC (SEMID ``htcID(tianDecompose=FALSE)`` =
        ``graphID.htcID``).
    seed : int, default 0
        Seeds the random field elements (``method="randomized"``).
    prime : int, default 2**61 - 1
        Field size :math:`p` (a prime with :math:`3 \le p < 2^{62}`, the same range on every backend); a small
        prime only weakens the test.
    backend : {"auto", "cpp", "reference"}, default "auto"

    Returns
    -------
    IdentificationResult
        ``.identifiable``, ``.identified_nodes``, ``.identified_edges`` (the edges into solved nodes),
        ``.identifier(Sigma)``.

    References
    ----------
    R. Foygel, J. Draisma, M. Drton (2012). Half-trek criterion for generic identifiability of linear
    structural equation models. Ann. Statist. 40(3):1682-1713. arXiv:1107.5552.
    J. Tian (2005). Identifying direct causal effects in linear models. AAAI 2005, 346-352.

    Examples
    --------
    >>> from fastnips.causal import MixedGraph, htc_identify
    >>> iv = MixedGraph(3, directed=[(0, 1), (1, 2)], bidirected=[(1, 2)])
    >>> htc_identify(iv).identifiable
    True
    """
    g = _check_graph(g)
    seed, prime = _check_common(method, tian, seed, prime)
    name = _backend.resolve(backend, op="htc_identify", supported=BACKENDS)
    impl = _backend.native() if name == "cpp" else reference
    d, b = g.to_arrays()
    raw = impl.htc_identify(g.n, d, b, method, bool(tian), seed, prime)
    return _htc_result(g, raw, tian=bool(tian), method=method, backend=name, seed=seed, prime=prime)


def edgewise_identify(g: MixedGraph, *, tian: bool = False, seed: int = 0, prime: int = DEFAULT_PRIME,
                      backend: str = "auto") -> IdentificationResult:
    r"""Edgewise identification (Weihs et al. 2018), decided in polynomial time.

    For node :math:`v` with unsolved parents :math:`U`, a set :math:`S \subseteq U` is identified via
    :math:`Y` (:math:`|Y| = |S|`) when every :math:`y \in Y` is not :math:`v` nor a sibling of :math:`v`,
    no unsolved edge into :math:`y` starts at a node half-trek reachable from :math:`v`, the nodes
    :math:`y` reaches by half-treks (and the unsolved parents of :math:`y` reach by treks) meet :math:`U`
    only inside :math:`S`, and a half-trek system from :math:`Y` onto :math:`S` exists; then
    :math:`\lambda_{S,v}` follows from :math:`\Sigma` minus the already identified edges.  Iterated to a
    fixpoint, this equals SEMID ``edgewiseID(g, tianDecompose=FALSE, subsetSizeControl=Inf)``.

    Instead of enumerating subsets :math:`S`, both backends find the unique largest usable set
    :math:`S^*` by ranks of :math:`M = \Omega(I-\Lambda)^{-1}` over :math:`\mathbb{F}_p` (the union of
    usable sets is usable); the error is one-sided as in :func:`htc_identify`.  Edgewise-identified edges
    always include the HTC-identified ones.

    With ``tian=True`` (SEMID's default ``edgewiseID``) the criterion runs on the component graph of every
    Tian c-component and the answers are mapped back; this is stronger: on SEMID's README example 1 (5 nodes,
    7 edges) plain edgewise identifies 1 edge and the Tian mode all 7, as SEMID's ``edgewiseID`` does.

    Parameters
    ----------
    g : MixedGraph
    tian : bool, default False
        Decompose into Tian c-components first (SEMID ``edgewiseID(tianDecompose=TRUE)``, its default).
    seed : int, default 0
    prime : int, default 2**61 - 1
    backend : {"auto", "cpp", "reference"}, default "auto"
        ``"cpp"`` runs the whole criterion natively, with ``tian=True`` the decomposition and the component
        graphs too (the same steps as the reference).

    Returns
    -------
    IdentificationResult
        With per-edge results (``.identified_edges``) and ``.steps`` = ``(v, S, Y)`` in application order
        (in Tian mode: global node ids, grouped by component; ``.identifier`` is not available then).

    References
    ----------
    L. Weihs, B. Robinson, E. Dufresne, J. Kenkel, K. Kubjas, R. McGee II, N. Nguyen, E. Robeva, M. Drton
    (2018). Determinantal generalizations of instrumental variables. J. Causal Inference 6(1).
    arXiv:1702.03884.

    Examples
    --------
    >>> from fastnips.causal import MixedGraph, edgewise_identify
    >>> g = MixedGraph(3, directed=[(0, 1), (1, 2)], bidirected=[(1, 2)])
    >>> edgewise_identify(g).identified_edges
    [(0, 1), (1, 2)]
    """
    g = _check_graph(g)
    seed, prime = _check_common(None, tian, seed, prime)
    name = _backend.resolve(backend, op="edgewise_identify", supported=BACKENDS)
    impl = _backend.native() if name == "cpp" else reference
    d, b = g.to_arrays()
    if not tian:
        raw = impl.edgewise_identify(g.n, d, b, seed, prime)
        return _edgewise_result(g, raw, backend=name, seed=seed, prime=prime)
    from ._edgewise_tian import edgewise_tian  # a private helper module (it imports this one)

    return edgewise_tian(g, impl, backend=name, seed=seed, prime=prime)


def htc_nonidentifiable(g: MixedGraph, *, backend: str = "auto") -> bool:
    r"""FDD's necessary condition: ``True`` certifies that :math:`G` is generically infinite-to-one.

    By Foygel, Draisma & Drton (2012), Theorem 2 (SEMID ``graphID.nonHtcID``): if every family
    :math:`(Y_v)_{v \in V}` in which each :math:`Y_v` satisfies the HTC for :math:`v` contains a pair
    :math:`v \in Y_w,\ w \in Y_v`, the map :math:`(\Lambda, \Omega) \mapsto \Sigma` has generically infinite
    fibres.  Decided by one max-flow on a network with :math:`2n^2 + N + 2` nodes (:math:`N` non-sibling
    pairs): the certificate holds iff the max-flow is below :math:`|D|`.

    Parameters
    ----------
    g : MixedGraph
    backend : {"auto", "reference"}, default "auto"
        Only the pure-Python reference (one :func:`scipy.sparse.csgraph.maximum_flow` call) implements it;
        ``"cpp"`` raises :class:`ValueError`.

    Returns
    -------
    bool
        ``True``: certified generically non-identifiable.  ``False``: HTC-identifiable or inconclusive.

    References
    ----------
    R. Foygel, J. Draisma, M. Drton (2012). Half-trek criterion for generic identifiability of linear
    structural equation models. Ann. Statist. 40(3):1682-1713. arXiv:1107.5552.

    Examples
    --------
    >>> from fastnips.causal import MixedGraph, htc_nonidentifiable
    >>> htc_nonidentifiable(MixedGraph(2, directed=[(0, 1)], bidirected=[(0, 1)]))  # the bow
    True
    """
    g = _check_graph(g)
    _backend.resolve(backend, op="htc_nonidentifiable", supported=("reference",))
    d, b = g.to_arrays()
    return bool(reference.htc_nonidentifiable(g.n, d, b))


def htc_identify_many(graphs: Iterable[MixedGraph], *, method: str = "randomized", tian: bool = False,
                      seed: int = 0, prime: int = DEFAULT_PRIME,
                      backend: str = "auto") -> list[IdentificationResult]:
    r""":func:`htc_identify` on many graphs; the native backend releases the GIL and uses all cores.

    Each graph gets the HTC fixpoint of :func:`htc_identify` (Foygel, Draisma & Drton 2012), with the same
    ``method``, ``tian``, ``seed`` and ``prime``.

    Parameters
    ----------
    graphs : iterable of MixedGraph
    method, tian, seed, prime, backend
        As in :func:`htc_identify`, the same for every graph.

    Returns
    -------
    list of IdentificationResult
        One per graph, in order.

    Examples
    --------
    >>> from fastnips.causal import MixedGraph, htc_identify_many
    >>> gs = [MixedGraph(2, directed=[(0, 1)]), MixedGraph(2, directed=[(0, 1)], bidirected=[(0, 1)])]
    >>> [r.identifiable for r in htc_identify_many(gs)]
    [True, False]
    """
    if isinstance(graphs, MixedGraph):
        raise ValueError("graphs must be an iterable of MixedGraph, got a single MixedGraph "
                         "(use htc_identify for one graph)")
    try:
        gs = list(graphs)
    except TypeError:
        raise ValueError(f"graphs must be an iterable of MixedGraph, got {type(graphs).__name__}") from None
    for k, g in enumerate(gs):
        _check_graph(g, f"graphs[{k}]")
    seed, prime = _check_common(method, tian, seed, prime)
    name = _backend.resolve(backend, op="htc_identify_many", supported=BACKENDS)
    impl = _backend.native() if name == "cpp" else reference
    triples = [(g.n, *g.to_arrays()) for g in gs]
    raws = impl.htc_identify_many(triples, method, bool(tian), seed, prime)
    if len(raws) != len(gs):
        raise _bad_output(name, f"{len(raws)} results for {len(gs)} graphs")
    return [_htc_result(g, r, tian=bool(tian), method=method, backend=name, seed=seed, prime=prime)
            for g, r in zip(gs, raws)]
