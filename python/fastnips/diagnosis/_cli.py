"""The ``fastnips diagnose LOGDIR`` subcommand: events, diagnoses and repair actions per node.

Registered on the ``fastnips`` group by :mod:`fastnips.cli`; expected failures (a missing path, a malformed
DCGM or nvidia-smi report, a bad option) end in one line on stderr through the group's handler.
"""

from __future__ import annotations

import json
import time

import click

__all__ = ["diagnose_command"]


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)) if 0 <= t < 253402300800 else f"{t:.3f}"


@click.command("diagnose")
@click.argument("logdir", type=click.Path(exists=True))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object: events and diagnoses per node.")
@click.option("--year", default=None, type=click.IntRange(1970, 9999),
              help="Year of log stamps that carry none (BSD syslog, glog); default: the year each log file was "
                   "last modified (the year before for stamps after that).")
@click.option("--boot-time", default=0.0, show_default=True, type=float,
              help="Seconds since the epoch added to bare dmesg stamps (seconds since boot).")
@click.option("--gap", default=1800.0, show_default=True, type=click.FloatRange(0, min_open=True),
              help="Seconds of quiet that close a node's incident window.")
@click.option("--model", type=click.Choice(["rules", "simulator"]), default="rules", show_default=True,
              help="rules, or the gradient-boosted classifier trained on the built-in simulator (needs "
                   "scikit-learn; a few seconds).")
@click.option("--max-events", default=20, show_default=True, type=click.IntRange(0),
              help="Events printed per node in the text report (all of them with --json).")
def diagnose_command(logdir, as_json, year, boot_time, gap, model, max_events):
    """Parse every telemetry file under LOGDIR (or the file LOGDIR) and diagnose each node.

    Files: kernel logs / syslog / dmesg (NVIDIA Xid, PCIe AER), NCCL and PyTorch logs, `ipmitool sel elist`
    dumps, `dcgmi diag -j` / `dcgmi health -c -j` JSON, `nvidia-smi -q -x` XML; the format is detected from the
    content. A record's node is its syslog host, else the first folder below LOGDIR, else the file name up to its
    first dot. Lines without a time stamp (NCCL's own WARN lines printed to a job's stdout) are placed at
    --boot-time; DCGM reports at their file's modification time.
    """
    from . import diagnose, ingest

    events = ingest(logdir, year=year, boot_time=boot_time)
    clf = None
    if model == "simulator":
        from .evaluation import evaluate_on_simulator

        clf = evaluate_on_simulator(600, 8, seed=0).classifier
    diagnoses = diagnose(events, classifier=clf, gap=gap) if events else []
    nodes = sorted({e.node for e in events})
    if as_json:
        click.echo(json.dumps({"path": str(logdir), "n_events": len(events), "nodes": {
            n: {"events": [e.to_dict() for e in events if e.node == n],
                "diagnoses": [d.to_dict() for d in diagnoses if d.node == n]} for n in nodes}}, indent=2))
        return
    click.echo(f"{logdir}: {len(events)} events on {len(nodes)} node(s)")
    for n in nodes:
        mine = [e for e in events if e.node == n]
        click.echo(f"\n== {n}: {len(mine)} events")
        for e in mine[:max_events]:
            click.echo(f"  {_stamp(e.time)}  {e.source:<4} {e.severity:<8} {e.component or '-':<14} {e.kind} {e.code}")
        if len(mine) > max_events:
            click.echo(f"  ... {len(mine) - max_events} more (--max-events, --json)")
        for d in (d for d in diagnoses if d.node == n):
            ev = ", ".join(f"{t} x{c}" for t, c in d.evidence[:5]) or "-"
            click.echo(f"  diagnosis {_stamp(d.start)} .. {_stamp(d.end)}: {d.fault} ({d.method}, confidence "
                       f"{d.confidence:.2f}) on {d.component or '-'}; evidence: {ev}")
            click.echo(f"    action [{d.action}]: {d.action_text}")
