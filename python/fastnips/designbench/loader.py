"""Reader for a local copy of the GDB dataset in its published layout (nothing is downloaded).

The bundle lica-gdb's ``scripts/download_data.py`` unpacks (``gdb-dataset/``)::

    lica-data/
        metadata.csv                               one row per layout (optional here)
        layouts/<template_id>/<layout_id>.json     the layout JSON (components in paint order)
        images/<template_id>/<layout_id>.png       renders (paths only; not read)
    benchmarks/
        layout/<TaskFolder>/samples.csv            sample_id, image_path, prompt, expected_output
        template/template-<k>.json                 pairs / queries / problems, with a layout_index

Layouts in one ``<template_id>`` folder are sibling variants of one template. A missing piece raises
``FileNotFoundError`` naming the path that was expected and what it should contain.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

from .layout import Layout

__all__ = ["LAYOUT_TASK_FOLDERS", "GDBDataset", "load_gdb", "load_task"]

# lica-gdb's data_subpath of its CSV-based layout tasks (``benchmarks/<path>/samples.csv``)
LAYOUT_TASK_FOLDERS = {"layout-4": "layout/AspectRatioClassification", "layout-5": "layout/ComponentCount",
                       "layout-6": "layout/ComponentClassification", "layout-7": "layout/ComponentDetection"}
_TEMPLATE_TASKS = ("template-1", "template-2", "template-3", "template-4", "template-5")


def _core(root: Path) -> Path:
    """The ``lica-data`` folder of a dataset root (the root itself may be it)."""
    if (root / "lica-data").is_dir():
        return root / "lica-data"
    if (root / "layouts").is_dir():
        return root
    raise FileNotFoundError(
        f"GDB dataset root {root}: missing {root / 'lica-data' / 'layouts'} (expected "
        "<root>/lica-data/layouts/<template_id>/<layout_id>.json, the published layout of lica-gdb's "
        "gdb-dataset; pass the folder that holds lica-data/)")


@dataclass
class GDBDataset:
    """The layouts of a local GDB copy, with their sibling groups.

    Attributes
    ----------
    root : Path
        The ``lica-data`` folder.
    layouts : dict
        ``layout_id -> Layout`` (``template_id`` set from the folder).
    templates : dict
        ``template_id -> [layout_id, ...]``, sorted: the sibling groups.
    metadata : list of dict
        Rows of ``metadata.csv`` (empty when the file is absent).
    """

    root: Path
    layouts: dict = field(default_factory=dict)
    templates: dict = field(default_factory=dict)
    metadata: list = field(default_factory=list)

    def siblings(self, layout_id: str) -> list[str]:
        """The other layouts of ``layout_id``'s template."""
        lay = self.layouts.get(layout_id)
        if lay is None:
            raise KeyError(f"no layout {layout_id!r} in {self.root}")
        return [x for x in self.templates[lay.template_id] if x != layout_id]

    def image_path(self, layout_id: str) -> Path:
        """Where the render of ``layout_id`` is expected (``images/<template_id>/<layout_id>.png``)."""
        return self.root / "images" / self.layouts[layout_id].template_id / f"{layout_id}.png"


