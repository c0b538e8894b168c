r"""Mixed graphs of linear structural equation models.

A linear structural equation model (SEM) on :math:`n` observed variables is given by a *mixed graph*
:math:`G = (V, D, B)` with :math:`V = \{0, \dots, n-1\}`, directed edges :math:`D` (:math:`i \to j`, cycles
and 2-cycles allowed, no self-loops) and bidirected edges :math:`B` (:math:`i \leftrightarrow j`, unordered,
:math:`i \ne j`).  Its parameters are :math:`\Lambda \in \mathbb{R}^{D}` (:math:`\Lambda_{ij} = 0` unless
:math:`i \to j \in D`) and a positive definite :math:`\Omega` with :math:`\Omega_{ij} = 0` unless
:math:`i = j` or :math:`i \leftrightarrow j \in B`; the model's covariance matrix is

.. math:: \Sigma = (I - \Lambda)^{-T} \, \Omega \, (I - \Lambda)^{-1}.

:class:`MixedGraph` stores such a graph, validates it, and converts to and from SEMID-style adjacency
matrices (Foygel, Draisma & Drton 2012; the R package SEMID), networkx graphs, and two small file formats.

File formats
------------
*Text edge list* (``.txt`` or any suffix other than ``.json``)::

    # comments start with '#', anywhere on a line
    n 4            # header: the number of nodes; the first line that is not blank or a comment
    0 -> 1         # directed edge 0 -> 1
    1 <-> 3        # bidirected edge 1 <-> 3
    2->3           # spaces around the arrow are optional

*JSON* (``.json``)::

    {"n": 4, "directed": [[0, 1], [2, 3]], "bidirected": [[1, 3]]}

Node ids are 0-based integers in both formats.  Every error names the file and the line number.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from . import _graph_io

__all__ = ["MixedGraph"]

_MAX_N = (1 << 31) - 1  # node ids travel to the native core as int32


def _as_node_id(x: Any, what: str) -> int:
    """Return ``x`` as a Python int, rejecting bools, floats and other non-integers."""
    if isinstance(x, (bool, np.bool_)):
        raise ValueError(f"{what}: node ids must be integers, got the bool {x!r}")
    try:
        return operator.index(x)
    except TypeError:
        raise ValueError(f"{what}: node ids must be integers, got {x!r} ({type(x).__name__})") from None


def _check_ids(arr: np.ndarray, n: int, name: str) -> None:
    """Range and self-loop checks of an (k, 2) int64 edge array; the message names the first bad row."""
    bad = np.flatnonzero(((arr < 0) | (arr >= n)).any(axis=1))
    if len(bad):
        k = int(bad[0])
        i, j = arr[k].tolist()
        x = i if not 0 <= i < n else j
        raise ValueError(f"{name}[{k}] = ({i}, {j}): node id {x} is out of range for n={n} "
                         f"(ids are 0-based: 0..{n - 1})")
    loops = np.flatnonzero(arr[:, 0] == arr[:, 1])
    if len(loops):
        k = int(loops[0])
        i, j = arr[k].tolist()
        raise ValueError(f"{name}[{k}] = ({i}, {j}) is a self-loop; mixed graphs have none")


def _parse_edges(edges: Any, n: int, name: str) -> np.ndarray:
    """Validate an iterable of pairs (or an (k, 2) integer array); return an (k, 2) int64 array."""
    if edges is None:
        return np.zeros((0, 2), dtype=np.int64)
    if isinstance(edges, np.ndarray):
        if edges.size == 0:
            return np.zeros((0, 2), dtype=np.int64)
        if edges.ndim != 2 or edges.shape[1] != 2:
            raise ValueError(f"{name} must be a sequence of (i, j) pairs / an array of shape (k, 2), "
                             f"got an array of shape {edges.shape}")
        if not np.issubdtype(edges.dtype, np.integer):
            raise ValueError(f"{name}: node ids must be integers, got an array of dtype {edges.dtype}")
        if edges.dtype == np.uint64 and edges.size and int(edges.max()) > np.iinfo(np.int64).max:
            raise ValueError(f"{name}: node id {int(edges.max())} is out of range for n={n}")
        arr = edges.astype(np.int64)
        _check_ids(arr, n, name)
        return arr
    if isinstance(edges, (str, bytes)) or not isinstance(edges, Iterable):
        raise ValueError(f"{name} must be a sequence of (i, j) pairs, got {type(edges).__name__}")
    out = []
    for k, e in enumerate(edges):
        try:
            pair = tuple(e)
        except TypeError:
            raise ValueError(f"{name}[{k}] must be a pair (i, j), got {e!r}") from None
        if len(pair) != 2:
            raise ValueError(f"{name}[{k}] must be a pair (i, j), got {e!r}")
        i = _as_node_id(pair[0], f"{name}[{k}]")
        j = _as_node_id(pair[1], f"{name}[{k}]")
        for x in (i, j):
            if not 0 <= x < n:
                raise ValueError(f"{name}[{k}] = ({i}, {j}): node id {x} is out of range for n={n} "
                                 f"(ids are 0-based: 0..{n - 1})")
        if i == j:
            raise ValueError(f"{name}[{k}] = ({i}, {j}) is a self-loop; mixed graphs have none")
        out.append((i, j))
    return np.array(out, dtype=np.int64).reshape(-1, 2)


def _first_duplicate(keys: np.ndarray) -> tuple[int, int] | None:
    """``(first, later)`` positions of the repeated key whose later occurrence comes first, or ``None``."""
    if len(keys) < 2:
        return None
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    dup = np.flatnonzero(sk[1:] == sk[:-1])
    if not len(dup):
        return None
    later = order[dup + 1]
    k = int(np.argmin(later))
    first = int(order[np.searchsorted(sk, sk[dup[k]])])
    return first, int(later[k])


def _csr(rows: np.ndarray, cols: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Compressed rows: ``cols`` grouped by ``rows`` (each group sorted), as read-only int32 arrays."""
    order = np.lexsort((cols, rows))
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    idx_t = np.int32 if len(rows) < (1 << 31) else np.int64
    out = (indptr.astype(idx_t), np.ascontiguousarray(cols[order], dtype=np.int32))
    for a in out:
        a.setflags(write=False)
    return out


