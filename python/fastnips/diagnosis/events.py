"""The typed event every telemetry parser emits, the time stamps they share, and the bounds that keep any input
finite.

An :class:`Event` is one observation: when (``time``, seconds since the Unix epoch, UTC), where (``node``,
``component``), what (``source``, ``kind``, ``code``, ``severity``) and the line it came from (``raw``, cut to
:data:`MAX_RAW` characters). Events are frozen, hashable and totally ordered by
``(time, node, source, component, kind, code, severity, raw)``, so a stream can be sorted and de-duplicated
deterministically (:func:`merge_events`).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import NamedTuple

__all__ = ["MAX_LINE", "MAX_RAW", "SEVERITIES", "SOURCES", "Event", "merge_events"]

SOURCES = ("xid", "aer", "nccl", "sel", "dcgm", "smi")
SEVERITIES = ("info", "warning", "error", "critical")  # increasing
MAX_LINE = 4096  # characters of one log line that the parsers look at (the rest is ignored)
MAX_RAW = 512  # characters of the line kept in Event.raw

_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
                                       "Nov", "Dec"), 1)}


class Event(NamedTuple):
    """One normalised telemetry observation (a named tuple: immutable, hashable, ordered field by field).

    Attributes
    ----------
    time : float
        Seconds since the Unix epoch (UTC). Stamps without a zone (BSD syslog, ``dmesg -T``, glog, SEL,
        nvidia-smi's ``<timestamp>``) are read as UTC, although those tools print local time: on hosts not kept
        in UTC, shift the events (RFC 3339 stamps with an offset are converted). Stamps without a year (BSD
        syslog, glog) take the ``year`` given to the parser; stamps relative to boot (bare ``dmesg``) are offset
        by ``boot_time``.
    node : str
        Host name (from the syslog header, else the name the caller gives the file).
    source : str
        One of :data:`SOURCES`: ``xid`` (NVIDIA driver ``NVRM: Xid``), ``aer`` (PCIe Advanced Error
        Reporting), ``nccl`` (NCCL warnings, PyTorch watchdog timeouts), ``sel`` (IPMI System Event Log),
        ``dcgm`` (DCGM diagnostics / health JSON), ``smi`` (``nvidia-smi -q -x``).
    kind : str
        What happened, e.g. ``xid``, ``aer_fatal``, ``nccl_timeout``, ``sel_psu``, ``smi_ecc_dbe``.
    component : str
        The part concerned: a PCI address ``0000:3b:00.0``, ``gpu3``, a sensor or link name; ``""`` if unknown.
    code : str
        The source's own code: the Xid number, the AER error name, the SEL event text, a DCGM error id.
    severity : str
        One of :data:`SEVERITIES`.
    raw : str
        The line (or a short rendering of the record) it came from, cut to :data:`MAX_RAW` characters.
    """

    time: float
    node: str
    source: str
    component: str
    kind: str
    code: str
    severity: str
    raw: str

    def to_dict(self) -> dict:
        """The event as a JSON-ready dict (field names as keys)."""
        return self._asdict()


def merge_events(*streams: Iterable[Event]) -> list[Event]:
    """Merge event streams into one sorted list without duplicates.

    Sorting uses the total order of :class:`Event`, so the result does not depend on the order of the streams or
    of the events in them, and ``merge_events(a, a) == merge_events(a)`` (ingestion is idempotent). Two identical
    log lines at the same second are one event: a choice, since they carry no more information than one.

    Parameters
    ----------
    *streams : iterable of Event

    Returns
    -------
    list of Event

    Examples
    --------
    >>> e = Event(1.0, "n1", "xid", "0000:3b:00.0", "xid", "79", "critical", "...")
    >>> merge_events([e], [e]) == [e]
    True
    """
    seen: set[Event] = set()
    for s in streams:
        for e in s:
            if not isinstance(e, Event):
                raise TypeError(f"merge_events: expected Event items, got {type(e).__name__}")
            seen.add(e)
    return sorted(seen)


# ---------------------------------------------------------------------------------------------------- time stamps

_ISO = re.compile(r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(\.\d{1,9})?(Z|[+-]\d\d:?\d\d)?")


@lru_cache(maxsize=8192)  # log lines share their seconds
def _epoch(y: int, mo: int, d: int, h: int, mi: int, s: int) -> float | None:
    if not (1 <= mo <= 12 and 1 <= d <= 31 and h <= 23 and mi <= 59 and s <= 60 and 1970 <= y <= 9999):
        return None
    if d > calendar.monthrange(y, mo)[1]:
        return None
    return float(calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)))


def iso_time(m: re.Match) -> float | None:
    """Seconds since the epoch of an :data:`_ISO` match (None for an impossible date)."""
    t = _iso_base(m[0][:19], m[8] or "")
    if t is not None and m[7]:
        t += float(m[7])
    return t


@lru_cache(maxsize=8192)
def _iso_base(s: str, tz: str) -> float | None:
    t = _epoch(int(s[:4]), int(s[5:7]), int(s[8:10]), int(s[11:13]), int(s[14:16]), int(s[17:19]))
    if t is not None and tz and tz != "Z":
        sign = -1 if tz[0] == "+" else 1
        digits = tz[1:].replace(":", "")
        t += sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    return t


def bsd_time(month: str, day: str, hms: str, year: int) -> float | None:
    """``Dec  2 21:00:01`` in ``year`` (UTC) as seconds since the epoch (None if impossible)."""
    mo = _MONTHS.get(month)
    if mo is None:
        return None
    h, mi, s = hms.split(":")
    return _epoch(year, mo, int(day), int(h), int(mi), int(s))


def glog_time(mmdd: str, hms: str, frac: str | None, year: int) -> float | None:
    """glog's ``E1202 21:10:00.123456`` (month, day, time; no year) as seconds since the epoch."""
    h, mi, s = hms.split(":")
    t = _epoch(year, int(mmdd[:2]), int(mmdd[2:]), int(h), int(mi), int(s))
    if t is not None and frac:
        t += float("0" + frac[:10])
    return t


def check_year(year: int, boot_time: float) -> None:
    """Refuse a year or boot time the stamps cannot use (before any parsing)."""
    if isinstance(year, bool) or not isinstance(year, int) or not 1970 <= year <= 9999:
        raise ValueError(f"year: expected an int in [1970, 9999], got {year!r}")
    if isinstance(boot_time, bool) or not isinstance(boot_time, (int, float)) or not boot_time == boot_time \
            or abs(boot_time) > 1e12:
        raise ValueError(f"boot_time: expected finite seconds since the epoch, got {boot_time!r}")


def check_name(name: str, what: str = "node") -> str:
    """A node or file name as given (a ``str``), or a ValueError naming the argument."""
    if not isinstance(name, str):
        raise TypeError(f"{what}: expected a str, got {type(name).__name__}")
    return name[:255]