def load_gdb(root: str | Path, *, limit: int | None = None) -> GDBDataset:
    """Read every layout of a local GDB copy (module docstring).

    Parameters
    ----------
    root : str or Path
        The dataset folder (holding ``lica-data/``) or the ``lica-data`` folder itself.
    limit : int, optional
        Read at most this many layouts (in sorted path order).

    Returns
    -------
    GDBDataset

    Raises
    ------
    FileNotFoundError
        When the folder or its ``layouts/`` tree is missing or holds no layout JSON.
    ValueError
        When a layout file is not valid JSON or not a layout, or its id repeats one of another template (the files
        are named); a bad ``limit``.

    Examples
    --------
    >>> load_gdb("/nonexistent")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    FileNotFoundError: GDB dataset root /nonexistent: missing ...
    """
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive integer or None, got {limit!r}")
    base = Path(root).expanduser()
    if not base.is_dir():
        raise FileNotFoundError(f"GDB dataset root {base}: missing (no such folder)")
    core = _core(base)
    files = sorted((core / "layouts").glob("*/*.json"))
    if not files:
        raise FileNotFoundError(f"GDB dataset root {base}: {core / 'layouts'} holds no <template_id>/<layout_id>.json")
    ds = GDBDataset(root=core)
    for f in files[:limit]:
        try:
            obj = json.loads(f.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{f}: not valid JSON ({e})") from None
        try:
            lay = Layout.from_gdb(obj, layout_id=f.stem, template_id=f.parent.name)
        except ValueError as e:
            raise ValueError(f"{f}: {e}") from None
        if f.stem in ds.layouts:  # layout ids key the dataset: a repeat would silently replace a layout
            first = core / "layouts" / ds.layouts[f.stem].template_id / f.name
            raise ValueError(f"{f}: layout id {f.stem!r} also in {first} (layout ids must be unique across "
                             "templates)")
        ds.layouts[f.stem] = lay
        ds.templates.setdefault(f.parent.name, []).append(f.stem)
    meta = core / "metadata.csv"
    if meta.is_file():
        with open(meta, encoding="utf-8", newline="") as fh:
            ds.metadata = list(csv.DictReader(fh))
    return ds


def _expected(raw: str) -> object:
    raw = raw.strip()
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, TypeError):
        pass
    try:
        return int(raw)
    except ValueError:
        return raw


def load_task(root: str | Path, task: str) -> list[dict]:
    """The evaluation samples of one lica-gdb task from a local copy.

    Parameters
    ----------
    root : str or Path
        The dataset folder (holding ``benchmarks/``).
    task : str
        ``"layout-4"`` ... ``"layout-7"`` (CSV tasks: aspect ratio, count, type, detection) or
        ``"template-1"`` ... ``"template-5"`` (JSON tasks).

    Returns
    -------
    list of dict
        CSV tasks: ``sample_id``, ``image_path`` (resolved against ``root``), ``prompt``, ``ground_truth``
        (JSON, int or text). JSON tasks: the entries of ``pairs`` / ``queries`` / ``problems``, each with
        ``layout_index`` and ``data_root`` of the file added.

    Raises
    ------
    ValueError
        For a task this reader does not know.
    FileNotFoundError
        Naming the file the task needs.
    """
    base = Path(root).expanduser()
    if task in LAYOUT_TASK_FOLDERS:
        path = base / "benchmarks" / LAYOUT_TASK_FOLDERS[task] / "samples.csv"
        if not path.is_file():
            raise FileNotFoundError(f"GDB task {task}: missing {path} (columns sample_id, image_path, prompt, "
                                    "expected_output)")
        with open(path, encoding="utf-8", newline="") as fh:
            rows = list(csv.DictReader(fh))
        need = {"sample_id", "image_path", "prompt", "expected_output"}
        if rows and not need <= set(rows[0]):
            raise ValueError(f"{path}: missing columns {sorted(need - set(rows[0]))}")
        return [{"sample_id": r["sample_id"], "image_path": str(base / r["image_path"]), "prompt": r["prompt"],
                 "ground_truth": _expected(r["expected_output"])} for r in rows]
    if task in _TEMPLATE_TASKS:
        path = base / "benchmarks" / "template" / f"{task}.json"
        if not path.is_file():
            raise FileNotFoundError(f"GDB task {task}: missing {path}")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{path}: not valid JSON ({e})") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a JSON object")
        key = next((k for k in ("pairs", "queries", "problems", "layouts") if k in data), None)
        if key is None:
            raise ValueError(f"{path}: expected a 'pairs', 'queries' or 'problems' list")
        items = data[key] if isinstance(data[key], list) else [data]
        extra = {"layout_index": data.get("layout_index", {}), "data_root": data.get("data_root")}
        return [{**item, **extra} for item in items]
    raise ValueError(f"task must be one of {sorted(LAYOUT_TASK_FOLDERS) + list(_TEMPLATE_TASKS)}, got {task!r}")
