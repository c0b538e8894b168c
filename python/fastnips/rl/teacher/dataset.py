r"""SFT datasets of teacher supervision: rows that trl's SFTTrainer and a plain torch loop both read.

A row is ``{"prompt": str, "completion": str, "metadata": {...}}`` -- trl's prompt-completion format (the
loss falls on the completion only). ``metadata`` holds ``construction`` (which builder made it), ``origin``
(who brought the environment to the row's state: ``"reset"``, the student ``"student"``, or the teacher
``"teacher"`` inside a continuation), ``teacher_cost`` (this action's charge), ``task``, ``episode`` and
``step``.

The JSONL file starts with one header line ``{"format": "fastnips.teacher.sft/1", "n_rows", "sha256",
"info"}``; the digest covers every following line byte for byte, so :meth:`SFTDataset.from_jsonl` refuses a
truncated, edited or reordered file.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["FORMAT", "ORIGINS", "SFTDataset"]

FORMAT = "fastnips.teacher.sft/1"
ORIGINS = ("reset", "student", "teacher")
_META_KEYS = ("construction", "origin", "teacher_cost")


def _check_row(row: object, i: int) -> dict:
    if not isinstance(row, dict) or not isinstance(row.get("prompt"), str) or not isinstance(
            row.get("completion"), str) or not isinstance(row.get("metadata"), dict):
        raise ValueError(f"row {i}: expected {{'prompt': str, 'completion': str, 'metadata': dict}}, got {row!r:.200}")
    meta = row["metadata"]
    missing = [k for k in _META_KEYS if k not in meta]
    if missing:
        raise ValueError(f"row {i}: metadata lacks {missing}")
    if meta["origin"] not in ORIGINS:
        raise ValueError(f"row {i}: metadata origin must be one of {ORIGINS}, got {meta['origin']!r}")
    return row


class SFTDataset(Sequence):
    """A list of SFT rows with the build's facts (``info``: construction, budget, spent, unit, counters).

    Parameters
    ----------
    rows : sequence of dict
        ``{"prompt", "completion", "metadata"}`` rows (checked).
    info : dict, optional
        Plain JSON-able facts of the build.

    Examples
    --------
    >>> ds = SFTDataset([{"prompt": "p", "completion": "c",
    ...                   "metadata": {"construction": "bc", "origin": "reset", "teacher_cost": 1}}])
    >>> len(ds), ds.teacher_cost
    (1, 1)
    """

    def __init__(self, rows: Sequence[dict] = (), info: dict | None = None):
        self.rows = [_check_row(r, i) for i, r in enumerate(rows)]
        self.info = dict(info or {})

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i):  # int or slice, as a list
        return self.rows[i]

    def __iter__(self) -> Iterator[dict]:
        return iter(self.rows)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SFTDataset) and self.rows == other.rows and self.info == other.info

    def __repr__(self) -> str:
        c = self.info.get("construction", "?")
        return f"SFTDataset({len(self.rows)} rows, construction={c!r}, teacher_cost={self.teacher_cost})"

    @property
    def teacher_cost(self) -> int:
        """The summed ``teacher_cost`` of the kept rows (the ledger's ``spent`` also counts filtered ones)."""
        return int(sum(r["metadata"]["teacher_cost"] for r in self.rows))

    def texts(self) -> list[str]:
        """``prompt + completion`` per row, for a plain language-modelling loop."""
        return [r["prompt"] + r["completion"] for r in self.rows]

    def to_hf_dataset(self):
        """A ``datasets.Dataset`` with columns prompt, completion, metadata (needs ``pip install datasets``)."""
        from ... import _optional

        datasets = _optional.require("datasets")
        return datasets.Dataset.from_list([{"prompt": r["prompt"], "completion": r["completion"],
                                            "metadata": dict(r["metadata"])} for r in self.rows])

    def to_jsonl(self, path: str | os.PathLike) -> Path:
        """Write the header line and one JSON row per line; return the path."""
        lines = [json.dumps(r, sort_keys=True, ensure_ascii=False) for r in self.rows]
        digest = hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()
        header = json.dumps({"format": FORMAT, "n_rows": len(lines), "sha256": digest, "info": self.info},
                            sort_keys=True, ensure_ascii=False)
        path = Path(path)
        path.write_text("\n".join([header, *lines]) + "\n", encoding="utf-8")
        return path

    @classmethod
    def from_jsonl(cls, path: str | os.PathLike) -> SFTDataset:
        """Read a file written by :meth:`to_jsonl`; raise ValueError if its header, count or digest disagree."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}: not a UTF-8 JSONL file ({e})") from None
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        try:
            header = json.loads(lines[0]) if lines else None
        except json.JSONDecodeError:
            header = None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise ValueError(f"{path}: not a fastnips teacher SFT file (first line must be a {FORMAT!r} header)")
        body = lines[1:]
        if len(body) != header.get("n_rows"):
            raise ValueError(f"{path}: header says {header.get('n_rows')} rows, the file has {len(body)} "
                             "(truncated or appended to)")
        if hashlib.sha256("\n".join(body).encode("utf-8")).hexdigest() != header.get("sha256"):
            raise ValueError(f"{path}: the rows do not match the header's sha256 (the file was modified)")
        return cls([json.loads(line) for line in body], header.get("info"))
