"""``fastnips demo``: one short, deterministic run per capability, streamed as a 100-column table.

Each capability is budgeted in epochs, steps or repeats (never seconds), so a seed gives the same results on
any machine load; torch rows run on ``--threads`` torch threads (default 1: the models are tiny, and one
thread is both the fastest on a busy machine and the same float reductions everywhere). A capability whose
optional packages are missing shows one row saying what to install; the others still run.
"""

from __future__ import annotations

import json
import sys
import textwrap
import time
from collections.abc import Callable
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

import click

from . import __version__, _optional

WIDTH = 100
COLS = (19, 13, 26)  # task, backend, measure; the result takes the rest of the 100 columns
NEEDS_HINT = {"torch": "pip install torch (see README)",
              "sklearn": "pip install scikit-learn (fastnips[demo], see README)"}

# The unit and direction of better per task (rows may carry their own "measure").
MEASURES = {
    "spmm": "agreement; ms ↓",
    "graph": "test accuracy ↑, AUROC ↑",
    "prune": "ppl ↓ dense/pruned/recon.",
    "vision": "test accuracy ↑",
    "vision bias params": "params/head ↓ freq vs Swin",
    "vision transfer": "x2 error ↓ refine/bicubic",
    "diffusion": "SW ↓ (floor {sw_floor:.2f}) / TV ↓",
    "scenegraph metric": "max error ↓ / speed-up ↑",
    "scenegraph loss": "R@5 ↑, graph H ↓",
    "concepts": "AUROC ↑, kNN ↑, speed-up ↑",
}


@dataclass(frozen=True)
class Capability:
    name: str
    about: str  # one line for --list
    doing: str  # the progress line: "running <name>: <doing> ..."
    needs: tuple[str, ...]  # optional modules (import names) the rows need
    run: Callable[[int, int], list[dict]]  # (seed, n) -> rows


def _spmm(seed, n):
    from ._demo_rows import demo_spmm

    return demo_spmm(seed, n)


def _htc(seed, n):
    from ._demo_rows import demo_htc

    return demo_htc(seed)


def _semid(seed, n):
    from .causal._demo import demo_semid_family

    return demo_semid_family(seed)


def _graph(seed, n):
    from ._demo_rows import demo_graph

    return demo_graph(seed)


def _prune(seed, n):
    from ._demo_rows import demo_prune

    return demo_prune(seed)


def _vision(seed, n):
    from .vision.demo import demo_vision

    return demo_vision(seed, values=True)


def _diffusion(seed, n):
    from .diffusion.demo import demo_diffusion

    return demo_diffusion(seed, values=True)


def _scenegraph(seed, n):
    from .scenegraph.demo import demo_scenegraph

    return demo_scenegraph(seed, values=True)


def _concepts(seed, n):
    from .concepts.demo import demo_concepts

    return demo_concepts(seed, values=True)


def _rl(seed, n):
    from .rl.demo import demo_rl

    return demo_rl(seed, values=True)


def _vae(seed, n):
    from .vae._demo import demo_vae

    return demo_vae(seed)


def _pc(seed, n):
    from .pc._demo import demo_pc

    return demo_pc(seed)


def _minimax(seed, n):
    from .optim._demo import demo_minimax

    return demo_minimax(seed)


def _designbench(seed, n):
    from .designbench._demo import demo_designbench

    return demo_designbench(seed)


def _diagnosis(seed, n):
    from .diagnosis._demo import demo_diagnosis

    return demo_diagnosis(seed)


def _datascale(seed, n):
    from .datacuration._demo import demo_datascale

    return demo_datascale(seed)


def _moead(seed, n):
    from .evo._demo import demo_moead

    return demo_moead(seed)


def _teacher(seed, n):
    from .rl.teacher._demo import demo_teacher

    return demo_teacher(seed)


def _submodular(seed, n):
    from .submodular._demo import demo_submodular

    return demo_submodular(seed)


def _functional(seed, n):
    from .functional._demo import demo_functional

    return demo_functional(seed)


