"""Data summarisation on scikit-learn's digits: learned pairwise submodular functions vs hand-set ones.

    OMP_NUM_THREADS=1 python bench/submodular/eval_summarise.py             # 3 seeds, about 3 minutes
    python bench/submodular/eval_summarise.py --quick                        # smoke run, seconds

Each seed splits the 1,797 digits (PCA-16 embedding, ``_data.py``) into a candidate pool of ``--pool`` items,
a validation half and a test half of the rest. A summary S (k candidates) is scored by the 1-nearest-prototype
accuracy of S on the test half (each test digit takes the label of its nearest summary item): the measure of a
summary that represents all classes. Rows:

* ``random`` -- the mean over 20 random k-subsets;
* ``facility location`` / ``feature-based sqrt`` -- greedy on the hand-set functions (RBF similarity of the pool
  to itself; the embedding min-max scaled to [0, 1]); with apricot installed, its FacilityLocationSelection
  on the same kernel is run too and must reach the same value;
* ``learned (FL values)`` -- :class:`fastnips.submodular.PairwiseSubmodularNet` fit to (set, facility-location
  value) pairs of random sets (sizes 2 to 2k), then greedy: can the model stand in for the hand-set function?
* ``learned (acc. values)`` -- the same net fit to (set, validation accuracy) pairs;
* ``learned (acc. preferences)`` -- the same net fit to (set, set) preferences by validation accuracy.

No label of the test half is used for fitting; the learned functions see the embedding of the pool and the
validation accuracy of random sets only.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _data import digits_embedding, nonneg_features, rbf_similarity

from fastnips.submodular import FacilityLocation, FeatureBased, greedy

ROWS = ("random", "facility location", "feature-based sqrt", "learned (FL values)", "learned (acc. values)",
        "learned (acc. preferences)")


def nn_accuracy(Zs: np.ndarray, ys: np.ndarray, Zq: np.ndarray, yq: np.ndarray) -> float:
    """Accuracy of labelling each query by its nearest prototype."""
    d2 = (Zq * Zq).sum(1)[:, None] + (Zs * Zs).sum(1)[None] - 2 * Zq @ Zs.T
    return float(np.mean(ys[np.argmin(d2, axis=1)] == yq))


def split(seed: int, pool: int):
    Z, y = digits_embedding(1797)
    idx = np.random.default_rng(seed).permutation(len(Z))
    rest = idx[pool:]
    half = len(rest) // 2
    return (Z[idx[:pool]], y[idx[:pool]]), (Z[rest[:half]], y[rest[:half]]), (Z[rest[half:]], y[rest[half:]])


def random_sets(rng, n: int, count: int, kmax: int) -> np.ndarray:
    masks = np.zeros((count, n), bool)
    for i, size in enumerate(rng.integers(2, kmax + 1, count)):
        masks[i, rng.choice(n, size, replace=False)] = True
    return masks


def learned(pool, val, kmax: int, seed: int, epochs: int, sets: int, target: str, fl=None):
    import torch

    from fastnips.submodular import PairwiseSubmodularNet, fit_preferences, fit_values

    (Zp, yp), (Zv, yv) = pool, val
    rng = np.random.default_rng(seed)
    x = torch.as_tensor(Zp, dtype=torch.float32)
    torch.manual_seed(seed)
    net = PairwiseSubmodularNet(Zp.shape[1], channels=4, rank=8, hidden=(8,))
    if target == "preferences":
        a, b = random_sets(rng, len(Zp), sets, kmax), random_sets(rng, len(Zp), sets, kmax)
        va = np.array([nn_accuracy(Zp[m], yp[m], Zv, yv) for m in a])
        vb = np.array([nn_accuracy(Zp[m], yp[m], Zv, yv) for m in b])
        better = (va >= vb)[:, None]
        fit_preferences(net, x, np.where(better, a, b), np.where(better, b, a), epochs=epochs, lr=0.03, seed=seed)
    else:
        masks = random_sets(rng, len(Zp), sets, kmax)
        vals = (fl.values(masks) if target == "facility" else
                np.array([nn_accuracy(Zp[m], yp[m], Zv, yv) for m in masks]))
        fit_values(net, x, masks, vals, epochs=epochs, lr=0.03, seed=seed)
    return net.export(x)


def one_seed(seed: int, pool_size: int, ks, epochs: int, sets: int, peer: bool = True) -> dict:
    pool, val, test = split(seed, pool_size)
    Zp, yp = pool
    score = {}
    fl = FacilityLocation(rbf_similarity(Zp))
    fb = FeatureBased(nonneg_features(Zp), concave="sqrt")
    fns = {"facility location": fl, "feature-based sqrt": fb,
           "learned (FL values)": learned(pool, val, 2 * max(ks), seed, epochs, sets, "facility", fl),
           "learned (acc. values)": learned(pool, val, 2 * max(ks), seed, epochs, sets, "accuracy"),
           "learned (acc. preferences)": learned(pool, val, 2 * max(ks), seed, epochs, sets, "preferences")}
    rng = np.random.default_rng(seed + 1000)
    for k in ks:
        score[("random", k)] = float(np.mean([nn_accuracy(Zp[s], yp[s], *test) for s in
                                              (rng.choice(len(Zp), k, replace=False) for _ in range(20))]))
        for name, fn in fns.items():
            sel = greedy(fn, k).selected
            score[(name, k)] = nn_accuracy(Zp[sel], yp[sel], *test)
        try:
            import apricot
        except ImportError:
            peer = False
        if not peer:
            continue
        ap = apricot.FacilityLocationSelection(k, metric="precomputed", optimizer="lazy").fit(fl.similarity)
        ours = greedy(fl, k)  # the same value (selections may differ after exact ties of the gains)
        assert abs(float(np.sum(ap.gains)) - ours.value) <= 1e-9 * ours.value, "apricot disagrees on facility location"
    return score


def report(scores: list[dict], ks, pool: int, args, secs: float) -> str:
    lines = [f"Command: python bench/submodular/eval_summarise.py {' '.join(args)}",
             f"Seeds {len(scores)}, pool {pool}, test 1-nearest-prototype accuracy (mean +/- std over seeds), "
             f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, {secs:.0f} s", "",
             "| summary | " + " | ".join(f"k = {k}" for k in ks) + " |",
             "|---|" + "---|" * len(ks)]
    for row in ROWS:
        cells = []
        for k in ks:
            v = np.array([s[(row, k)] for s in scores])
            cells.append(f"{v.mean():.3f} +/- {v.std():.3f}")
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a smoke run: 1 seed, pool 60, k = 5, few epochs, no apricot")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--pool", type=int, default=200)
    ap.add_argument("--epochs", type=int, default=150)
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    seeds, pool, ks, epochs, sets = ((1, 60, (5,), 5, 40) if args.quick else
                                     (args.seeds, args.pool, (10, 20, 40), args.epochs, 400))
    t0 = time.perf_counter()
    scores = [one_seed(s, pool, ks, epochs, sets, peer=not args.quick) for s in range(seeds)]
    text = report(scores, ks, pool, argv if argv is not None else sys.argv[1:], time.perf_counter() - t0)
    print(text)
    return text


if __name__ == "__main__":
    main()
