"""Ingestion of files and folders: format detection, node naming, sorted and de-duplicated output,
determinism and idempotence, chunked reading equal to whole-text parsing, and clear errors."""

from __future__ import annotations

import json
import shutil

import pytest

from fastnips.diagnosis import Event, detect_format, ingest, ingest_text, merge_events, parse_log_lines
from fastnips.diagnosis import ingestion as ingest_mod

from .test_parsers import AER_LOG, DIAG3, HEALTH, NCCL_LOG, SEL, SMI


def _logdir(root):
    (root / "gpu-01").mkdir(parents=True)
    (root / "gpu-01" / "kern.log").write_text(
        "Dec  2 21:00:01 gpu-01 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n" + AER_LOG)
    (root / "gpu-01" / "nvidia-smi.xml").write_text(SMI)
    (root / "gpu-01" / "dcgm.json").write_text(json.dumps(DIAG3))
    (root / "gpu-02.sel").write_text(SEL)
    (root / "trainer.log").write_text(NCCL_LOG)
    (root / ".hidden").write_text("Dec  2 21:00:01 z kernel: NVRM: Xid (PCI:0000:3b:00): 79, x\n")
    return root


def test_detect_format():
    assert detect_format(json.dumps(DIAG3)) == "dcgm"
    assert detect_format("\ufeff  " + SMI) == "smi"
    assert detect_format(SEL) == "sel"
    assert detect_format("  1c | Pre-Init  |0000000012| System Event #0xff | Timestamp Clock Sync | Asserted") == "sel"
    assert detect_format(NCCL_LOG) == "log"  # "[rank3]:..." is a log line, not JSON
    assert detect_format("[  12.5] NVRM: Xid") == "log"
    assert detect_format("<4>[  12.5] NVRM: Xid (PCI:0000:3b:00): 79, x") == "log"  # dmesg -r, not XML
    assert detect_format('{"MESSAGE": "NVRM: Xid (PCI:0000:3b:00): 79, x"}') == "log"  # journal JSON lines
    assert detect_format(json.dumps(HEALTH)) == "dcgm"


def test_folder_ingestion_names_nodes_and_is_sorted(tmp_path):
    ev = ingest(_logdir(tmp_path), year=2026)
    assert ev == sorted(set(ev))
    nodes = {e.node for e in ev}
    assert nodes == {"gpu-01", "h1", "gpu-02", "trainer", "gpu-07", "gpu-08"}  # syslog hosts win over folders
    assert {e.source for e in ev if e.node == "gpu-01"} == {"xid", "smi", "dcgm"}
    assert all(e.node != "z" for e in ev)  # dot-files skipped
    smi = [e for e in ev if e.source == "smi"]
    assert smi
    assert {e.time for e in smi} == {1796245200.0}


def test_ingestion_is_deterministic_and_idempotent(tmp_path):
    a = ingest(_logdir(tmp_path / "a"), year=2026)
    assert a == ingest(tmp_path / "a", year=2026)  # deterministic
    shutil.copytree(tmp_path / "a", tmp_path / "b", copy_function=shutil.copy2)  # copy2 keeps the mtimes
    for p in sorted((tmp_path / "b" / "gpu-01").iterdir()):  # every file of a node folder twice
        shutil.copy2(p, p.with_name("copy-" + p.name))
    assert ingest(tmp_path / "b", year=2026) == a  # idempotent: duplicates add nothing
    again = ingest_text(AER_LOG + AER_LOG, "h", year=2026)
    assert again == ingest_text(AER_LOG, "h", year=2026) == merge_events(parse_log_lines(AER_LOG, "h", year=2026))


def test_chunked_file_reading_equals_whole_text(tmp_path, monkeypatch):
    text = "".join(AER_LOG + NCCL_LOG + f"Dec  2 21:00:{k % 60:02d} h kernel: NVRM: Xid (PCI:0000:3b:00): "
                   f"{k % 150}, pid={k}, x\r\n" for k in range(400))
    p = tmp_path / "big.log"
    p.write_text(text, newline="")
    monkeypatch.setattr(ingest_mod, "CHUNK", 4096)
    assert ingest(p, year=2026) == merge_events(parse_log_lines(text, "big", year=2026))


