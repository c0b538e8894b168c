"""The ``fastnips htc`` subcommand: generic identifiability of the linear SEM whose mixed graph is in a file.

Registered on the ``fastnips`` group by :mod:`fastnips.cli`; expected failures (a malformed, unreadable,
non-UTF-8 or too deeply nested file, a bad option) end in one line on stderr through the group's handler.
"""

from __future__ import annotations

import json
import time

import click

__all__ = ["htc"]


@click.command()
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--tian", is_flag=True,
              help="Run per Tian c-component (SEMID's default for htcID, edgewiseID, edgewiseTSID, ancestralID).")
@click.option("--edgewise", is_flag=True, help="Also decide the edgewise criterion (Weihs et al. 2018).")
@click.option("--tsid", is_flag=True, help="Also run HTC + edgewise + trek separation (SEMID edgewiseTSID).")
@click.option("--ancestral", is_flag=True, help="Also run ancestral decomposition (SEMID ancestralID).")
@click.option("--global", "global_", is_flag=True, help="Also decide global identifiability (SEMID globalID).")
@click.option("--certificate", is_flag=True,
              help="Also run FDD's non-identifiability certificate (a max-flow on ~2n^2 nodes).")
@click.option("--method", type=click.Choice(["randomized", "maxflow"]), default="randomized", show_default=True)
@click.option("--seed", default=0, show_default=True, help="Seed of the randomized rank test.")
@click.option("--backend", type=click.Choice(["auto", "cpp", "reference"]), default="auto", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the report.")
def htc(path, tian, edgewise, tsid, ancestral, global_, certificate, method, seed, backend, as_json):
    """Generic identifiability of the linear SEM whose mixed graph is in PATH.

    PATH is a text edge list ("i -> j", "i <-> j", optional "n N" header, # comments) or a JSON file
    {"n": N, "directed": [[i, j], ...], "bidirected": [[i, j], ...]} (by extension .json), in UTF-8.
    """
    from .. import causal  # looked up at call time, so a test can stand in for one of its functions

    g = causal.MixedGraph.from_file(path)  # a malformed file raises a ValueError naming the path and the line
    report: dict = {"file": str(path), "n": g.n, "directed_edges": g.num_directed,
                    "bidirected_edges": g.num_bidirected}
    runs = [("htc_tian" if tian else "htc", lambda: causal.htc_identify(
        g, method=method, tian=tian, seed=seed, backend=backend))]
    if edgewise:
        runs.append(("edgewise", lambda: causal.edgewise_identify(g, tian=tian, seed=seed, backend=backend)))
    if tsid:
        runs.append(("tsid", lambda: causal.trek_separation_identify(g, tian=tian, seed=seed)))
    if ancestral:
        runs.append(("ancestral", lambda: causal.ancestral_identify(g, tian=tian)))
    for name, fn in runs:
        t0 = time.perf_counter()
        r = fn()
        dt = time.perf_counter() - t0
        report[name] = {"identifiable": r.identifiable, "identified_nodes": r.identified_nodes,
                        "identified_edges": [list(e) for e in r.identified_edges],
                        "unidentified_edges": [list(e) for e in r.unidentified_edges],
                        "backend": r.backend, "rounds": r.rounds, "tests": r.tests, "seconds": dt}
    if global_:
        report["globally_identifiable"] = causal.global_identifiable(g)
    if certificate:
        t0 = time.perf_counter()
        report["certified_nonidentifiable"] = bool(causal.htc_nonidentifiable(g))
        report["certificate_seconds"] = time.perf_counter() - t0
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    _print_report(path, g, runs, report, global_, certificate)


def _print_report(path, g, runs, report: dict, global_: bool, certificate: bool) -> None:
    click.echo(f"{path}: n={g.n}, {g.num_directed} directed, {g.num_bidirected} bidirected edges")
    for name, _ in runs:
        r = report[name]
        verdict = "generically identifiable" if r["identifiable"] else "not shown identifiable"
        click.echo(f"\n{name}: {verdict}  ({r['backend']}, {r['rounds']} rounds, {r['tests']} tests, "
                   f"{r['seconds'] * 1e3:.2f} ms)")
        click.echo(f"  identified nodes ({len(r['identified_nodes'])}/{g.n}): {_clip(r['identified_nodes'])}")
        ids = [f"{i}->{j}" for i, j in r["identified_edges"]]
        unids = [f"{i}->{j}" for i, j in r["unidentified_edges"]]
        click.echo(f"  identified edges ({len(ids)}/{g.num_directed}): {_clip(ids)}")
        if unids:
            click.echo(f"  not identified ({len(unids)}): {_clip(unids)}")
    if global_:
        verdict = "globally identifiable" if report["globally_identifiable"] else "not globally identifiable"
        click.echo(f"\nglobal: {verdict}")
    if certificate:
        verdict = ("generically infinite-to-one (FDD certificate)" if report["certified_nonidentifiable"]
                   else "no certificate of non-identifiability")
        click.echo(f"\ncertificate: {verdict}")


def _clip(items, limit: int = 30) -> str:
    items = list(items)
    shown = ", ".join(str(x) for x in items[:limit])
    return shown + (f", ... ({len(items) - limit} more)" if len(items) > limit else "")
