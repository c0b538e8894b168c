"""How the decentralised minimax methods scale with the condition number kappa (fastnips.optim, paper 11).

For each method (dsgda, gda, tt-gda, gt-gda) and kappa, on the nonconvex-PL quadratic (10 + 10 dimensions,
deterministic gradients, heterogeneous A_i) over an 8-node ring:

1. tune on seed 0: the step size and the method's own knob (dsgda: the primal anchor rate beta and the smoothing
   r1; tt-gda / gt-gda: the time-scale ratio tau) from a fixed grid, keeping the setting that reaches
   stationarity <= eps * stationarity(x0) in the fewest iterations (each later run of the grid is cut at the best
   count so far, which cannot change the minimum);
2. run the tuned setting on 5 problem seeds: iterations and in-process wall time to tolerance;
3. fit iterations = C * kappa^e over the kappas where every seed converged (fastnips.datacuration.fit_loglog,
   bootstrap interval over the seeds) and set e beside the paper's 3/2;
4. the same tuned settings at one kappa on the four topologies (ring, 2-D torus, Erdos-Renyi, complete);
5. real distributed runs: ``fastnips.optim.launch`` under torchrun with 4 and 8 processes (gloo, loopback),
   wall time per iteration and the final iterate checked equal to the in-process run;
6. a plot (iterations vs kappa, log-log, with the fitted lines and a kappa^(3/2) guide).

    OMP_NUM_THREADS=1 python bench/minimax/eval_kappa.py            # full (about 15 minutes on 2 cores)
    OMP_NUM_THREADS=1 python bench/minimax/eval_kappa.py --quick    # smoke run (seconds)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

from fastnips.datacuration import fit_loglog
from fastnips.optim import Quadratic, decentralized_minimax
from fastnips.optim.launch import build_topology

METHOD_GRIDS = {
    "gda": [{}],
    "tt-gda": [{"tau": t} for t in (4.0, 16.0, 64.0)],
    "gt-gda": [{"tau": t} for t in (4.0, 16.0, 64.0)],
    "dsgda": [{"beta": b, "r1": r} for b in (0.02, 0.1, 0.5) for r in (1.0, 2.0)],
}
LRS = (0.8, 0.4, 0.2, 0.1, 0.05)
FULL = {"kappas": (4, 8, 16, 32, 64), "seeds": 5, "max_steps": 30000, "nodes": 8, "lrs": LRS, "grid": None,
        "procs": (4, 8), "dist_steps": 300, "topo_kappa": 16, "eps": 1e-3}
QUICK = {"kappas": (4, 16), "seeds": 2, "max_steps": 1500, "nodes": 4, "lrs": (0.2,), "grid": 1,
         "procs": (2,), "dist_steps": 20, "topo_kappa": 4, "eps": 1e-2, "dist_methods": ("dsgda",)}


def iterations(kappa: float, seed: int, method: str, lr: float, extra: dict, cfg: dict, topology: str = "ring",
               cap: int | None = None) -> tuple[float, float]:
    """Iterations to stationarity <= eps * initial (inf if not within ``cap``), and the wall seconds."""
    p = Quadratic(float(kappa), nodes=cfg["nodes"], seed=seed)
    s0 = p.stationarity(p.x0, p.y0)
    steps = cap or cfg["max_steps"]
    t0 = time.perf_counter()
    r = decentralized_minimax(p, build_topology(topology, cfg["nodes"], seed), method=method, steps=steps, lr=lr,
                              record_every=20, tol=cfg["eps"] * s0, **extra)
    h = r.history[-1]
    return (h["step"] if h["stationarity"] <= cfg["eps"] * s0 else math.inf), time.perf_counter() - t0


def tune(method: str, kappa: float, cfg: dict) -> dict:
    """The grid setting with the fewest iterations on seed 0 (module docstring)."""
    best = {"iters": math.inf, "lr": None, "extra": None}
    grid = METHOD_GRIDS[method][: cfg["grid"]] if cfg["grid"] else METHOD_GRIDS[method]
    for lr in cfg["lrs"]:
        for extra in grid:
            cap = cfg["max_steps"] if math.isinf(best["iters"]) else int(best["iters"])
            n, _ = iterations(kappa, 0, method, lr, extra, cfg, cap=cap)
            if n < best["iters"]:
                best = {"iters": n, "lr": lr, "extra": extra}
    return best


def scaling(cfg: dict) -> dict:
    """Phases 1-3: tuned settings, per-seed iterations and seconds, fitted exponents."""
    out = {}
    for method in METHOD_GRIDS:
        rows = []
        for kappa in cfg["kappas"]:
            t = tune(method, kappa, cfg)
            runs = [iterations(kappa, s, method, t["lr"], t["extra"], cfg) if t["lr"] else (math.inf, 0.0)
                    for s in range(cfg["seeds"])]
            rows.append({"kappa": kappa, "lr": t["lr"], "extra": t["extra"], "iters": [r[0] for r in runs],
                         "seconds": [r[1] for r in runs]})
            print(f"{method:7s} kappa={kappa:4d} lr={t['lr']} {t['extra']} iters={rows[-1]['iters']}", flush=True)
        ok = [r for r in rows if all(math.isfinite(i) for i in r["iters"])]
        fit = None
        if len({r["kappa"] for r in ok}) >= 2:
            x = np.repeat([r["kappa"] for r in ok], cfg["seeds"]).astype(float)
            y = np.concatenate([r["iters"] for r in ok]).astype(float)
            f = fit_loglog(x, y, seed=0)
            fit = {"exponent": f.exponent, "ci": [f.ci_low, f.ci_high], "kappas": [r["kappa"] for r in ok]}
        out[method] = {"rows": rows, "fit": fit}
    return out


def topologies(cfg: dict, tuned: dict) -> list:
    """Phase 4: iterations at one kappa on every topology (settings tuned on the ring)."""
    rows = []
    kappa = cfg["topo_kappa"]
    for name in ("ring", "torus", "erdos-renyi", "complete"):
        gap = build_topology(name, cfg["nodes"], 0).spectral_gap
        for method, res in tuned.items():
            row = next(r for r in res["rows"] if r["kappa"] == kappa)
            n = iterations(kappa, 0, method, row["lr"], row["extra"], cfg, name)[0] if row["lr"] else math.inf
            rows.append({"topology": name, "spectral_gap": gap, "method": method, "iters": n})
    return rows


def distributed(cfg: dict, tuned: dict) -> list:
    """Phase 5: torchrun runs of ``fastnips.optim.launch``, checked against the in-process run."""
    from fastnips.optim.launch import run

    rows = []
    kappa = cfg["topo_kappa"]
    for nproc in cfg["procs"]:
        for method in cfg.get("dist_methods", tuned):
            row = next(r for r in tuned[method]["rows"] if r["kappa"] == kappa)
            kw = {"method": method, "lr": row["lr"] or 0.05, **(row["extra"] or {})}
            args = [f"--{k}={v}" for k, v in kw.items()] + [f"--kappa={kappa}", f"--steps={cfg['dist_steps']}"]
            with socket.socket() as sk:
                sk.bind(("127.0.0.1", 0))
                port = sk.getsockname()[1]
            out = Path(f"/tmp/fastnips_minimax_{os.getpid()}_{nproc}_{method}.json")
            env = {**os.environ, "OMP_NUM_THREADS": "1", "MASTER_ADDR": "127.0.0.1"}
            subprocess.run([sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}",
                            f"--master-port={port}", "-m", "fastnips.optim.launch", *args, f"--json={out}"],
                           check=True, env=env, capture_output=True, timeout=600)
            d = json.loads(out.read_text())
            out.unlink()
            s = run("quadratic", nodes=nproc, steps=cfg["dist_steps"], kappa=kappa, **kw)
            equal = bool(np.allclose(d["x"], s["x"], rtol=0, atol=1e-14))
            rows.append({"processes": nproc, "method": method, "ms_per_iter": 1e3 * d["seconds"] / d["steps"],
                         "ms_per_iter_in_process": 1e3 * s["seconds"] / s["steps"],
                         "floats_sent_per_iter": d["floats_sent_per_step"], "equal": equal})
            print(f"torchrun {nproc} {method}: {rows[-1]['ms_per_iter']:.2f} ms/iter equal={equal}", flush=True)
    return rows


def plot(res: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.2))
    for method, r in res.items():
        k = [row["kappa"] for row in r["rows"] if all(math.isfinite(i) for i in row["iters"])]
        if not k:
            ax.plot([], [], label=f"{method}: never reached the tolerance")
            continue
        med = [np.median(row["iters"]) for row in r["rows"] if row["kappa"] in k]
        lbl = f"{method}: e = {r['fit']['exponent']:.2f}" if r["fit"] else method
        ax.loglog(k, med, "o-", label=lbl)
    ks = np.array(sorted({row["kappa"] for r in res.values() for row in r["rows"]}), float)
    ax.loglog(ks, 300 * (ks / ks[0]) ** 1.5, "k:", label="kappa^(3/2) guide")
    ax.set_xlabel("kappa")
    ax.set_ylabel("iterations to tolerance (median over seeds)")
    ax.set_title("decentralised minimax, 8-node ring, tuned steps")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a smoke run in seconds")
    ap.add_argument("--out", default=str(Path(__file__).parent), help="folder for the JSON and the PNG")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    cfg = QUICK if args.quick else FULL
    t0 = time.perf_counter()
    res = {"config": {k: v for k, v in cfg.items()}, "scaling": scaling(cfg)}
    res["topologies"] = topologies(cfg, res["scaling"])
    res["distributed"] = distributed(cfg, res["scaling"])
    res["seconds"] = time.perf_counter() - t0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = "kappa_quick" if args.quick else "kappa"
    (out / f"{name}.json").write_text(json.dumps(res, indent=1, default=str))
    plot(res["scaling"], out / f"{name}.png")
    for method, r in res["scaling"].items():
        print(method, r["fit"])
    return res


if __name__ == "__main__":
    main()
