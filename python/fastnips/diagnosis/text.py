"""Line parsers of the text sources: kernel log (NVIDIA Xid, PCIe AER), NCCL / PyTorch watchdog, IPMI SEL.

Two scanning strategies give the same events (tested): :func:`parse_log_text` looks for the literal anchors of
every source over the whole text (``str.find``: the uninteresting lines are skipped at C speed) and parses only
the lines it hits; :func:`parse_log_lines` is the straightforward loop that tries each source's
regex on every line (the reference, and the baseline of ``bench/diagnosis/bench_ingest.py``).

Formats (written from the documentation, see the golden tests):

* Xid, NVIDIA driver: ``NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.``
  (older drivers: ``NVRM: Xid (0000:3b:00): 48, ...``).
* AER, Linux ``Documentation/PCI/pcieaer-howto.rst``: ``<dev>: PCIe Bus Error: severity=Corrected,
  type=Physical Layer, (Receiver ID)`` and the status-bit lines ``<dev>:    [ 0] RxErr``.
* NCCL: ``host:pid:tid [dev] NCCL WARN <msg>``, the ``ncclRemoteError`` / ``ncclSystemError`` results, and
  PyTorch's ``Watchdog caught collective operation timeout: WorkNCCL(SeqNum=.., OpType=ALLREDUCE, ..)``.
* Line prefixes: RFC 3339 (``2026-12-02T21:00:01.5+00:00 host kernel:``, also after an RFC 5424 / forwarded
  syslog priority ``<34>1 ``), BSD syslog (``Dec  2 21:00:01 host kernel:``, no year: ``year``; also after
  ``<34>``), ``dmesg -T`` (``[Wed Dec  2 21:00:01 2026]``), bare ``dmesg`` (``[ 12.5]``,
  seconds since boot: ``boot_time``), glog (``E1202 21:10:00.123456``, no year). A line with no stamp gets
  ``boot_time``.
* SEL, ``ipmitool sel elist``: ``   1 | 12/02/2026 | 21:00:01 | Power Supply PSU1 | Power Supply AC lost |
  Asserted``. Records stamped ``Pre-Init`` (before the BMC clock was set) are skipped: their time is unknown.

Any input is accepted: lines are cut to :data:`~fastnips.diagnosis.events.MAX_LINE` characters, every regex is
linear (no nested repetition) and a line that matches no format is ignored.
"""

from __future__ import annotations

import re

from .events import _ISO as ISO
from .events import MAX_LINE, MAX_RAW, Event, bsd_time, check_name, check_year, glog_time, iso_time
from .xid import xid_info

__all__ = ["parse_log_lines", "parse_log_text", "parse_sel_text"]

_BDF = r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}"
AER_CORRECTED = ("RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr", "CorrIntErr", "HeaderOF")
AER_UNCORRECTED = ("Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt", "RxOF", "MalfTLP",
                   "ECRC", "UnsupReq", "ACSViol", "UncorrIntErr", "BlockedTLP", "AtomicOpBlocked", "TLPBlockedErr",
                   "PoisonTLPBlocked", "SurpriseDown")
_AER_NAMES = "|".join(AER_CORRECTED + AER_UNCORRECTED)

# One regex per source (the reference loop tries them in this order; the first that matches wins).
XID_RE = re.compile(r"NVRM: Xid \((?:PCI:)?(" + _BDF + r")(?:\.([0-7]))?\): (\d{1,5})\b,? ?([^\n]{0,512})")
AER_RE = re.compile(r"(" + _BDF + r")\.([0-7]): (?:AER: )?PCIe Bus Error: severity=(Corrected|Uncorrect(?:ed|able) "
                    r"\((?:Non-)?Fatal\)), type=([A-Za-z ]{1,40})")
AER_BIT_RE = re.compile(r"(" + _BDF + r")\.([0-7]):[ \t]+\[ ?(\d{1,2})\] (" + _AER_NAMES + r")\b")
NCCL_RE = re.compile(r"(?:([\w.-]{1,64}):\d{1,10}:\d{1,10} \[(\d{1,3})\] )?NCCL WARN ([^\n]{0,512})"
                     r"|(Watchdog caught collective operation timeout)[^\n]{0,200}?OpType=(\w{1,32})"
                     r"|(watchdog got stuck) for (\d{1,9}) seconds"
                     r"|\b(ncclRemoteError|ncclSystemError|ncclInternalError|ncclUnhandledCudaError)\b")