CAPABILITIES = (
    Capability("spmm", "sparse x dense product Y = A @ X on every backend present, checked against scipy",
               "SpMM on a skewed random graph, every backend", (), _spmm),
    Capability("htc", "half-trek identifiability of linear SEMs: classic graphs, random DAGs, a chain",
               "half-trek criterion, classic and random graphs", (), _htc),
    Capability("semid", "SEMID's identification family (edgewise+Tian, edgewiseTSID, ancestralID, globalID)",
               "SEMID's criteria on its README example and a random DAG", (), _semid),
    Capability("graph", "a TikhonovGNN trained on BA-motifs: test accuracy and explanation AUROC",
               "TikhonovGNN on BA-motifs, 20 epochs", ("torch",), _graph),
    Capability("prune", "Wanda 50 % on the shipped tiny decoder, block-wise reconstruction: perplexity",
               "Wanda + reconstruction of the tiny decoder", ("torch",), _prune),
    Capability("vision", "DDRViT-tiny on 8x8 digits; frequency bias sizes; exact transfer vs bicubic",
               "DDRViT-tiny on digits, 12 epochs", ("torch", "sklearn"), _vision),
    Capability("diffusion", "a 25-mode 2-D Gaussian mixture sampled in 5-6 steps: FDS vs Heun and Euler",
               "FDS, Heun and Euler on a 2-D Gaussian mixture", ("torch",), _diffusion),
    Capability("scenegraph", "triplet Hellinger: factorised vs explicit joint; a scene-graph GNN, CE vs CE+Hellinger",
               "Hellinger triplet loss on synthetic 3-D scenes", ("torch",), _scenegraph),
    Capability("concepts", "GRACE concept decomposition vs per-instance lasso on planted concepts",
               "GRACE on planted concepts, 10 epochs", ("torch",), _concepts),
    Capability("rl", "exact soft VI on a 100x100 gridworld; max-ent IRL (geometric vs gradient); constrained PbRL",
               "tabular soft VI, IRL and constrained PbRL", (), _rl),
    Capability("vae", "Dirichlet beta-VAE: closed-form beta_c vs the observed collapse onset on a linear mixture",
               "Dirichlet beta-VAE collapse sweep", ("torch",), _vae),
    Capability("pc", "predictive coding vs Approx PC on digits: accuracy, inference steps, seconds",
               "PC and Approx PC on digits, 3 epochs", ("torch", "sklearn"), _pc),
    Capability("minimax", "decentralised minimax on an 8-node ring: doubly smoothed GDA vs GDA at equal steps",
               "DS-GDA and GDA on a kappa-64 quadratic", ("torch",), _minimax),
    Capability("designbench", "GraphicDesignBench metrics: detection mAP vs lica-gdb; font-Jaccard and layer-order "
               "baselines on synthetic templates", "GDB metrics and baselines on synthetic templates", (),
               _designbench),
    Capability("diagnosis", "GPU fault diagnosis from Xid/AER/NCCL/SEL/DCGM/nvidia-smi logs of a simulated fleet",
               "fault diagnosis on simulated incidents", ("sklearn",), _diagnosis),
    Capability("datascale", "best data recipe vs ablation runs: exponent vs 2/d; sklearn testbed predicts more runs",
               "power law of recipe search, synthetic and scikit-learn", (), _datascale),
    Capability("moead", "MOEA/D on LOTZ under 2^v: self-adjusting vs classic fixed weights, Pareto points covered",
               "self-adjusting and classic MOEA/D on distorted LOTZ", (), _moead),
    Capability("teacher", "teacher budget for agent SFT: BC vs short continuations vs filtered, 96 calls on a lock",
               "BC and constructions (i)-(iii) at one teacher budget", (), _teacher),
    Capability("submodular", "pairwise submodular networks: the 2^n certificate, greedy vs brute force, lazy vs naive",
               "certificate, greedy and lazy greedy on pairwise networks", (), _submodular),
    Capability("functional", "per-curve B-spline coefficients of irregular curves (C++ vs numpy); bottleneck vs "
               "equal-width net on a two-index model", "functional coefficients and networks", ("torch", "sklearn"),
               _functional),
)
NAMES = tuple(c.name for c in CAPABILITIES)


