"""KL vs beta / beta_c for Dirichlet beta-VAEs, linear and deep decoders, on four data sets and several seeds:
where the closed-form beta_c (linear theory) predicts the observed collapse onset, and where it stops.

    OMP_NUM_THREADS=1 python bench/vae/eval_collapse.py --seeds 5     # the full figure (about 15 min, 1 core)
    python bench/vae/eval_collapse.py --quick                         # smoke: 1 data set, 1 seed, 3 ratios
    python bench/vae/eval_collapse.py --data wine --json wine.json    # one data set (run several in parallel),
    python bench/vae/eval_collapse.py --merge *.json                  # then the table and figure from the parts

Data: a synthetic linear mixture (n = 1000, D = 6, K = 3, a new draw per seed), an archetypal toy (n = 1000,
D = 4, 3 archetypes, a new draw per seed), scikit-learn's wine (178 x 13) and digits (1797 x 64), standardised.
Model: K = 3, alpha0 = 1, sigma2 = 1, likelihood summed over D. Linear decoder: closed-form ELBO, L-BFGS 300
iterations, collapsed when mean KL < 1e-4 nats. Deep decoder (tanh MLP, 64 hidden): sampled ELBO (1 draw),
on the first 500 rows, at 6 ratios, Adam lr 1e-2, 300 full-batch steps, collapsed when mean KL < 1e-2 nats
(Adam's noise floor). Writes results.json, table.md and vae_collapse.png to --out.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from fastnips.vae import archetypal_toy, beta_c, collapse_sweep, linear_mixture, standardized, top_eigenvalue

RATIOS = (0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 1.0, 1.05, 1.1, 1.3, 1.6, 2.0, 3.0)
DEEP_RATIOS = (0.5, 0.8, 0.9, 1.1, 1.3, 2.0)  # the sampled ELBO costs ~50x the closed form: fewer points
DEEP_N = 500  # and at most 500 rows (the first ones; beta_c is computed on the same rows)
K, ALPHA0, SIGMA2 = 3, 1.0, 1.0
TOL = {"linear": 1e-4, "deep": 1e-2}
DATA = ("linear mixture", "archetypal toy", "wine", "digits")


def data(name: str, seed: int) -> np.ndarray:
    if name == "linear mixture":
        return linear_mixture(1000, D=6, K=3, noise=0.3, seed=seed)
    if name == "archetypal toy":
        return archetypal_toy(1000, D=4, K=3, noise=0.05, seed=seed)
    return standardized(name)


def run(names, seeds: int, ratios, deep_ratios, steps: int, seed0: int = 0) -> dict:
    out = {}
    for name in names:
        res = {"beta_c": [], "lambda_max": []}
        for dec in ("linear", "deep"):
            res[dec] = []
        for s in range(seed0, seed0 + seeds):
            X = data(name, s)
            res["beta_c"].append(beta_c(X, K, ALPHA0, SIGMA2))
            res["lambda_max"].append(top_eigenvalue(X))
            for dec, rr, XX in (("linear", ratios, X), ("deep", deep_ratios, X[:DEEP_N])):
                sw = collapse_sweep(XX, K, alpha0=ALPHA0, sigma2=SIGMA2, ratios=rr, decoder=dec, steps=steps,
                                    tol=TOL[dec], first_seed=s, hidden=(64,), n_samples=1)
                res[dec].append(sw.kl[:, 0].tolist())
                print(f"{name} {dec} seed {s}: onset {sw.onset}; KL {np.round(sw.kl[:, 0], 4).tolist()}", flush=True)
        out[name] = res
    return out


def onset(kl_rows, ratios, tol) -> float:
    m = np.mean(kl_rows, axis=0)
    for i in range(len(ratios)):
        if (m[i:] < tol).all():
            return float(ratios[i])
    return float("nan")


def table(results: dict, ratios, deep_ratios, seeds: int) -> str:
    r, rd = list(ratios), list(deep_ratios)
    i09, i11, j09, j11 = r.index(0.9), r.index(1.1), rd.index(0.9), rd.index(1.1)
    lines = [f"Seeds: {seeds}; K = {K}, alpha0 = {ALPHA0}, sigma2 = {SIGMA2}; {time.strftime('%Y-%m-%d')}, "
             f"torch {torch.__version__}, 1 thread, shared machine", "",
             "| data | beta_c (mean) | onset, linear decoder (beta/beta_c) | KL at 0.9 / 1.1, linear | "
             "onset, deep decoder | KL at 0.9 / 1.1, deep |", "|---|---|---|---|---|---|"]
    for name, res in results.items():
        lin, deep = np.mean(res["linear"], 0), np.mean(res["deep"], 0)
        lines.append(f"| {name} | {np.mean(res['beta_c']):.3f} | {onset(res['linear'], r, TOL['linear'])} | "
                     f"{lin[i09]:.3g} / {lin[i11]:.2g} | {onset(res['deep'], rd, TOL['deep'])} | "
                     f"{deep[j09]:.3g} / {deep[j11]:.2g} |")
    return "\n".join(lines)


def plot(results: dict, ratios, deep_ratios, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(4 * len(results), 3.3), squeeze=False)
    for ax, (name, res) in zip(axes[0], results.items()):
        for dec, style, rr in (("linear", "-o", ratios), ("deep", "--s", deep_ratios)):
            kl = np.array(res[dec])
            ax.plot(rr, kl.mean(0), style, ms=3, label=f"{dec} decoder")
            ax.fill_between(rr, kl.min(0), kl.max(0), alpha=0.2)
        ax.axvline(1.0, color="k", lw=0.8)
        ax.set(title=name, xlabel="beta / beta_c", ylabel="mean KL (nats)", xticks=[0.5, 1, 1.5, 2, 2.5, 3])
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    p.add_argument("--seed0", type=int, default=0, help="first seed (with --json: a share of the seeds)")
    p.add_argument("--data", nargs="+", choices=DATA, default=list(DATA), help="run only these data sets")
    p.add_argument("--json", type=Path, help="write this run's results here only (no table, no figure)")
    p.add_argument("--merge", type=Path, nargs="+", help="make the table and figure from these --json files")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    if a.merge:
        parts = [json.loads(f.read_text()) for f in a.merge]
        results = {}
        for part in parts:  # parts may split one data set's seeds: concatenate them
            for k, v in part["results"].items():
                mine = results.setdefault(k, {key: [] for key in v})
                for key, rows in v.items():
                    mine[key] += rows
        results = {k: results[k] for k in DATA if k in results}
        ratios, deep = parts[0]["ratios"], parts[0]["deep_ratios"]
        a.seeds = len(next(iter(results.values()))["linear"])
    elif a.quick:
        names, ratios, deep, a.seeds, a.steps = ["linear mixture"], (0.9, 1.0, 1.1), (0.9, 1.1), 1, 40
    else:
        names, ratios, deep = a.data, RATIOS, DEEP_RATIOS
    if not a.merge:
        results = run(names, a.seeds, ratios, deep, a.steps, a.seed0)
    payload = {"ratios": list(ratios), "deep_ratios": list(deep), "results": results}
    if a.json:
        a.json.write_text(json.dumps(payload, indent=1))
        return ""
    report = table(results, ratios, deep, a.seeds)
    print(report)
    if not a.quick:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "results.json").write_text(json.dumps(payload, indent=1))
        (a.out / "table.md").write_text(report + "\n")
        plot(results, ratios, deep, a.out / "vae_collapse.png")
    return report


if __name__ == "__main__":
    main()