# The fast path runs each rule only on lines holding a literal its regex needs (a C-speed `in` test): XID_RE
# needs "NVRM: Xid", AER_RE "PCIe Bus Error", AER_BIT_RE "] ", NCCL_RE "NCCL WARN", "atchdog" or "nccl".
_RULES = (XID_RE, AER_RE, AER_BIT_RE, NCCL_RE)
# The fast scanner's candidates: lines holding one of these literals (found by str.find, at memchr speed) or an AER
# status-bit anchor; a superset of the lines any rule can match, since each rule's regex needs one of them.
_FIND = ("NVRM: Xid", "PCIe Bus Error", "NCCL WARN", "atchdog", "nccl")
_AER_BIT_KEY = re.compile(r"\] (?:" + _AER_NAMES + r")")

_PREFIX = re.compile(r"(?:(?P<mon>[A-Z][a-z]{2}) {1,2}(?P<day>\d{1,2}) (?P<hms>\d\d:\d\d:\d\d) (?P<host>[\w.-]{1,64})"
                     r"|\[(?:[A-Z][a-z]{2}) (?P<tmon>[A-Z][a-z]{2}) {1,2}(?P<tday>\d{1,2}) (?P<thms>\d\d:\d\d:\d\d) "
                     r"(?P<tyear>\d{4})\])")
_ISO_HOST = re.compile(r"[ \t]+([\w.-]{1,64})")
_PRI = re.compile(r"<\d{1,3}>(?:1 )?(?=\d{4}-|[A-Z][a-z]{2} )")
_UPTIME = re.compile(r"\[ {0,12}(\d{1,10}\.\d{1,9})\]")
_GLOG = re.compile(r"\b[EWIF](\d{4}) (\d\d:\d\d:\d\d)(\.\d{1,9})?\b")
_FATAL = re.compile(r"(?<!non-)(?<!non )\bfatal", re.IGNORECASE)
_RANK = re.compile(r"\[(?:PG \d{1,6} )?Rank (\d{1,6})\]")


def _stamp(line: str, year: int, boot_time: float) -> tuple[float, str]:
    """(seconds since the epoch, host or "") of the line's prefix."""
    pri = _PRI.match(line)  # RFC 5424 / forwarded syslog: "<34>1 2026-12-02T..." or "<34>Dec  2 ..."
    if pri:
        line = line[pri.end():]
    m = ISO.match(line)
    if m:
        t = iso_time(m)
        h = _ISO_HOST.match(line, m.end())
        if t is not None:
            return t, h[1] if h else ""
    m = _PREFIX.match(line)
    if m:
        if m["mon"]:
            t = bsd_time(m["mon"], m["day"], m["hms"], year)
            if t is not None:
                return t, m["host"]
        else:
            t = bsd_time(m["tmon"], m["tday"], m["thms"], int(m["tyear"]))
            if t is not None:
                return t, ""
    m = _GLOG.search(line, 0, 64)
    if m:
        t = glog_time(m[1], m[2], m[3], year)
        if t is not None:
            return t, ""
    m = _UPTIME.search(line, 0, 96)
    if m:
        return boot_time + float(m[1]), ""
    return boot_time, ""


def _event_from(rule: int, m: re.Match, line: str, node: str, year: int, boot_time: float) -> Event:
    t, host = _stamp(line, year, boot_time)
    raw = line[:MAX_RAW]
    if rule == 0:  # Xid
        code = int(m[3])
        info = xid_info(code)
        comp = f"{m[1].lower()}.{m[2] or '0'}"
        sev = info.severity
        if code == 74 and not _FATAL.search(m[4]):  # "non-fatal" / "nonfatal" is not fatal
            sev = "error"
        return Event(t, host or node, "xid", comp, "xid", str(code), sev, raw)
    if rule == 1:  # AER summary line
        sev_text = m[3]
        sev, kind = (("warning", "aer_corrected") if sev_text == "Corrected" else
                     ("error", "aer_nonfatal") if "Non-Fatal" in sev_text else ("critical", "aer_fatal"))
        return Event(t, host or node, "aer", f"{m[1].lower()}.{m[2]}", kind, m[4].strip(), sev, raw)
    if rule == 2:  # AER status bit
        corrected = m[4] in AER_CORRECTED
        return Event(t, host or node, "aer", f"{m[1].lower()}.{m[2]}", "aer_bit", m[4],
                     "info" if corrected else "error", raw)
    # NCCL
    if m[3] is not None:
        msg = m[3]
        kind = "nccl_net" if "NET/" in msg else "nccl_cuda" if "Cuda failure" in msg or "CUDA" in msg else "nccl_warn"
        code = msg.split(" ", 1)[0][:40]
        if kind == "nccl_net":
            st = re.search(r"(IBV_WC_\w{1,40})|error (\d{1,4})", msg)
            code = (st[1] or f"error {st[2]}") if st else code
        return Event(t, host or m[1] or node, "nccl", f"gpu{m[2]}" if m[2] else "", kind, code, "error", raw)
    rank = _RANK.search(line)
    comp = f"rank{rank[1]}" if rank else ""
    if m[4] is not None:
        return Event(t, host or node, "nccl", comp, "nccl_timeout", m[5], "error", raw)
    if m[6] is not None:
        return Event(t, host or node, "nccl", comp, "nccl_hang", "watchdog_stuck", "critical", raw)
    return Event(t, host or node, "nccl", comp, "nccl_error", m[8], "error", raw)


