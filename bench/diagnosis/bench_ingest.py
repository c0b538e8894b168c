"""Log ingestion throughput: the fast scanner (:func:`fastnips.diagnosis.parse_log_text`) vs a straightforward
per-line regex loop (:func:`fastnips.diagnosis.parse_log_lines`: every source's regex on every line, first match
wins), on syslog-style kernel + NCCL logs of 10^5 lines from :func:`fastnips.diagnosis.synthetic_log`.

Groups by the fraction of lines that are telemetry (Xid, AER, NCCL): 1 % and 5 % (a busy node's kernel log: most
lines are ordinary kernel and daemon messages) and 100 % (the worst case for the fast scanner: every line is
parsed). Every run checks that the two give the same events. Lines per second per core = 10^5 / the median
(single-threaded pure Python; use ``--benchmark-timer=time.process_time`` on a shared machine to count CPU time).

    OMP_NUM_THREADS=1 pytest bench/diagnosis/bench_ingest.py --benchmark-only --benchmark-timer=time.process_time
"""

from __future__ import annotations

import functools

import pytest

from fastnips.diagnosis import parse_log_lines, parse_log_text, synthetic_log

N_LINES = 100_000
MIXES = {"telemetry 1%": 0.01, "telemetry 5%": 0.05, "telemetry 100%": 1.0}
IMPLS = {"fastnips-scan": parse_log_text, "per-line-regex": parse_log_lines}


@functools.lru_cache(maxsize=3)
def log(mix: str) -> str:
    return synthetic_log(N_LINES, relevant=MIXES[mix], seed=0)


@functools.lru_cache(maxsize=3)
def expected(mix: str):
    return parse_log_lines(log(mix), "bench", year=2027)


@pytest.mark.parametrize("impl", list(IMPLS))
@pytest.mark.parametrize("mix", list(MIXES))
def test_ingest(machine_facts, mix, impl):
    benchmark = machine_facts
    benchmark.group = f"ingest {N_LINES:,} lines, {mix}"
    benchmark.extra_info.update(lines=N_LINES, mix=mix)
    text = log(mix)
    out = benchmark(IMPLS[impl], text, "bench", year=2027)
    assert out == expected(mix)
    assert len(out) >= int(N_LINES * MIXES[mix] * 0.8)