def _readonly_int32(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.int32).reshape(-1, 2)
    a.setflags(write=False)
    return a
class MixedGraph:
    r"""An immutable mixed graph :math:`G = (V, D, B)` on nodes :math:`0, \dots, n-1`.

    Parameters
    ----------
    n : int
        Number of nodes, ``n >= 0``.
    directed : sequence of (int, int) or array of shape (k, 2), optional
        Directed edges ``(i, j)`` meaning :math:`i \to j`.  Cycles and 2-cycles are allowed.
    bidirected : sequence of (int, int) or array of shape (m, 2), optional
        Bidirected edges ``(i, j)`` meaning :math:`i \leftrightarrow j`; stored as ``(min, max)``.

    Raises
    ------
    ValueError
        If ``n`` is negative or not an integer, an id is not an integer or is out of range, an edge is a
        self-loop, a directed edge is repeated, or a bidirected edge is repeated (including the same edge
        given as both ``(i, j)`` and ``(j, i)``).

    Notes
    -----
    Storage is a few numpy arrays: the edges (``int32``, shapes ``(|D|, 2)`` and ``(|B|, 2)``) and compressed
    parent / child / sibling lists, about 12 bytes per node and 16 per edge; ``n`` must be below
    :math:`2^{31}` (ids travel to the native core as ``int32``).
    Edges keep the order in which they were given (bidirected ones normalised to ``(min, max)``); the
    per-edge outputs of :func:`~fastnips.causal.edgewise_identify` follow that order.  Equality and hashing
    ignore edge order.

    Examples
    --------
    The instrumental-variable graph :math:`0 \to 1 \to 2`, :math:`1 \leftrightarrow 2`:

    >>> g = MixedGraph(3, directed=[(0, 1), (1, 2)], bidirected=[(1, 2)])
    >>> g.parents(2), g.siblings(2)
    ((1,), (1,))
    """

    __slots__ = ("_b", "_ch", "_d", "_hash", "_n", "_pa", "_sib")

    def __init__(self, n: int, directed: Any = (), bidirected: Any = ()) -> None:
        if isinstance(n, (bool, np.bool_)):
            raise ValueError(f"n must be a non-negative integer, got {n!r}")
        try:
            n = operator.index(n)
        except TypeError:
            raise ValueError(f"n must be a non-negative integer, got {n!r}") from None
        if n < 0:
            raise ValueError(f"n must be a non-negative integer, got {n}")
        if n > _MAX_N:
            raise ValueError(f"n must be at most 2**31 - 1 (node ids are int32 in the native core), got {n}")
        d = _parse_edges(directed, n, "directed")
        b = np.sort(_parse_edges(bidirected, n, "bidirected"), axis=1)
        dup = _first_duplicate(d[:, 0] * n + d[:, 1])
        if dup is not None:
            i, j = d[dup[0]].tolist()
            raise ValueError(f"directed edge {i} -> {j} is given twice (directed[{dup[0]}] and "
                             f"directed[{dup[1]}])")
        dup = _first_duplicate(b[:, 0] * n + b[:, 1])
        if dup is not None:
            i, j = b[dup[0]].tolist()
            raise ValueError(f"bidirected edge {i} <-> {j} is given twice (bidirected[{dup[0]}] and "
                             f"bidirected[{dup[1]}]; (i, j) and (j, i) are the same bidirected edge)")
        setattr_ = object.__setattr__
        setattr_(self, "_n", n)
        setattr_(self, "_d", _readonly_int32(d))
        setattr_(self, "_b", _readonly_int32(b))
        setattr_(self, "_pa", _csr(d[:, 1], d[:, 0], n))
        setattr_(self, "_ch", _csr(d[:, 0], d[:, 1], n))
        setattr_(self, "_sib", _csr(np.concatenate([b[:, 0], b[:, 1]]), np.concatenate([b[:, 1], b[:, 0]]), n))
        setattr_(self, "_hash", None)

    # ------------------------------------------------------------------ immutability and basics
    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("MixedGraph is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("MixedGraph is immutable")

    def __reduce__(self):
        return (MixedGraph, (self._n, self._d, self._b))

    @property
    def n(self) -> int:
        """Number of nodes."""
        return self._n

    @property
    def directed(self) -> tuple[tuple[int, int], ...]:
        """Directed edges ``(i, j)`` (:math:`i \\to j`) in input order (built on each access)."""
        return tuple(map(tuple, self._d.tolist()))

    @property
    def bidirected(self) -> tuple[tuple[int, int], ...]:
        """Bidirected edges ``(i, j)`` with ``i < j`` in input order (built on each access)."""
        return tuple(map(tuple, self._b.tolist()))

    @property
    def num_directed(self) -> int:
        """Number of directed edges ``u -> v``."""
        return len(self._d)

    @property
    def num_bidirected(self) -> int:
        """Number of bidirected edges ``u <-> v``."""
        return len(self._b)

    def _check_node(self, v: Any, name: str = "v") -> int:
        v = _as_node_id(v, name)
        if not 0 <= v < self._n:
            raise ValueError(f"{name}={v} is out of range for a graph with n={self._n} nodes")
        return v

    def _row(self, csr: tuple[np.ndarray, np.ndarray], v: Any) -> tuple[int, ...]:
        v = self._check_node(v)
        indptr, idx = csr
        return tuple(idx[indptr[v]:indptr[v + 1]].tolist())

    def parents(self, v: int) -> tuple[int, ...]:
        """Sorted parents :math:`\\mathrm{pa}(v) = \\{i : i \\to v\\}`."""
        return self._row(self._pa, v)

    def children(self, v: int) -> tuple[int, ...]:
        """Sorted children :math:`\\{j : v \\to j\\}`."""
        return self._row(self._ch, v)

    def siblings(self, v: int) -> tuple[int, ...]:
        """Sorted siblings :math:`\\mathrm{sib}(v) = \\{i : i \\leftrightarrow v\\}`."""
        return self._row(self._sib, v)

    def _edge_keys(self) -> tuple[np.ndarray, np.ndarray]:
        n = np.int64(self._n)
        return (np.sort(self._d[:, 0].astype(np.int64) * n + self._d[:, 1]),
                np.sort(self._b[:, 0].astype(np.int64) * n + self._b[:, 1]))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MixedGraph):
            return NotImplemented
        if self._n != other._n or len(self._d) != len(other._d) or len(self._b) != len(other._b):
            return False
        return all(np.array_equal(x, y) for x, y in zip(self._edge_keys(), other._edge_keys()))

    def __hash__(self) -> int:
        if self._hash is None:
            dk, bk = self._edge_keys()
            object.__setattr__(self, "_hash", hash((self._n, dk.tobytes(), bk.tobytes())))
        return self._hash

    def __repr__(self) -> str:
        return f"MixedGraph(n={self._n}, directed={self._d.tolist()}, bidirected={self._b.tolist()})"

    # ------------------------------------------------------------------ arrays for the native core
    def to_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Edges as C-contiguous, read-only ``int32`` arrays of shapes ``(|D|, 2)`` and ``(|B|, 2)``.

        This is the form :mod:`fastnips._C` takes; rows follow :attr:`directed` / :attr:`bidirected`.  They
        are the graph's own storage (no copy).
        """
        return self._d, self._b

    def permute(self, perm: Sequence[int]) -> MixedGraph:
        """Relabel nodes: node ``i`` becomes ``perm[i]``.

        Parameters
        ----------
        perm : sequence of int, length n
            A permutation of ``0..n-1``.

        Returns
        -------
        MixedGraph
            The relabelled graph; edge order is kept.
        """
        p = [_as_node_id(x, "perm") for x in perm]
        if sorted(p) != list(range(self._n)):
            raise ValueError(f"perm must be a permutation of 0..{self._n - 1}, got {list(perm)!r}")
        pa = np.array(p, dtype=np.int64).reshape(-1)
        return MixedGraph(self._n, pa[self._d] if len(self._d) else (), pa[self._b] if len(self._b) else ())

    # ------------------------------------------------------------------ adjacency matrices (SEMID)
    @classmethod
    def from_adjacency(cls, L: Any, O: Any) -> MixedGraph:
        """Build a graph from SEMID-style 0/1 adjacency matrices.

        Parameters
        ----------
        L : array_like of shape (n, n)
            ``L[i, j] = 1`` iff :math:`i \\to j`; zero diagonal.
        O : array_like of shape (n, n)
            ``O[i, j] = O[j, i] = 1`` iff :math:`i \\leftrightarrow j`; symmetric with zero diagonal.

        Notes
        -----
        Mirrors SEMID's ``validateMatrices``: both matrices square of the same size, 0/1 valued, zero
        diagonals.  SEMID itself does not insist on a symmetric ``O`` (``graphID.htcID`` symmetrises it,
        while ``MixedGraph`` reads only its upper triangle), so an asymmetric ``O`` is ambiguous and is
        rejected here.  Edges come out in row-major order.
        """
        mats = []
        for name, M in (("L", L), ("O", O)):
            A = np.asarray(M)
            if A.ndim != 2 or A.shape[0] != A.shape[1]:
                raise ValueError(f"{name} must be a square matrix, got shape {A.shape}")
            if A.dtype == object or not (np.issubdtype(A.dtype, np.number) or A.dtype == np.bool_):
                raise ValueError(f"{name} must be a numeric 0/1 matrix, got dtype {A.dtype}")
            if not np.all((A == 0) | (A == 1)):
                raise ValueError(f"{name} must contain only 0's and 1's")
            if np.any(np.diag(A) != 0):
                raise ValueError(f"{name} must have 0's along its diagonal (no self-loops), "
                                 f"nonzero at {np.flatnonzero(np.diag(A)).tolist()}")
            mats.append(A.astype(bool))
        Lb, Ob = mats
        if Lb.shape != Ob.shape:
            raise ValueError(f"L and O must have the same shape, got {Lb.shape} and {Ob.shape}")
        if not np.array_equal(Ob, Ob.T):
            i, j = np.argwhere(Ob != Ob.T)[0]
            raise ValueError(f"O must be symmetric: O[{i}, {j}] = {int(Ob[i, j])} but O[{j}, {i}] = "
                             f"{int(Ob[j, i])} (pass O | O.T to symmetrise)")
        return cls(Lb.shape[0], np.argwhere(Lb), np.argwhere(np.triu(Ob, 1)))

    def to_adjacency(self) -> tuple[np.ndarray, np.ndarray]:
        """SEMID-style ``(L, O)`` as ``int64`` 0/1 matrices (``O`` symmetric)."""
        L = np.zeros((self._n, self._n), dtype=np.int64)
        O = np.zeros((self._n, self._n), dtype=np.int64)
        L[self._d[:, 0], self._d[:, 1]] = 1
        O[self._b[:, 0], self._b[:, 1]] = 1
        O[self._b[:, 1], self._b[:, 0]] = 1
        return L, O

    # ------------------------------------------------------------------ networkx
    @classmethod
    def from_networkx(cls, G: Any, *, nodelist: Sequence[Any] | None = None,
                      attr: str = "kind") -> MixedGraph:
        """Build a graph from a networkx ``DiGraph`` or ``MultiDiGraph``.

        Convention: every edge ``u -> v`` is directed unless its attribute ``kind`` (the name is set by
        ``attr``) is ``"bidirected"``; a bidirected edge may be stored in either orientation or in both (both
        orientations are merged into one edge).  A ``MultiDiGraph`` is needed to hold a directed edge and a
        bidirected edge between the same pair.  Undirected networkx graphs are rejected.

        Parameters
        ----------
        G : networkx.DiGraph or networkx.MultiDiGraph
        nodelist : sequence, optional
            Node order: ``nodelist[i]`` becomes node ``i``.  Default: ``sorted(G.nodes)`` when that sorts,
            else ``list(G.nodes)``; so a graph on ``0..n-1`` keeps its labels.
        attr : str, default "kind"
            Name of the edge attribute holding ``"directed"`` (the default when absent) or ``"bidirected"``.
        """
        if not hasattr(G, "is_directed") or not hasattr(G, "edges"):
            raise ValueError(f"G must be a networkx DiGraph or MultiDiGraph, got {type(G).__name__}")
        if not G.is_directed():
            raise ValueError("G must be a directed networkx graph (DiGraph or MultiDiGraph); mark "
                             "bidirected edges with the edge attribute kind='bidirected'")
        if nodelist is None:
            try:
                nodelist = sorted(G.nodes)
            except TypeError:
                nodelist = list(G.nodes)
        nodelist = list(nodelist)
        index = {u: i for i, u in enumerate(nodelist)}
        if len(index) != len(nodelist):
            raise ValueError("nodelist contains repeated nodes")
        if set(index) != set(G.nodes):
            raise ValueError("nodelist must contain exactly the nodes of G")
        d: list[tuple[int, int]] = []
        b: list[tuple[int, int]] = []
        seen_b: set[tuple[int, int]] = set()
        oriented_b: set[tuple[int, int]] = set()
        for u, v, attrs in G.edges(data=True):
            k = attrs.get(attr, "directed")
            if k not in ("directed", "bidirected"):
                raise ValueError(f"edge ({u!r}, {v!r}) has {attr}={k!r}; expected 'directed' or 'bidirected'")
            i, j = index[u], index[v]
            if k == "directed":
                d.append((i, j))  # a repeated directed edge (MultiDiGraph) is rejected by __init__
                continue
            if (i, j) in oriented_b:
                raise ValueError(f"bidirected edge ({u!r}, {v!r}) is stored twice in the same orientation")
            oriented_b.add((i, j))
            e = (min(i, j), max(i, j))
            if e not in seen_b:
                seen_b.add(e)
                b.append(e)
        return cls(len(nodelist), d, b)

    def to_networkx(self):
        """Return a ``networkx.MultiDiGraph`` on nodes ``0..n-1``; every edge has ``kind`` set to
        ``"directed"`` or ``"bidirected"`` (bidirected edges stored once, as ``(min, max)``)."""
        import networkx as nx

        G = nx.MultiDiGraph()
        G.add_nodes_from(range(self._n))
        G.add_edges_from(self._d.tolist(), kind="directed")
        G.add_edges_from(self._b.tolist(), kind="bidirected")
        return G

    # ------------------------------------------------------------------ files
    @classmethod
    def from_file(cls, path: str | os.PathLike, format: str | None = None) -> MixedGraph:
        """Read a graph from a text edge list or a JSON file (see the module docstring).

        Parameters
        ----------
        path : str or path-like
        format : {"text", "json"}, optional
            Default: ``"json"`` for a ``.json`` suffix, else ``"text"``.

        Raises
        ------
        ValueError
            On any malformed line, invalid UTF-8 or too deeply nested JSON, with ``path:line:`` (or
            ``path:``) in front of the message.
        OSError
            If the file cannot be opened.
        """
        return _graph_io.read_file(cls, path, format)

    def to_file(self, path: str | os.PathLike, format: str | None = None) -> None:
        """Write the graph as a text edge list or JSON (format inferred from the suffix by default)."""
        path = os.fspath(path)
        fmt = _graph_io.infer_format(path, format)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(self.to_json() + "\n" if fmt == "json" else self.to_text())

    @classmethod
    def from_text(cls, text: str, *, source: str = "<text>") -> MixedGraph:
        """Parse the text edge-list format; errors read ``source:line: message``."""
        return _graph_io.from_text(cls, text, source=source)

    def to_text(self) -> str:
        """The text edge-list form (round-trips through :meth:`from_text`)."""
        return _graph_io.to_text(self)

    @classmethod
    def from_json(cls, text: str, *, source: str = "<json>") -> MixedGraph:
        """Parse ``{"n": N, "directed": [[i, j], ...], "bidirected": [[i, j], ...]}``."""
        return _graph_io.from_json(cls, text, source=source)

    def to_json(self) -> str:
        """The JSON form (round-trips through :meth:`from_json`)."""
        return _graph_io.to_json(self)
