"""Ingestion: any telemetry text or file (format detected from its content) into one sorted event stream.

Files are read in bounded chunks cut at line ends (:data:`CHUNK` characters), so a log of any size needs memory
for one chunk plus its events; structured documents are refused above
:data:`~fastnips.diagnosis.structured.MAX_DOC`. Bytes that are not UTF-8 are replaced, never fatal; a leading
UTF-8 byte-order mark is dropped (it would hide the first line's time stamp and make a JSON report unreadable).
"""

from __future__ import annotations

import os
import re
import time as _time
from collections.abc import Iterable
from pathlib import Path

from .events import Event, check_name, check_year, merge_events
from .structured import MAX_DOC, parse_dcgm_json, parse_nvidia_smi_xml
from .text import _SEL, _stamp, parse_log_text, parse_sel_text

__all__ = ["FORMATS", "detect_format", "ingest", "ingest_text"]

FORMATS = ("log", "sel", "dcgm", "smi")
CHUNK = 8 << 20  # characters of a text log parsed at once
MAX_FILES = 100_000
YEAR_SLACK = 2 * 86400.0  # seconds a year-less stamp may lie after its file's modification time (clock skew)


def detect_format(head: str) -> str:
    """The format of a document from its first characters: ``dcgm`` (a JSON object that names DCGM or health),
    ``smi`` (an XML declaration, DOCTYPE or ``<nvidia_smi_log>``), ``sel`` (the first non-blank line is an
    ``ipmitool sel`` record) or ``log`` (anything else: kernel, syslog, dmesg, NCCL).

    Examples
    --------
    >>> detect_format('<?xml version="1.0" ?>\\n<nvidia_smi_log>')
    'smi'
    """
    if not isinstance(head, str):
        raise TypeError(f"head: expected a str, got {type(head).__name__}")
    s = head.lstrip("\ufeff \t\r\n")
    # DCGM reports are JSON objects naming DCGM or health ("[" starts dmesg and glog lines; a journal exported as
    # JSON lines is read as a log); nvidia-smi reports are XML ("<4>[ 12.5] ..." is a raw kernel-message line).
    if s[:1] == "{" and ("DCGM" in s or "Health" in s):
        return "dcgm"
    if s.startswith(("<?xml", "<!DOCTYPE", "<nvidia_smi_log")):
        return "smi"
    first = s.split("\n", 1)[0][:4096].rstrip("\r")
    if _SEL.match(first) or re.match(r"[ \t]*[0-9a-fA-F]{1,8} \| Pre-Init", first):
        return "sel"
    return "log"


def ingest_text(text: str, node: str = "", *, fmt: str | None = None, year: int = 2000, boot_time: float = 0.0,
                time: float | None = None) -> list[Event]:
    """The sorted, de-duplicated events of one document.

    Parameters
    ----------
    text : str
    node : str
        Node name for records that carry none.
    fmt : {"log", "sel", "dcgm", "smi"} or None
        The format; None detects it (:func:`detect_format`).
    year, boot_time : int, float
        As in :func:`~fastnips.diagnosis.parse_log_text` (text logs only).
    time : float or None
        Report time of the structured formats (``dcgm``, ``smi``), which may carry none.

    Returns
    -------
    list of Event

    Examples
    --------
    >>> ev = ingest_text("[  12.5] NVRM: Xid (PCI:0000:3b:00): 48, pid=7, DBE detected", "n1", boot_time=1e9)
    >>> ev[0].time, ev[0].code
    (1000000012.5, '48')
    """
    if not isinstance(text, str):
        raise TypeError(f"text: expected a str, got {type(text).__name__}")
    check_name(node)
    check_year(year, boot_time)
    text = text[1:] if text.startswith("\ufeff") else text  # a byte-order mark is not part of the first line
    if fmt is None:
        fmt = detect_format(text[:65536])
    if fmt == "log":
        return merge_events(parse_log_text(text, node, year=year, boot_time=boot_time))
    if fmt == "sel":
        return merge_events(parse_sel_text(text, node))
    if fmt == "dcgm":
        return merge_events(parse_dcgm_json(text, node, time=time))
    if fmt == "smi":
        return merge_events(parse_nvidia_smi_xml(text, node, time=time))
    raise ValueError(f"fmt: expected one of {', '.join(FORMATS)} or None, got {fmt!r}")


def _chunks(path: Path) -> Iterable[str]:
    with open(path, encoding="utf-8-sig", errors="replace", newline="") as f:
        carry = ""
        while True:
            block = f.read(CHUNK)
            if not block:
                break
            block = carry + block
            cut = block.rfind("\n")
            if cut < 0 and len(block) < 4 * CHUNK:
                carry = block
                continue
            cut = len(block) - 1 if cut < 0 else cut  # a line over 4 chunks long: parse its head, as MAX_LINE does
            yield block[:cut + 1]
            carry = block[cut + 1:]
        if carry:
            yield carry