def test_non_utf8_bytes_are_replaced(tmp_path):
    p = tmp_path / "n.log"
    p.write_bytes(b"\xff\xfe Dec  2 21:00:01 n kernel: x\nDec  2 21:00:01 n kernel: NVRM: Xid (PCI:0000:3b:00): 48, "
                  b"\xc3(\n")
    (e,) = ingest(p)
    assert e.code == "48"
    assert "\ufffd" in e.raw


def test_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        ingest(tmp_path / "nope")
    (tmp_path / "bad.json").write_text('{"DCGM GPU Diagnostic": [')
    with pytest.raises(ValueError, match=r"bad\.json.*not a JSON document"):
        ingest(tmp_path)
    with pytest.raises(ValueError, match="fmt"):
        ingest_text("", fmt="csv")
    with pytest.raises(ValueError, match="year"):
        ingest(tmp_path, year=0)
    with pytest.raises(TypeError, match="Event"):
        merge_events([Event(0.0, "n", "xid", "", "xid", "1", "info", "")], ["not an event"])


def test_default_year_follows_the_file_so_sources_share_one_window(tmp_path):
    """A syslog Xid 48 and the nvidia-smi report of the same minute are one incident: with the old fixed default
    year (2000) the kernel line landed 26 years before the dated XML report, in a window of its own."""
    import calendar
    import os

    from fastnips.diagnosis import diagnose

    node = tmp_path / "n1"
    node.mkdir()
    kern = node / "kern.log"
    kern.write_text("Dec  2 21:00:05 n1 kernel: NVRM: Xid (PCI:0000:5e:00): 48, pid=7, DBE (0x0) detected\n"
                    "Dec 31 23:59:00 n1 kernel: NVRM: Xid (PCI:0000:5e:00): 79, pid=7, GPU has fallen off the bus.\n")
    (node / "nvidia-smi.xml").write_text(SMI)  # <timestamp>Wed Dec  2 21:00:00 2026</timestamp>
    written = calendar.timegm((2026, 12, 2, 22, 0, 0, 0, 0, 0))
    os.utime(kern, (written, written))
    ev = ingest(tmp_path)
    xid = [e for e in ev if e.source == "xid"]
    # Dec 2 falls before the file's time: 2026; Dec 31 would lie after it: the year before
    assert [e.time for e in xid] == [calendar.timegm((2025, 12, 31, 23, 59, 0, 0, 0, 0)),
                                     calendar.timegm((2026, 12, 2, 21, 0, 5, 0, 0, 0))]
    d = [x for x in diagnose(ev) if x.start > calendar.timegm((2026, 1, 1, 0, 0, 0, 0, 0, 0))]
    assert len(d) == 1
    assert "xid48" in dict(d[0].evidence)
    assert ingest(tmp_path, year=2026) != ev  # an explicit year still wins (Dec 31 2026 then)
    assert [e.time for e in ingest(kern, year=2000)] == [calendar.timegm((2000, 12, 2, 21, 0, 5, 0, 0, 0)),
                                                          calendar.timegm((2000, 12, 31, 23, 59, 0, 0, 0, 0))]


def test_a_byte_order_mark_does_not_hide_the_first_line(tmp_path):
    """A UTF-8 BOM glued to the first syslog line defeated its stamp and host (time 0, node from the file name),
    and made a DCGM JSON report 'not a JSON document'."""
    line = "Dec  2 21:00:01 n1 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus."
    (tmp_path / "kern.log").write_bytes(b"\xef\xbb\xbf" + line.encode() + b"\n")
    (e,) = ingest(tmp_path / "kern.log", year=2026)
    assert (e.node, e.time) == ("n1", ingest_text(line, year=2026)[0].time)
    assert ingest_text("\ufeff" + line, year=2026) == ingest_text(line, year=2026)
    (tmp_path / "dcgm.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(DIAG3).encode())
    assert ingest(tmp_path / "dcgm.json") == ingest_text(json.dumps(DIAG3), "dcgm",
                                                         time=(tmp_path / "dcgm.json").stat().st_mtime)