def _parse_only(ctx, param, value):
    if not value:
        return NAMES
    names = [v.strip() for v in value.split(",") if v.strip()]
    bad = [v for v in names if v not in NAMES]
    if bad or not names:
        raise click.BadParameter(f"unknown capability {', '.join(map(repr, bad)) or repr(value)}; choose from "
                                 f"{', '.join(NAMES)} (see --list)")
    return tuple(n for n in NAMES if n in names)  # the table's order


@contextmanager
def _torch_threads(k: int):
    torch = _optional.torch_or_none()
    if torch is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(k)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class _Progress:
    """``running <name>: ... `` on stderr while a capability runs: overwritten in place on a terminal."""

    def __init__(self, quiet: bool):
        self.quiet = quiet
        isatty = getattr(sys.stderr, "isatty", None)
        self.tty = not quiet and bool(isatty and isatty())
        self.shown = 0

    def start(self, text: str) -> None:
        if self.quiet:
            return
        text = text[:WIDTH - 1]
        click.echo(("\r" + text) if self.tty else text, err=True, nl=not self.tty)
        self.shown = len(text)

    def done(self) -> None:
        if self.tty and self.shown:
            click.echo("\r" + " " * self.shown + "\r", err=True, nl=False)
        self.shown = 0


def _missing(cap: Capability) -> str | None:
    for mod in cap.needs:
        if not _optional.installed(mod):
            return f"needs {'scikit-learn' if mod == 'sklearn' else mod}: {NEEDS_HINT[mod]}"
    return None


def _status(result: str) -> str:
    if "DIFFERS" in result:
        return "differs"
    for word in ("skipped", "needs", "failed"):
        if result.startswith(word):
            return word if word != "needs" else result.split(":")[0]
    return "ok"


def _measure(row: dict) -> str:
    if "measure" in row:
        return row["measure"]
    label = MEASURES.get(row["task"]) or MEASURES.get(row["task"].split()[0], "")
    try:
        return label.format(**row.get("values", {}))
    except (KeyError, ValueError):
        return label.split(" (")[0]


def run_capability(cap: Capability, seed: int, n: int, threads: int, debug: bool) -> tuple[list[dict], float]:
    """The rows of one capability (a 'needs ...' or 'failed: ...' row where it cannot run) and its seconds."""
    t0 = time.perf_counter()
    why = _missing(cap)
    if why:
        rows = [{"task": cap.name, "backend": "-", "result": why, "detail": ""}]
    else:
        try:
            with _torch_threads(threads) if "torch" in cap.needs else nullcontext():
                rows = cap.run(seed, n)
        except Exception as exc:
            if debug:
                raise
            first = (str(exc).strip().splitlines() or [""])[0]
            rows = [{"task": cap.name, "backend": "-", "result": "failed",
                     "detail": f"{type(exc).__name__}: {first} (rerun with fastnips --debug demo --only "
                               f"{cap.name} for the traceback)"}]
    out = []
    for r in rows:
        status = _status(r["result"])
        out.append({"capability": cap.name, "task": r["task"], "backend": r["backend"],
                    "measure": _measure(r) if status in ("ok", "differs") else "", "result": r["result"],
                    "status": status, "detail": r["detail"], "values": r.get("values", {})})
    return out, time.perf_counter() - t0


def _plain(x):
    """numpy scalars and arrays as JSON numbers and lists."""
    if hasattr(x, "tolist"):
        return x.tolist()
    raise TypeError(f"{type(x).__name__} is not JSON serialisable")