def _node_of(path: Path, root: Path) -> str:
    rel = path.relative_to(root)
    return rel.parts[0] if len(rel.parts) > 1 else path.name.split(".", 1)[0]


def _file_year(path: Path) -> tuple[int, float]:
    """(UTC year of the file's modification time, clamped to the stamps' range; the time itself)."""
    mtime = path.stat().st_mtime
    year = _time.gmtime(min(max(mtime, 0.0), 253402300799.0)).tm_year
    return min(max(year, 1970), 9999), mtime


def _year_back(events: list[Event], year: int, mtime: float, boot_time: float) -> list[Event]:
    """Year-less stamps (BSD syslog, glog) that would lie after the file was last written belong to the year
    before (a log of December read in January); stamps that carry their year are left as they are."""
    out = []
    for e in events:
        if e.time > mtime + YEAR_SLACK and year > 1970:
            t = _stamp(e.raw, year - 1, boot_time)[0]
            if e.time - 367 * 86400.0 <= t < e.time:  # the same stamp a year earlier (not Feb 29 -> boot_time)
                e = e._replace(time=t)
        out.append(e)
    return out


def _ingest_file(path: Path, node: str, year: int | None, boot_time: float) -> list[Event]:
    with open(path, encoding="utf-8-sig", errors="replace", newline="") as f:
        head = f.read(65536)
    fmt = detect_format(head)
    if fmt in ("dcgm", "smi"):
        size = path.stat().st_size
        if size > 4 * MAX_DOC:
            raise ValueError(f"{path}: {size:,} bytes, too large for a {fmt} report")
        text = path.read_text(encoding="utf-8-sig", errors="replace")
        mtime = path.stat().st_mtime
        try:
            if fmt == "smi":  # its own <timestamp> first, the file's time only where it has none
                return parse_nvidia_smi_xml(text, node, default_time=mtime)
            return parse_dcgm_json(text, node, time=mtime)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
    guess = year is None and fmt == "log"
    if guess:
        year, mtime = _file_year(path)
    parse = parse_sel_text if fmt == "sel" else (
        lambda chunk, n: parse_log_text(chunk, n, year=year, boot_time=boot_time))
    out: list[Event] = []
    for chunk in _chunks(path):
        out.extend(parse(chunk, node))
    return _year_back(out, year, mtime, boot_time) if guess else out


def ingest(path: str | os.PathLike, *, node: str | None = None, year: int | None = None,
           boot_time: float = 0.0) -> list[Event]:
    """The sorted, de-duplicated events of a file or of every file under a folder.

    Each file's format is detected from its content (:func:`detect_format`). The node of a record that names
    none is ``node`` if given, else, under a folder, the first folder below it (``LOGDIR/<node>/kern.log``) or
    the file name up to its first dot (``LOGDIR/<node>.sel``). DCGM reports (which carry no time) and nvidia-smi
    reports without a ``<timestamp>`` take the file's modification time. Files and folders whose name starts with
    a dot are skipped.

    Parameters
    ----------
    path : str or path-like
        A file or a folder.
    node : str or None
    year : int or None
        The year of stamps that carry none (BSD syslog, glog). None (the default) takes, per text log, the UTC year
        of the file's modification time, and the year before for a stamp that would lie more than
        :data:`YEAR_SLACK` after it (a December log read in January): so syslog lines and the dated DCGM /
        nvidia-smi reports of one incident land in the same window. A fixed year (the parsers' 2000) would put
        them decades apart.
    boot_time : float
        As in :func:`~fastnips.diagnosis.parse_log_text`.

    Returns
    -------
    list of Event
        Sorted and de-duplicated: ingesting the same files twice, or in any order, gives the same list (with
        ``year=None`` the times of year-less stamps follow the files' modification times).

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If a structured report is malformed (the message names the file).
    """
    if node is not None:
        check_name(node)
    check_year(2000 if year is None else year, boot_time)
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"path: {str(path)!r} does not exist")
    if root.is_file():
        return merge_events(_ingest_file(root, node or root.name.split(".", 1)[0], year, boot_time))
    files = sorted(p for p in root.rglob("*") if p.is_file()
                   and not any(part.startswith(".") for part in p.relative_to(root).parts))
    if len(files) > MAX_FILES:
        raise ValueError(f"path: {len(files):,} files under {str(path)!r}, more than the {MAX_FILES:,} accepted")
    streams = [_ingest_file(p, node or _node_of(p, root), year, boot_time) for p in files]
    return merge_events(*streams)
