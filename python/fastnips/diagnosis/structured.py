"""Parsers of the structured sources: DCGM diagnostics / health JSON and ``nvidia-smi -q -x`` XML.

Both take the document as a string and return events, or raise ValueError naming what is wrong. They are safe on
hostile input: documents over :data:`MAX_DOC` characters are refused, XML with an internal DTD subset or an
entity declaration is refused (no entity is ever expanded and no external DTD is fetched: the checks of
``defusedxml``), XML and JSON nesting is capped at :data:`MAX_DEPTH` and XML at :data:`MAX_ELEMENTS` elements,
and every walk is iterative.
"""

from __future__ import annotations

import json
import re
from xml.parsers import expat

from .events import MAX_RAW, Event, bsd_time, check_name

__all__ = ["parse_dcgm_json", "parse_nvidia_smi_xml"]

MAX_DOC = 64 << 20  # characters
MAX_DEPTH = 64
MAX_ELEMENTS = 500_000


def _check_doc(text: str, what: str) -> None:
    if not isinstance(text, str):
        raise TypeError(f"text: expected the {what} document as a str, got {type(text).__name__}")
    if len(text) > MAX_DOC:
        raise ValueError(f"text: the {what} document has {len(text):,} characters, more than the {MAX_DOC:,} accepted")


def _check_time(time: float | None) -> None:
    if time is not None and (isinstance(time, bool) or not isinstance(time, (int, float)) or not time == time
                             or abs(time) > 1e12):
        raise ValueError(f"time: expected finite seconds since the epoch or None, got {time!r}")


# ---------------------------------------------------------------------------------------------------- DCGM JSON

_GPU_KEY = re.compile(r"GPU(?: ID)?:? ?(\d{1,4})$")
_BAD = {"fail": ("dcgm_fail", "error"), "failure": ("dcgm_fail", "error"), "warn": ("dcgm_warn", "warning"),
        "warning": ("dcgm_warn", "warning")}