def _parse_line(line: str, node: str, year: int, boot_time: float) -> Event | None:
    """The fast path's line parser: each rule runs only where its literal is present."""
    if line.endswith("\r"):
        line = line[:-1]
    m = XID_RE.search(line) if "NVRM: Xid" in line else None  # the order of _RULES, spelled out for speed
    if m:
        return _event_from(0, m, line, node, year, boot_time)
    m = AER_RE.search(line) if "PCIe Bus Error" in line else None
    if m:
        return _event_from(1, m, line, node, year, boot_time)
    m = AER_BIT_RE.search(line) if "] " in line else None
    if m:
        return _event_from(2, m, line, node, year, boot_time)
    m = NCCL_RE.search(line) if ("NCCL WARN" in line or "atchdog" in line or "nccl" in line) else None
    return _event_from(3, m, line, node, year, boot_time) if m else None


def _candidate_starts(text: str) -> list[int]:
    """Start offsets of the lines that hold a literal of :data:`_FIND` or an AER status-bit anchor, sorted."""
    starts = set()
    find, rfind = text.find, text.rfind
    for lit in _FIND:
        i = find(lit)
        while i >= 0:
            starts.add(rfind("\n", 0, i) + 1)
            end = find("\n", i)
            if end < 0:
                break
            i = find(lit, end + 1)
    for m in _AER_BIT_KEY.finditer(text):
        starts.add(rfind("\n", 0, m.start()) + 1)
    return sorted(starts)


def parse_log_lines(text: str, node: str = "", *, year: int = 2000, boot_time: float = 0.0) -> list[Event]:
    """Events of a kernel / NCCL log, by trying each source's regex on every line (the reference scanner).

    Parameters
    ----------
    text : str
        The log (lines separated by ``\\n``; a trailing ``\\r`` is dropped).
    node : str
        Node name for lines whose prefix names no host.
    year : int
        The year of stamps that carry none (BSD syslog, glog). The default, 2000, is a leap year so that a
        ``Feb 29`` stamp parses; pass the real year to get real epoch times.
    boot_time : float
        Seconds since the epoch added to bare ``dmesg`` stamps (seconds since boot) and given to lines without
        any stamp.

    Returns
    -------
    list of Event
        In line order (use :func:`~fastnips.diagnosis.merge_events` to sort and de-duplicate).
    """
    _check(text, node, year, boot_time)
    out = []
    for line in text.split("\n"):
        line = line[:MAX_LINE]
        if line.endswith("\r"):
            line = line[:-1]
        for i, rx in enumerate(_RULES):  # every regex on every line, in order: the first match wins
            m = rx.search(line)
            if m:
                out.append(_event_from(i, m, line, node, year, boot_time))
                break
    return out


def parse_log_text(text: str, node: str = "", *, year: int = 2000, boot_time: float = 0.0) -> list[Event]:
    """Events of a kernel / NCCL log: the fast scanner, equal to :func:`parse_log_lines` on every input.

    ``str.find`` runs over the whole text for each source's literal anchor (``NVRM: Xid``, ``PCIe Bus Error``,
    ``NCCL WARN``, ...) and one compiled regex for the AER status-bit lines; only the lines they hit are cut out
    and parsed, each rule only where its literal is present. Parameters and result as :func:`parse_log_lines`.

    Examples
    --------
    >>> log = "Dec  2 21:00:01 gpu-07 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus."
    >>> e, = parse_log_text(log, year=2026)
    >>> (e.node, e.component, e.code, e.severity)
    ('gpu-07', '0000:3b:00.0', '79', 'critical')
    """
    _check(text, node, year, boot_time)
    out = []
    n = len(text)
    for start in _candidate_starts(text):
        end = text.find("\n", start, start + MAX_LINE)
        e = _parse_line(text[start:end if end >= 0 else min(n, start + MAX_LINE)], node, year, boot_time)
        if e is not None:
            out.append(e)
    return out


