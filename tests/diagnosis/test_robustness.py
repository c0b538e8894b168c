"""No crash, hang or unbounded memory on any input: hypothesis properties and seeded fuzz runs of every parser
(10^4 inputs each by default; 10^5 each under ``-m slow``). On every log input the fast scanner must equal the
per-line reference."""

from __future__ import annotations

import signal
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastnips.diagnosis import (
    Event,
    ingest,
    merge_events,
    parse_dcgm_json,
    parse_log_lines,
    parse_log_text,
    parse_nvidia_smi_xml,
    parse_sel_text,
)
from fastnips.diagnosis import ingestion as ingest_mod

from ._fuzz import LOG_CORPUS, SEL_CORPUS, inputs

HANG_SECONDS = 120  # a guard against hangs, not a speed claim


def _well_typed(events) -> None:
    for e in events:
        assert isinstance(e, Event)
        assert isinstance(e.time, float)
        assert e.time == e.time
        assert len(e.raw) <= 512
        assert e.severity in ("info", "warning", "error", "critical")


def _run(kind: str, text: str) -> None:
    if kind == "log":
        fast = parse_log_text(text, "n")
        assert fast == parse_log_lines(text, "n"), text[:300]
        _well_typed(fast)
    elif kind == "sel":
        _well_typed(parse_sel_text(text, "n"))
    else:
        parse = parse_dcgm_json if kind == "json" else parse_nvidia_smi_xml
        try:
            _well_typed(parse(text, "n"))
        except ValueError:
            pass


def _fuzz(kind: str, n: int, seed: int) -> None:
    def hang(*_):
        raise TimeoutError(f"fuzz run of {kind} did not finish in {HANG_SECONDS} s")

    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(HANG_SECONDS * max(1, n // 10_000))
    try:
        for text in inputs(kind, n, seed):
            _run(kind, text)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("kind", ["log", "sel", "json", "xml"])
def test_fuzz_10k(kind):
    _fuzz(kind, 10_000, seed=0)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["log", "sel", "json", "xml"])
def test_fuzz_100k(kind):
    _fuzz(kind, 100_000, seed=1)


line = st.one_of(st.sampled_from(LOG_CORPUS), st.text(max_size=200))


@settings(max_examples=300, deadline=None)
@given(st.lists(line, max_size=12))
def test_log_scanners_agree_and_ingestion_is_idempotent(lines):
    text = "\n".join(lines)
    ev = parse_log_text(text, "n")
    assert ev == parse_log_lines(text, "n")
    assert merge_events(ev, ev) == merge_events(ev) == merge_events(reversed(ev))
    # a log is the concatenation of its lines: parsing distributes over it
    assert ev == [e for ln in lines for e in parse_log_lines(ln, "n")]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(SEL_CORPUS), st.text(max_size=120)), max_size=10))
def test_sel_distributes_over_lines(lines):
    assert parse_sel_text("\n".join(lines), "n") == [e for ln in lines for e in parse_sel_text(ln, "n")]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_structured_parsers_accept_or_refuse_any_text(text):
    for parse in (parse_dcgm_json, parse_nvidia_smi_xml):
        try:
            _well_typed(parse(text))
        except ValueError:
            pass


@settings(max_examples=100, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=12), c, max_size=4),
                    max_leaves=40))
def test_dcgm_parser_on_any_json_value(doc):
    import json

    for wrapped in (doc, {"DCGM GPU Diagnostic": doc}, {"DCGM Diagnostic": {"test_categories": doc}},
                    {"GPU ID: 3": doc}):
        _well_typed(parse_dcgm_json(json.dumps(wrapped)))


def test_one_huge_line_and_many_anchors_stay_bounded():
    text = "NVRM: Xid (" * 1_000_000  # 11 MB, one line: parsed once, cut at MAX_LINE
    assert parse_log_text(text) == parse_log_lines(text) == []
    text = ("x" * 5000 + "NVRM: Xid (PCI:0000:3b:00): 79, y\n") * 200  # anchors beyond MAX_LINE are ignored
    assert parse_log_text(text) == parse_log_lines(text) == []


def test_file_ingestion_memory_is_bounded_by_the_chunk(tmp_path, monkeypatch):
    monkeypatch.setattr(ingest_mod, "CHUNK", 1 << 16)
    p = tmp_path / "node1.log"
    with open(p, "w") as f:
        for k in range(60_000):  # ~4 MB of unrelated lines and a few events
            f.write(f"Dec  2 21:00:01 node1 systemd[1]: Started Session {k} of User root.\n")
            if k % 20_000 == 0:
                f.write("Dec  2 21:00:01 node1 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n")
    tracemalloc.start()
    ev = ingest(p, year=2000)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(ev) == 1  # three identical lines at the same second: one event
    assert peak < 2 << 20, peak  # two 64 KiB chunks and their copies, far below the 4 MB file
    assert ev == merge_events(parse_log_lines(p.read_text(), "node1"))