def _echo(line: str) -> None:
    """``click.echo``, with ^ and v for the arrows where stdout cannot encode them (a legacy code page)."""
    try:
        line.encode(getattr(sys.stdout, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):
        line = line.replace("↑", "^").replace("↓", "v")
    click.echo(line)


def format_row(row: dict) -> list[str]:
    """The lines of one row: task, backend, measure and result in columns, the detail wrapped under it."""
    w_task, w_backend, w_measure = COLS
    lead = f"{row['task']:<{w_task}}  {row['backend']:<{w_backend}}  "
    head = lead + (f"{row['measure']:<{w_measure}}  {row['result']}" if row["measure"] else row["result"])
    lines = textwrap.wrap(head, WIDTH, subsequent_indent=" " * (len(lead) + 2)) if len(head) > WIDTH else [head]
    if row["detail"]:
        lines += textwrap.wrap(row["detail"], WIDTH, initial_indent="    ", subsequent_indent="    ")
    return lines


def header(seed: int, threads: int) -> list[str]:
    w_task, w_backend, w_measure = COLS
    return [f"fastnips {__version__} demo, seed {seed}, torch rows on {threads} thread{'s' * (threads != 1)}; "
            "↑ higher is better, ↓ lower is better",
            f"{'task':<{w_task}}  {'backend':<{w_backend}}  {'measure':<{w_measure}}  result"]


def list_capabilities(as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps([{"name": c.name, "about": c.about, "needs": list(c.needs)} for c in CAPABILITIES],
                              indent=2))
        return
    for c in CAPABILITIES:
        needs = f" (needs {', '.join('scikit-learn' if m == 'sklearn' else m for m in c.needs)})" if c.needs else ""
        for line in textwrap.wrap(f"{c.name:<10} {c.about}{needs}", WIDTH, subsequent_indent=" " * 11):
            click.echo(line)


@click.command()
@click.option("--only", callback=_parse_only, metavar="NAME[,NAME...]",
              help=f"Run only these capabilities ({', '.join(NAMES)}).")
@click.option("--list", "list_only", is_flag=True, help="List the capabilities with one line each, run nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document with every row (for scripts).")
@click.option("--seed", default=0, show_default=True,
              help="Seed of every random choice: a seed (and --threads) gives the same results on any load.")
@click.option("--n", default=100_000, show_default=True, type=click.IntRange(min=16),
              help="Rows of the random SpMM matrix.")
@click.option("--threads", default=1, show_default=True, type=click.IntRange(min=1),
              help="Torch threads for the torch rows.")
@click.option("-q", "--quiet", is_flag=True, help="No progress line on stderr.")
@click.pass_context
def demo(ctx, only, list_only, as_json, seed, n, threads, quiet):
    """Run every capability on embedded or generated data; print one row per result as it finishes.

    Every row is deterministic for a seed (fixed epochs and steps); the whole run takes well under a minute on
    two cores. Exit status 1 if a backend disagrees with the reference or a row fails.
    """
    if list_only:
        list_capabilities(as_json)
        return
    debug = bool(ctx.meta.get("fastnips.debug"))
    progress = _Progress(quiet)
    if not as_json:
        for line in header(seed, threads):
            _echo(line)
    rows, seconds, t0 = [], {}, time.perf_counter()
    for cap in CAPABILITIES:
        if cap.name not in only:
            continue
        if not _missing(cap):
            progress.start(f"running {cap.name}: {cap.doing} ...")
        try:
            got, seconds[cap.name] = run_capability(cap, seed, n, threads, debug)
        finally:
            progress.done()
        rows += got
        if not as_json:
            for r in got:
                for line in format_row(r):
                    _echo(line)
            sys.stdout.flush()
    total = time.perf_counter() - t0
    bad = [r for r in rows if r["status"] in ("differs", "failed")]
    if as_json:
        click.echo(json.dumps({"fastnips": __version__, "seed": seed, "n": n, "threads": threads,
                               "seconds": round(total, 2), "capability_seconds": {k: round(v, 2) for k, v in
                                                                                 seconds.items()},
                               "ok": not bad, "rows": rows}, indent=2, default=_plain))
    else:
        times = ", ".join(f"{k} {v:.1f}" for k, v in seconds.items())
        tail = f"; {len(bad)} row{'s' * (len(bad) != 1)} failed or differ" if bad else ""
        for line in textwrap.wrap(f"{len(rows)} rows in {total:.1f} s ({times}){tail}", WIDTH):
            click.echo(line)
    if bad:
        ctx.exit(1)
