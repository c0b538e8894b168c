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