def _load_json(text: str) -> object:
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("text: the JSON document is nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"text: not a JSON document ({exc})") from None


def _gpu_ids(result: dict) -> list[str]:
    for key in ("gpu_ids", "gpu_id", "entity_id"):
        v = result.get(key)
        if isinstance(v, (int, str)) and not isinstance(v, bool):
            return [s.strip() for s in str(v).split(",") if s.strip().isdigit()][:64] or [""]
    return [""]


def _warning_text(result: dict) -> str:
    parts = []
    for w in result.get("warnings", []) if isinstance(result.get("warnings"), list) else []:
        if isinstance(w, dict):
            eid = w.get("error_id")
            parts.append(f"[{eid}] {w.get('warning', '')}" if eid is not None else str(w.get("warning", "")))
        elif isinstance(w, str):
            parts.append(w)
    return "; ".join(parts)


def _diag_events(doc: dict, node: str, t: float) -> list[Event]:
    out = []
    for cat in doc.get("test_categories", []) if isinstance(doc.get("test_categories"), list) else []:
        tests = cat.get("tests") if isinstance(cat, dict) else None
        for test in tests if isinstance(tests, list) else []:
            if not isinstance(test, dict) or not isinstance(test.get("name"), str):
                continue
            results = test.get("results") if isinstance(test.get("results"), list) else []
            for r in results:
                status = r.get("status") if isinstance(r, dict) else None
                hit = _BAD.get(status.lower()) if isinstance(status, str) else None
                if hit is None:
                    continue
                for gid in _gpu_ids(r):
                    raw = f"dcgm diag {test['name']}: {status} gpu {gid}: {_warning_text(r)}"[:MAX_RAW]
                    out.append(Event(t, node, "dcgm", f"gpu{gid}" if gid else "", hit[0], test["name"][:64],
                                     hit[1], raw))
    return out


def _health_events(doc: object, node: str, t: float) -> list[Event]:
    """Subsystems marked Warning / Failure under a ``GPU ID: n`` key, found by an iterative, depth-capped walk."""
    out = []
    stack = [(doc, "", "", 0)]
    while stack:
        obj, key, gpu, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ValueError(f"text: the DCGM JSON document is nested deeper than {MAX_DEPTH}")
        if isinstance(obj, dict):
            m = _GPU_KEY.match(key)
            gpu = m[1] if m else gpu
            v = obj.get("value")
            if gpu and isinstance(v, str) and v.lower() in _BAD and key not in ("Health", "Overall Health", ""):
                sev = "error" if v.lower().startswith("fail") else "warning"
                msg = obj.get("message") if isinstance(obj.get("message"), str) else ""
                out.append(Event(t, node, "dcgm", f"gpu{gpu}", "dcgm_health", key[:64], sev,
                                 f"dcgm health gpu {gpu} {key}: {v} {msg}"[:MAX_RAW]))
            stack.extend((val, str(k), gpu, depth + 1) for k, val in reversed(list(obj.items())))
        elif isinstance(obj, list):
            stack.extend((val, key, gpu, depth + 1) for val in reversed(obj))
    return out


def parse_dcgm_json(text: str, node: str = "", *, time: float | None = None) -> list[Event]:
    """Events of a DCGM report in JSON: ``dcgmi diag -j`` or ``dcgmi health -c -j``.

    Diagnostics (``{"DCGM GPU Diagnostic" | "DCGM Diagnostic": {"test_categories": [{"category", "tests":
    [{"name", "results": [{"gpu_ids" | "gpu_id" | "entity_id", "status", "warnings": [{"warning",
    "error_id"}]}]}]}]}}``): one event per GPU of every result whose status is Fail (``dcgm_fail``, error) or
    Warn (``dcgm_warn``, warning), ``code`` the test name (``Memory``, ``PCIe``, ``NVLink``, ``Targeted Power``,
    ...). Health: read leniently, one ``dcgm_health`` event per subsystem object ``{"value": "Warning" |
    "Failure"}`` found under a ``GPU ID: n`` key, ``code`` the subsystem's key. Passing and skipped tests give
    no event.

    Parameters
    ----------
    text : str
        The JSON document (at most :data:`MAX_DOC` characters).
    node : str
        The node it was taken on (the reports name none).
    time : float or None
        Seconds since the epoch of the report (the reports carry none); None gives 0.

    Returns
    -------
    list of Event

    Raises
    ------
    ValueError
        If the text is not JSON, is too large or too deeply nested.
    """
    _check_doc(text, "DCGM JSON")
    check_name(node)
    _check_time(time)
    doc = _load_json(text)
    t = float(time or 0.0)
    if isinstance(doc, dict):
        for key in ("DCGM GPU Diagnostic", "DCGM Diagnostic"):
            if isinstance(doc.get(key), dict):
                return _diag_events(doc[key], node, t)
    return _health_events(doc, node, t)


# ------------------------------------------------------------------------------------------------ nvidia-smi XML


class _Refused(Exception):
    pass


def _xml_tree(text: str) -> dict:
    """The document as nested ``{"tag", "attrs", "text", "children"}`` dicts, built by expat with DTD internal
    subsets, entity declarations and external entities refused."""
    root: dict = {"tag": "", "attrs": {}, "text": "", "children": []}
    stack = [root]
    count = 0

    def start(tag, attrs):
        nonlocal count
        count += 1
        if count > MAX_ELEMENTS or len(stack) > MAX_DEPTH:
            raise _Refused(f"more than {MAX_ELEMENTS:,} elements or deeper than {MAX_DEPTH}")
        node = {"tag": tag, "attrs": attrs, "text": "", "children": []}
        stack[-1]["children"].append(node)
        stack.append(node)

    def end(tag):
        stack.pop()

    def chars(data):
        if len(stack[-1]["text"]) < 256:
            stack[-1]["text"] += data[:256]

    def doctype(name, sysid, pubid, has_internal_subset):
        if has_internal_subset:
            raise _Refused("a DTD internal subset")

    def entity(*args):
        raise _Refused("an entity declaration")

    p = expat.ParserCreate()
    p.StartElementHandler, p.EndElementHandler, p.CharacterDataHandler = start, end, chars
    p.StartDoctypeDeclHandler, p.EntityDeclHandler = doctype, entity
    p.UnparsedEntityDeclHandler = entity
    p.ExternalEntityRefHandler = lambda *a: False  # never fetched
    p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    try:
        p.Parse(text, True)
    except _Refused as exc:
        raise ValueError(f"text: refused XML with {exc}") from None
    except (expat.ExpatError, RecursionError, UnicodeError, LookupError) as exc:
        raise ValueError(f"text: not well-formed XML ({exc})") from None
    return root


def _find(node: dict, *path: str) -> dict | None:
    for tag in path:
        node = next((c for c in node["children"] if c["tag"] == tag), None)
        if node is None:
            return None
    return node


def _text(node: dict, *path: str) -> str:
    n = _find(node, *path)
    return n["text"].strip() if n is not None else ""


def _int(s: str) -> int:
    m = re.match(r"\d{1,12}", s)
    return int(m[0]) if m else 0


_SMI_TIME = re.compile(r"[A-Z][a-z]{2} ([A-Z][a-z]{2}) {1,2}(\d{1,2}) (\d\d:\d\d:\d\d) (\d{4})$")


def _bus_id(s: str) -> str:
    m = re.fullmatch(r"0{0,4}([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])", s.strip())
    return m[1].lower() if m else s.strip()[:64]


def _gpu_events(gpu: dict, node: str, t: float) -> list[Event]:
    comp = _bus_id(gpu["attrs"].get("id", "")) or _bus_id(_text(gpu, "pci", "pci_bus_id"))
    found: list[tuple[str, str, str]] = []  # (kind, code, severity)
    unc = _int(_text(gpu, "ecc_errors", "volatile", "dram_uncorrectable")) + \
        _int(_text(gpu, "ecc_errors", "volatile", "double_bit", "total"))
    cor = _int(_text(gpu, "ecc_errors", "volatile", "dram_correctable")) + \
        _int(_text(gpu, "ecc_errors", "volatile", "single_bit", "total"))
    if unc:
        found.append(("smi_ecc_uncorrectable", str(unc), "error"))
    if cor:
        found.append(("smi_ecc_correctable", str(cor), "warning" if cor >= 100 else "info"))
    if _int(_text(gpu, "retired_pages", "double_bit_retirement", "retired_count")):
        found.append(("smi_retired_pages", _text(gpu, "retired_pages", "double_bit_retirement", "retired_count"),
                      "warning"))
    if _text(gpu, "retired_pages", "pending_retirement").lower() == "yes":
        found.append(("smi_retire_pending", "Yes", "error"))
    if _int(_text(gpu, "remapped_rows", "remapped_row_unc")):
        found.append(("smi_remapped_unc", _text(gpu, "remapped_rows", "remapped_row_unc"), "warning"))
    if _text(gpu, "remapped_rows", "remapped_row_pending").lower() == "yes":
        found.append(("smi_remap_pending", "Yes", "error"))
    if _text(gpu, "remapped_rows", "remapped_row_failure").lower() == "yes":
        found.append(("smi_remap_failure", "Yes", "critical"))
    temp, slow = _int(_text(gpu, "temperature", "gpu_temp")), _int(_text(gpu, "temperature",
                                                                         "gpu_temp_slow_threshold"))
    if slow and temp >= slow:
        found.append(("smi_temp_high", f"{temp} C", "error"))
    reasons = _find(gpu, "clocks_event_reasons") or _find(gpu, "clocks_throttle_reasons")
    for child in reasons["children"] if reasons else []:
        if child["text"].strip() == "Active":
            for part, kind, sev in (("thermal", "smi_thermal_slowdown", "error"),
                                    ("power_brake", "smi_power_brake", "error"), ("hw_slowdown", "smi_hw_slowdown",
                                                                                  "warning")):
                if part in child["tag"]:
                    found.append((kind, child["tag"][:64], sev))
                    break
    cur, top = (_int(_text(gpu, "pci", "pci_gpu_link_info", "link_widths", w)) for w in ("current_link_width",
                                                                                      "max_link_width"))
    if cur and top and cur < top:
        found.append(("smi_pcie_degraded", f"x{cur}/x{top}", "warning"))
    if _int(_text(gpu, "pci", "replay_counter")):
        found.append(("smi_pcie_replay", _text(gpu, "pci", "replay_counter"), "warning"))
    return [Event(t, node, "smi", comp, k, code, sev, f"nvidia-smi {comp}: {k} {code}"[:MAX_RAW])
            for k, code, sev in found]


def parse_nvidia_smi_xml(text: str, node: str = "", *, time: float | None = None,
                         default_time: float = 0.0) -> list[Event]:
    """Events of an ``nvidia-smi -q -x`` report: the GPU states a diagnoser acts on.

    Per ``<gpu id=...>`` (``component`` its PCI bus id, e.g. ``0000:3b:00.0``): volatile uncorrectable ECC
    (``smi_ecc_uncorrectable``; ``dram_uncorrectable`` or the older ``double_bit/total``) and correctable ECC
    (``smi_ecc_correctable``, a warning from 100 on), retired pages and pending retirement, remapped rows
    (uncorrectable, pending, failure), temperature at or above the slowdown threshold, active thermal / power-brake
    / hardware slowdown clock-event reasons (``clocks_event_reasons`` or the older ``clocks_throttle_reasons``),
    a PCIe link narrower than its maximum, a non-zero PCIe replay counter.

    Parameters
    ----------
    text : str
        The XML document. A ``<!DOCTYPE nvidia_smi_log SYSTEM "...dtd">`` line (as nvidia-smi writes) is
        accepted and never fetched; internal DTD subsets and entity declarations are refused.
    node : str
    time : float or None
        Seconds since the epoch; None takes the report's ``<timestamp>`` (UTC assumed), else ``default_time``.
    default_time : float
        The time of a report without a readable ``<timestamp>`` when ``time`` is None.

    Returns
    -------
    list of Event

    Raises
    ------
    ValueError
        If the document is not well-formed, too large or too deep, or declares entities.
    """
    _check_doc(text, "nvidia-smi XML")
    check_name(node)
    _check_time(time)
    _check_time(default_time)
    root = _xml_tree(text)
    log = _find(root, "nvidia_smi_log")
    if log is None:
        raise ValueError("text: not an nvidia-smi -q -x report (no <nvidia_smi_log> root)")
    if time is None:
        m = _SMI_TIME.match(_text(log, "timestamp"))
        time = (bsd_time(m[1], m[2], m[3], int(m[4])) if m and 1970 <= int(m[4]) <= 9999 else None)
        time = default_time if time is None else time
    out = []
    for gpu in log["children"]:
        if gpu["tag"] == "gpu":
            out.extend(_gpu_events(gpu, node, float(time)))
    return out
