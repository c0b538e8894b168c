"""Text edge-list and JSON files of :class:`~fastnips.causal.MixedGraph` (the formats are described in
:mod:`fastnips.causal.graph`).  Every error is a :class:`ValueError` naming the source (the path for files)
and, where there is one, the line."""

from __future__ import annotations

import json
import os
import re
from typing import Any

_EDGE_RE = re.compile(r"^(\S+?)\s*(<->|->)\s*(\S+)$")


def infer_format(path: str, fmt: str | None) -> str:
    """``"json"`` for a ``.json`` suffix, else ``"text"``; an explicit ``fmt`` is checked."""
    if fmt is None:
        return "json" if path.lower().endswith(".json") else "text"
    if fmt not in ("text", "json"):
        raise ValueError(f"format must be 'text' or 'json', got {fmt!r}")
    return fmt


def read_file(cls: Any, path: str | os.PathLike, fmt: str | None) -> Any:
    """Read a graph file; decoding errors name the path and the byte offset."""
    path = os.fspath(path)
    fmt = infer_format(path, fmt)
    with open(path, "rb") as fh:
        raw = fh.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise ValueError(f"{path}:{line}: cannot read it as UTF-8 text (byte 0x{raw[e.start]:02x} at offset "
                         f"{e.start}); graph files are UTF-8 text or JSON") from None
    return from_json(cls, text, source=path) if fmt == "json" else from_text(cls, text, source=path)


def from_text(cls: Any, text: str, *, source: str = "<text>") -> Any:
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
    try:
        return cls(n, d, b)
    except ValueError as e:
        raise ValueError(f"{source}:1: {e}") from None


def from_json(cls: Any, text: str, *, source: str = "<json>") -> Any:
    """Parse ``{"n": N, "directed": [[i, j], ...], "bidirected": [[i, j], ...]}``."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{source}:{e.lineno}: invalid JSON: {e.msg}") from None
    except RecursionError:
        raise ValueError(f"{source}: JSON nested too deeply; expected an object with keys 'n', 'directed', "
                         "'bidirected'") from None
    if not isinstance(obj, dict):
        raise ValueError(f"{source}:1: expected a JSON object with keys 'n', 'directed', 'bidirected'")
    unknown = set(obj) - {"n", "directed", "bidirected"}
    if unknown:
        raise ValueError(f"{source}:1: unknown keys {sorted(unknown)}; expected 'n', 'directed', 'bidirected'")
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


def to_text(g: Any) -> str:
    """The text edge-list form (round-trips through :func:`from_text`)."""
    d, b = g.to_arrays()
    lines = [f"n {g.n}"]
    lines += [f"{i} -> {j}" for i, j in d.tolist()]
    lines += [f"{i} <-> {j}" for i, j in b.tolist()]
    return "\n".join(lines) + "\n"


def to_json(g: Any) -> str:
    """The JSON form (round-trips through :func:`from_json`)."""
    d, b = g.to_arrays()
    return json.dumps({"n": g.n, "directed": d.tolist(), "bidirected": b.tolist()})