def _check(text: str, node: str, year: int, boot_time: float) -> None:
    if not isinstance(text, str):
        raise TypeError(f"text: expected a str, got {type(text).__name__}")
    check_name(node)
    check_year(year, boot_time)


_SEL = re.compile(r"^[ \t]*([0-9a-fA-F]{1,8}) \| (\d\d)/(\d\d)/(\d{2}|\d{4}) \| (\d\d:\d\d:\d\d)(?: ([AP]M))? \| "
                  r"([^|]{1,128}?) \| ([^|]{1,160}?)(?: \| (Asserted|Deasserted))?(?: \| ([^|]{0,160}))?[ \t]*$")
SEL_KINDS = (("Power Supply", "sel_psu"), ("Power Unit", "sel_psu"), ("Voltage", "sel_psu"), ("Current", "sel_psu"),
             ("Temperature", "sel_thermal"), ("Fan", "sel_thermal"), ("Memory", "sel_memory"),
             ("Critical Interrupt", "sel_pcie"), ("Processor", "sel_cpu"))
_SEL_SEVERE = ("Critical", "Non-recoverable", "failure", "lost", "Uncorrectable", "Failure detected", "PCI SERR",
               "PCI PERR", "Bus Fatal", "Bus Uncorrectable")


def _sel_event(m: re.Match, node: str) -> Event | None:
    year = int(m[4]) + (2000 if len(m[4]) == 2 else 0)
    h, rest = int(m[5][:2]), m[5][2:]
    if m[6]:  # 12-hour clock
        if not 1 <= h <= 12:
            return None
        h = h % 12 + (12 if m[6] == "PM" else 0)
    month = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")[int(m[2]) - 1] \
        if 1 <= int(m[2]) <= 12 else "???"
    t = bsd_time(month, m[3], f"{h:02d}{rest}", year) if 1970 <= year <= 9999 else None
    if t is None:
        return None
    sensor, what = m[7].strip(), m[8].strip()
    kind = next((k for prefix, k in SEL_KINDS if sensor.startswith(prefix)), "sel_other")
    name = sensor
    for prefix, _ in SEL_KINDS:
        if sensor.startswith(prefix):
            name = sensor[len(prefix):].strip() or prefix
            break
    deasserted = m[9] == "Deasserted"
    sev = "info" if deasserted else "critical" if any(w in what for w in _SEL_SEVERE) else "warning"
    raw = m[0].strip()[:MAX_RAW]
    return Event(t, node, "sel", name, kind + ("_clear" if deasserted else ""), what, sev, raw)


def parse_sel_text(text: str, node: str = "") -> list[Event]:
    """Events of an IPMI System Event Log as printed by ``ipmitool sel elist`` (or ``sel list``).

    Each record ``id | date | time | sensor type and name | event | Asserted/Deasserted [| reading]`` becomes one
    event: ``kind`` from the sensor type (``sel_psu`` for power supply, power unit, voltage and current sensors;
    ``sel_thermal`` for temperature and fan; ``sel_memory``; ``sel_pcie`` for critical interrupts such as PCI
    SERR/PERR; ``sel_cpu``; else ``sel_other``), with ``_clear`` appended for a Deasserted record; ``component``
    the sensor name; ``code`` the event text. SEL stamps are the BMC's clock, taken as UTC.

    Parameters
    ----------
    text : str
    node : str
        The node the log belongs to (SEL lines name no host).

    Returns
    -------
    list of Event
        In record order.

    Examples
    --------
    >>> e, = parse_sel_text("  1 | 12/02/2026 | 21:00:01 | Power Supply PSU1 | Power Supply AC lost | Asserted", "n1")
    >>> (e.kind, e.component, e.code, e.severity)
    ('sel_psu', 'PSU1', 'Power Supply AC lost', 'critical')
    """
    if not isinstance(text, str):
        raise TypeError(f"text: expected a str, got {type(text).__name__}")
    check_name(node)
    out = []
    for line in text.split("\n"):
        m = _SEL.match(line[:MAX_LINE].rstrip("\r"))
        if m:
            e = _sel_event(m, node)
            if e is not None:
                out.append(e)
    return out
