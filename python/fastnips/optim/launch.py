"""Run one decentralised minimax problem from the command line, in one process or one process per node.

``fastnips minimax --nproc 4 ...`` starts ``torch.distributed.run`` (torchrun) with four processes, each running
this module as node ``RANK`` of a gloo group on loopback; ``--nproc 1`` (the default) simulates ``--nodes`` nodes
in this process. Both give the same iterates for a fixed seed. On several machines, start it on each with
torchrun directly::

    torchrun --nnodes=2 --nproc-per-node=4 --rdzv-backend=c10d --rdzv-endpoint=HOST:29500 \\
        -m fastnips.optim.launch --problem quadratic --kappa 20 --method dsgda --topology torus

The engine exchanges float64 CPU tensors, so the group uses gloo (also between GPU machines: the problems here
are small and CPU-bound; an nccl engine would need the iterates on the device and is not provided).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from typing import Any

import click

PROBLEMS = ("quadratic", "logistic", "auc")
TOPOLOGIES = ("ring", "torus", "erdos-renyi", "complete")


def build_topology(name: str, nodes: int, seed: int = 0) -> Any:
    """The named topology on ``nodes`` nodes (the torus is the most square r x c factorisation; Erdos-Renyi with
    edge probability 0.5, resampled until connected from ``seed``)."""
    from .topology import complete, erdos_renyi, ring, torus

    if name == "ring":
        return ring(nodes)
    if name == "complete":
        return complete(nodes)
    if name == "erdos-renyi":
        return erdos_renyi(nodes, 0.5, seed=seed)
    if name == "torus":
        r = max(d for d in range(1, int(nodes ** 0.5) + 1) if nodes % d == 0)
        return torus(r, nodes // r)
    raise ValueError(f"topology must be one of {TOPOLOGIES}, got {name!r}")


def build_problem(name: str, nodes: int, *, kappa: float = 20.0, dim: int = 10, noise: float = 0.0,
                  split: str = "iid", seed: int = 0) -> Any:
    """``quadratic`` (nonconvex-PL with condition number ``kappa``), or ``logistic`` / ``auc`` on scikit-learn's
    bundled breast-cancer data (standardised) split across ``nodes`` (``split``)."""
    from . import problems

    if name == "quadratic":
        return problems.Quadratic(kappa, nodes=nodes, dim=dim, noise=noise, seed=seed)
    if name not in PROBLEMS:
        raise ValueError(f"problem must be one of {PROBLEMS}, got {name!r}")
    from sklearn.datasets import load_breast_cancer

    d = load_breast_cancer()
    X = (d.data - d.data.mean(0)) / d.data.std(0)
    cls = problems.RobustLogistic if name == "logistic" else problems.AUCMaximization
    return cls(X, d.target, nodes=nodes, split=split, seed=seed)


def run(problem: str, *, nodes: int, topology: str = "ring", method: str = "dsgda", steps: int = 2000,
        lr: float = 0.05, kappa: float = 20.0, dim: int = 10, noise: float = 0.0, split: str = "iid",
        tol: float | None = None, seed: int = 0, record_every: int = 10, distributed: bool = False,
        **method_kw: float) -> dict:
    """Build the problem and topology, run :func:`~fastnips.optim.decentralized_minimax` (in this process, or as
    this process's node of the initialised process group when ``distributed``) and return a summary dict:
    ``steps`` (run), ``stationarity``, ``consensus``, ``seconds``, ``floats_sent_per_step``, ``spectral_gap``,
    ``x`` (the node average, a list) and, for ``auc``, the ROC ``auc`` of the averaged scorer."""
    import torch

    from .minimax import Distributed, InProcess, decentralized_minimax

    prob = build_problem(problem, nodes, kappa=kappa, dim=dim, noise=noise, split=split, seed=seed)
    topo = build_topology(topology, nodes, seed)
    engine = Distributed(topo) if distributed else InProcess(topo)
    t0 = time.perf_counter()
    res = decentralized_minimax(prob, topo, method=method, steps=steps, lr=lr, engine=engine, tol=tol,
                                record_every=record_every, **method_kw)
    seconds = time.perf_counter() - t0
    xbar = engine.mean(res.x)
    last = res.history[-1]
    out = {"problem": problem, "method": method, "topology": topology, "nodes": nodes,
           "processes": nodes if distributed else 1, "steps": last["step"], "stationarity": last["stationarity"],
           "consensus": last["consensus"], "seconds": seconds, "floats_sent_per_step": res.floats_sent_per_step,
           "spectral_gap": topo.spectral_gap, "x": [float(v) for v in xbar]}
    if problem == "auc":
        out["auc"] = prob.auc(xbar.to(torch.float64))
    return out


def _common_options(f):
    opts = [
        click.option("--problem", type=click.Choice(PROBLEMS), default="quadratic", show_default=True),
        click.option("--method", type=click.Choice(("dsgda", "gda", "tt-gda", "gt-gda")), default="dsgda",
                     show_default=True),
        click.option("--topology", type=click.Choice(TOPOLOGIES), default="ring", show_default=True),
        click.option("--kappa", type=click.FloatRange(min=1.0), default=20.0, show_default=True,
                     help="Condition number of the quadratic."),
        click.option("--dim", type=click.IntRange(min=2), default=10, show_default=True),
        click.option("--noise", type=click.FloatRange(min=0.0), default=0.0, show_default=True,
                     help="Gradient noise std (quadratic)."),
        click.option("--split", type=click.Choice(("iid", "label-skewed")), default="iid", show_default=True),
        click.option("--steps", type=click.IntRange(min=1), default=2000, show_default=True),
        click.option("--lr", type=click.FloatRange(min=0.0, min_open=True), default=0.05, show_default=True),
        click.option("--r1", type=click.FloatRange(min=0.0, min_open=True), default=2.0, show_default=True),
        click.option("--r2", type=click.FloatRange(min=0.0, min_open=True), default=1.0, show_default=True),
        click.option("--beta", type=click.FloatRange(min=0.0, min_open=True), default=0.02, show_default=True),
        click.option("--mu", type=click.FloatRange(min=0.0, min_open=True), default=0.2, show_default=True),
        click.option("--tau", type=click.FloatRange(min=0.0, min_open=True), default=10.0, show_default=True),
        click.option("--tol", type=click.FloatRange(min=0.0, min_open=True), default=None,
                     help="Stop once the stationarity measure is below this."),
        click.option("--seed", type=int, default=0, show_default=True),
        click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
                     help="Also write the summary as JSON to this file."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def _report(summary: dict, json_path: str | None) -> None:
    if json_path:
        with open(json_path, "w") as fh:
            json.dump(summary, fh, indent=1)
    shown = {k: v for k, v in summary.items() if k != "x"}
    click.echo("  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in shown.items()))


@click.command("launch")
@_common_options
@click.option("--nodes", type=click.IntRange(min=1), default=None,
              help="Nodes (default: the process group's size, or 4 in one process).")
def _node_main(json_path, nodes, **kw) -> None:
    """One node of a torchrun launch (or all nodes in this process without one)."""
    import torch.distributed as dist

    distributed = "RANK" in os.environ and "WORLD_SIZE" in os.environ
    if distributed:
        dist.init_process_group("gloo")
        world = dist.get_world_size()
        if nodes is not None and nodes != world:
            raise click.UsageError(f"--nodes {nodes} differs from the {world} processes: one process per node")
        nodes = world
    try:
        summary = run(nodes=nodes or 4, distributed=distributed, **kw)
        if not distributed or dist.get_rank() == 0:
            _report(summary, json_path)
    finally:
        if distributed:
            dist.destroy_process_group()


@click.command("minimax")
@_common_options
@click.option("--nproc", type=click.IntRange(min=1), default=1, show_default=True,
              help="Processes, one per node, under torchrun on this machine (1: all nodes in this process).")
@click.option("--nodes", type=click.IntRange(min=1), default=4, show_default=True,
              help="Nodes of the in-process simulation (with --nproc > 1 the node count is --nproc).")
def minimax(nproc, nodes, json_path, **kw) -> None:
    """Decentralised minimax (doubly smoothed GDA and baselines) on a quadratic, robust logistic regression or
    AUC maximisation: in-process, or one process per node over torch.distributed (gloo, loopback)."""
    if nproc == 1:
        _report(run(nodes=nodes, **kw), json_path)
        return
    with socket.socket() as sk:  # a free loopback port for the rendezvous
        sk.bind(("127.0.0.1", 0))
        port = sk.getsockname()[1]
    args = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}", f"--master-port={port}",
            "-m", "fastnips.optim.launch"]
    for k, v in kw.items():
        if v is not None:
            args += [f"--{k.replace('_', '-')}", str(v)]
    if json_path:
        args += ["--json", json_path]
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    r = subprocess.run(args, env=env)
    if r.returncode != 0:
        raise click.ClickException(f"torchrun exited with status {r.returncode} (its output is above)")


if __name__ == "__main__":
    _node_main()
