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

import json
import operator
import os
import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

__all__ = ["MixedGraph"]

_EDGE_RE = re.compile(r"^(\S+?)\s*(<->|->)\s*(\S+)$")


def _as_node_id(x: Any, what: str) -> int:
    """Return ``x`` as a Python int, rejecting bools, floats and other non-integers."""
    if isinstance(x, (bool, np.bool_)):
        raise ValueError(f"{what}: node ids must be integers, got the bool {x!r}")
    try:
        return operator.index(x)
    except TypeError:
        raise ValueError(f"{what}: node ids must be integers, got {x!r} ({type(x).__name__})") from None


def _parse_edges(edges: Any, n: int, name: str) -> list[tuple[int, int]]:
    """Validate an iterable of pairs (or an (k, 2) integer array) and return a list of int tuples."""
    if edges is None:
        return []
    if isinstance(edges, np.ndarray):
        if edges.size == 0:
            return []
        if edges.ndim != 2 or edges.shape[1] != 2:
            raise ValueError(f"{name} must be a sequence of (i, j) pairs / an array of shape (k, 2), "
                             f"got an array of shape {edges.shape}")
        if not np.issubdtype(edges.dtype, np.integer):
            raise ValueError(f"{name}: node ids must be integers, got an array of dtype {edges.dtype}")
        edges = edges.tolist()
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
    return out


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

    __slots__ = ("_arrays", "_bi", "_ch", "_dir", "_hash", "_n", "_pa", "_sib")

    def __init__(self, n: int, directed: Any = (), bidirected: Any = ()) -> None:
        if isinstance(n, (bool, np.bool_)):
            raise ValueError(f"n must be a non-negative integer, got {n!r}")
        try:
            n = operator.index(n)
        except TypeError:
            raise ValueError(f"n must be a non-negative integer, got {n!r}") from None
        if n < 0:
            raise ValueError(f"n must be a non-negative integer, got {n}")
        d = _parse_edges(directed, n, "directed")
        b = _parse_edges(bidirected, n, "bidirected")
        seen: dict[tuple[int, int], int] = {}
        for k, e in enumerate(d):
            if e in seen:
                raise ValueError(f"directed edge {e[0]} -> {e[1]} is given twice (directed[{seen[e]}] and "
                                 f"directed[{k}])")
            seen[e] = k
        bnorm = []
        seenb: dict[tuple[int, int], int] = {}
        for k, (i, j) in enumerate(b):
            e = (min(i, j), max(i, j))
            if e in seenb:
                raise ValueError(f"bidirected edge {e[0]} <-> {e[1]} is given twice (bidirected[{seenb[e]}] "
                                 f"and bidirected[{k}]; (i, j) and (j, i) are the same bidirected edge)")
            seenb[e] = k
            bnorm.append(e)
        pa: list[list[int]] = [[] for _ in range(n)]
        ch: list[list[int]] = [[] for _ in range(n)]
        sib: list[list[int]] = [[] for _ in range(n)]
        for i, j in d:
            pa[j].append(i)
            ch[i].append(j)
        for i, j in bnorm:
            sib[i].append(j)
            sib[j].append(i)
        setattr_ = object.__setattr__
        setattr_(self, "_n", n)
        setattr_(self, "_dir", tuple(d))
        setattr_(self, "_bi", tuple(bnorm))
        setattr_(self, "_pa", tuple(tuple(sorted(x)) for x in pa))
        setattr_(self, "_ch", tuple(tuple(sorted(x)) for x in ch))
        setattr_(self, "_sib", tuple(tuple(sorted(x)) for x in sib))
        setattr_(self, "_hash", None)
        setattr_(self, "_arrays", None)

    # ------------------------------------------------------------------ immutability and basics
    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("MixedGraph is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("MixedGraph is immutable")

    def __reduce__(self):
        return (MixedGraph, (self._n, list(self._dir), list(self._bi)))

    @property
    def n(self) -> int:
        """Number of nodes."""
        return self._n

    @property
    def directed(self) -> tuple[tuple[int, int], ...]:
        """Directed edges ``(i, j)`` (:math:`i \\to j`) in input order."""
        return self._dir

    @property
    def bidirected(self) -> tuple[tuple[int, int], ...]:
        """Bidirected edges ``(i, j)`` with ``i < j`` in input order."""
        return self._bi

    @property
    def num_directed(self) -> int:
        """Number of directed edges ``u -> v``."""
        return len(self._dir)

    @property
    def num_bidirected(self) -> int:
        """Number of bidirected edges ``u <-> v``."""
        return len(self._bi)

    def _check_node(self, v: Any, name: str = "v") -> int:
        v = _as_node_id(v, name)
        if not 0 <= v < self._n:
            raise ValueError(f"{name}={v} is out of range for a graph with n={self._n} nodes")
        return v

    def parents(self, v: int) -> tuple[int, ...]:
        """Sorted parents :math:`\\mathrm{pa}(v) = \\{i : i \\to v\\}`."""
        return self._pa[self._check_node(v)]

    def children(self, v: int) -> tuple[int, ...]:
        """Sorted children :math:`\\{j : v \\to j\\}`."""
        return self._ch[self._check_node(v)]

    def siblings(self, v: int) -> tuple[int, ...]:
        """Sorted siblings :math:`\\mathrm{sib}(v) = \\{i : i \\leftrightarrow v\\}`."""
        return self._sib[self._check_node(v)]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MixedGraph):
            return NotImplemented
        return (self._n == other._n and set(self._dir) == set(other._dir)
                and set(self._bi) == set(other._bi))

    def __hash__(self) -> int:
        if self._hash is None:
            object.__setattr__(self, "_hash", hash((self._n, frozenset(self._dir), frozenset(self._bi))))
        return self._hash

    def __repr__(self) -> str:
        return (f"MixedGraph(n={self._n}, directed={[list(e) for e in self._dir]}, "
                f"bidirected={[list(e) for e in self._bi]})")

    # ------------------------------------------------------------------ arrays for the native core
    def to_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Edges as C-contiguous ``int32`` arrays of shapes ``(|D|, 2)`` and ``(|B|, 2)``.

        This is the form :mod:`fastnips._C` takes; rows follow :attr:`directed` / :attr:`bidirected`.
        Built once per graph and cached (read-only), so repeated identification calls on a large graph
        do not pay the conversion again.
        """
        if self._arrays is None:
            d = np.array(self._dir, dtype=np.int32).reshape(-1, 2)
            b = np.array(self._bi, dtype=np.int32).reshape(-1, 2)
            d.setflags(write=False)
            b.setflags(write=False)
            object.__setattr__(self, "_arrays", (d, b))
        return self._arrays

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
        return MixedGraph(self._n, [(p[i], p[j]) for i, j in self._dir],
                          [(p[i], p[j]) for i, j in self._bi])

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
        d = [tuple(map(int, e)) for e in np.argwhere(Lb)]
        b = [tuple(map(int, e)) for e in np.argwhere(np.triu(Ob, 1))]
        return cls(Lb.shape[0], d, b)

    def to_adjacency(self) -> tuple[np.ndarray, np.ndarray]:
        """SEMID-style ``(L, O)`` as ``int64`` 0/1 matrices (``O`` symmetric)."""
        L = np.zeros((self._n, self._n), dtype=np.int64)
        O = np.zeros((self._n, self._n), dtype=np.int64)
        for i, j in self._dir:
            L[i, j] = 1
        for i, j in self._bi:
            O[i, j] = O[j, i] = 1
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
        for i, j in self._dir:
            G.add_edge(i, j, kind="directed")
        for i, j in self._bi:
            G.add_edge(i, j, kind="bidirected")
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
            On any malformed line, with ``path:line:`` in front of the message.
        """
        path = os.fspath(path)
        fmt = _infer_format(path, format)
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        if fmt == "json":
            return cls.from_json(text, source=path)
        return cls.from_text(text, source=path)

    def to_file(self, path: str | os.PathLike, format: str | None = None) -> None:
        """Write the graph as a text edge list or JSON (format inferred from the suffix by default)."""
        path = os.fspath(path)
        fmt = _infer_format(path, format)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(self.to_json() + "\n" if fmt == "json" else self.to_text())

    @classmethod
    def from_text(cls, text: str, *, source: str = "<text>") -> MixedGraph:
        """Parse the text edge-list format; errors read ``source:line: message``."""
        n = None
        d: list[tuple[int, int]] = []
        b: list[tuple[int, int]] = []
        d_line: dict[tuple[int, int], int] = {}
        b_line: dict[tuple[int, int], int] = {}
        for lineno, raw in enumerate(text.splitlines(), start=1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue

            def err(msg: str, lineno: int = lineno) -> ValueError:
                return ValueError(f"{source}:{lineno}: {msg}")

            if n is None:
                parts = line.split()
                if len(parts) != 2 or parts[0] != "n":
                    raise err(f"expected the header 'n N' (the number of nodes), got {raw.strip()!r}")
                try:
                    n = int(parts[1])
                except ValueError:
                    raise err(f"the number of nodes must be an integer, got {parts[1]!r}") from None
                if n < 0:
                    raise err(f"the number of nodes must be >= 0, got {n}")
                continue
            m = _EDGE_RE.match(line)
            if m is None:
                if line.split()[0] == "n":
                    raise err("the header 'n N' is given twice")
                raise err(f"expected an edge 'i -> j' or 'i <-> j', got {raw.strip()!r}")
            ids = []
            for tok in (m.group(1), m.group(3)):
                try:
                    x = int(tok)
                except ValueError:
                    raise err(f"node ids must be integers, got {tok!r}") from None
                if not 0 <= x < n:
                    raise err(f"node id {x} is out of range for n={n} (ids are 0-based: 0..{n - 1})")
                ids.append(x)
            i, j = ids
            if i == j:
                raise err(f"self-loop {i} {m.group(2)} {j}; mixed graphs have none")
            if m.group(2) == "->":
                if (i, j) in d_line:
                    raise err(f"directed edge {i} -> {j} repeats line {d_line[(i, j)]}")
                d_line[(i, j)] = lineno
                d.append((i, j))
            else:
                e = (min(i, j), max(i, j))
                if e in b_line:
                    raise err(f"bidirected edge {i} <-> {j} repeats line {b_line[e]}")
                b_line[e] = lineno
                b.append(e)
        if n is None:
            raise ValueError(f"{source}: no header 'n N' found (empty file?)")
        return cls(n, d, b)

    def to_text(self) -> str:
        """The text edge-list form (round-trips through :meth:`from_text`)."""
        lines = [f"n {self._n}"]
        lines += [f"{i} -> {j}" for i, j in self._dir]
        lines += [f"{i} <-> {j}" for i, j in self._bi]
        return "\n".join(lines) + "\n"

    @classmethod
    def from_json(cls, text: str, *, source: str = "<json>") -> MixedGraph:
        """Parse ``{"n": N, "directed": [[i, j], ...], "bidirected": [[i, j], ...]}``."""
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{source}:{e.lineno}: invalid JSON: {e.msg}") from None
        if not isinstance(obj, dict):
            raise ValueError(f"{source}:1: expected a JSON object with keys 'n', 'directed', 'bidirected'")
        unknown = set(obj) - {"n", "directed", "bidirected"}
        if unknown:
            raise ValueError(f"{source}:1: unknown keys {sorted(unknown)}; expected 'n', 'directed', "
                             "'bidirected'")
        if "n" not in obj:
            raise ValueError(f"{source}:1: missing key 'n' (the number of nodes)")
        n = obj["n"]
        if isinstance(n, bool) or not isinstance(n, int):
            raise ValueError(f"{source}:1: 'n' must be an integer, got {n!r}")

        def key_line(key: str) -> int:
            m = re.search(r'"' + key + r'"\s*:', text)
            return text.count("\n", 0, m.start()) + 1 if m else 1

        for key in ("directed", "bidirected"):
            edges = obj.get(key, [])
            if not isinstance(edges, list) or not all(
                    isinstance(e, list) and len(e) == 2 and all(
                        isinstance(x, int) and not isinstance(x, bool) for x in e) for e in edges):
                raise ValueError(f"{source}:{key_line(key)}: '{key}' must be a list of [i, j] integer pairs")
        try:
            return cls(n, obj.get("directed", []), obj.get("bidirected", []))
        except ValueError as e:
            msg = str(e)
            key = next((k for k in ("bidirected", "directed") if msg.startswith(k)), "n")
            raise ValueError(f"{source}:{key_line(key)}: {msg}") from None

    def to_json(self) -> str:
        """The JSON form (round-trips through :meth:`from_json`)."""
        return json.dumps({"n": self._n, "directed": [list(e) for e in self._dir],
                           "bidirected": [list(e) for e in self._bi]})


def _infer_format(path: str, fmt: str | None) -> str:
    if fmt is None:
        return "json" if path.lower().endswith(".json") else "text"
    if fmt not in ("text", "json"):
        raise ValueError(f"format must be 'text' or 'json', got {fmt!r}")
    return fmt
