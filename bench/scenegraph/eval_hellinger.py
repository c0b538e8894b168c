"""Evaluation of the Hellinger triplet loss (issue 24 item 1) on synthetic 3-D scenes: a small scene-graph predictor
(a message-passing GNN over the observed objects) trained with cross-entropy, with the Hellinger triplet loss,
and with both, over several seeds.

    python bench/scenegraph/eval_hellinger.py [--quick] [--seeds 5] [--epochs 40] [--out DIR]

Data: :func:`fastnips.scenegraph.synthetic_scenes` (rule-generated, honest synthetic data; the paper's 3DSSG is
not available here), 8 classes, categorical predicates (7 spatial + "none"), noise 0.7; train / test scenes
drawn from different seeds.

Metrics on the test scenes (mean ± std over seeds): node and predicate accuracy; triplet recall@1 and @5 (rank
of the true (subject, predicate, object) among all C x R x C triplets of the edge, scored by
P_i(s) P_e(r) P_j(o)); the graph-level triplet Hellinger distance (mean per graph of the loss with
node_weight=0, i.e. the triplet term alone); expected calibration error (15 bins) of the node classes and of the
predicates. Writes ``results.json`` and ``results.md`` to ``--out`` (default bench/scenegraph/results).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from fastnips.scenegraph import (
    SceneBatch,
    SceneGraphPredictor,
    calibration_error,
    hellinger_triplet_loss,
    synthetic_scenes,
    triplet_recall,
)

C, R = 8, 8
OBJECTIVES = ("ce", "hellinger", "ce+hellinger")


def objective(name: str, zn, ze, b) -> torch.Tensor:
    ce = F.cross_entropy(zn, b.y) + F.cross_entropy(ze, b.edge_y)
    if name == "ce":
        return ce
    h = hellinger_triplet_loss(zn, ze, b.edge_index, b)
    return h if name == "hellinger" else ce + h


def metrics(model, b) -> dict:
    with torch.no_grad():
        zn, ze = model(b)
        pn, pe = zn.softmax(1), ze.softmax(1)
        graph_h = hellinger_triplet_loss(zn, ze, b.edge_index, b, node_weight=0.0, reduction="none")
    rec = {f"recall@{k}": triplet_recall(pn, pe, b.edge_index, b.y, b.edge_y, k=k) for k in (1, 5)}
    return {"node_acc": float((pn.argmax(1) == b.y).float().mean()),
            "pred_acc": float((pe.argmax(1) == b.edge_y).float().mean()), **rec,
            "graph_hellinger": float(torch.sqrt(graph_h).mean()),
            "ece_node": calibration_error(pn, b.y), "ece_pred": calibration_error(pe, b.edge_y)}


def run(name: str, seed: int, train, test, epochs: int, batch_scenes: int = 25) -> dict:
    torch.manual_seed(seed)
    model = SceneGraphPredictor(train[0].x.shape[1], C, R)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    order = np.random.default_rng(seed)
    t0 = time.perf_counter()
    for _ in range(epochs):
        for k in order.permutation(len(train)):
            zn, ze = model(train[k])
            loss = objective(name, zn, ze, train[k])
            opt.zero_grad()
            loss.backward()
            opt.step()
    out = metrics(model, test)
    out["train_s"] = time.perf_counter() - t0
    return out


def table(results: dict) -> str:
    keys = ["node_acc", "pred_acc", "recall@1", "recall@5", "graph_hellinger", "ece_node", "ece_pred", "train_s"]
    arrows = {"graph_hellinger": "↓", "ece_node": "↓", "ece_pred": "↓", "train_s": "↓"}
    head = "| objective | " + " | ".join(f"{k} {arrows.get(k, '↑')}" for k in keys) + " |"
    lines = [head, "|" + "---|" * (len(keys) + 1)]
    for name, runs in results.items():
        cells = [f"{np.mean([r[k] for r in runs]):.3f} ± {np.std([r[k] for r in runs]):.3f}" for k in keys]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 seeds, 3 epochs, small data (smoke test)")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("results"))
    args = ap.parse_args(argv)
    if args.seeds < 1 or args.epochs < 1:
        ap.error("--seeds and --epochs must be >= 1")
    seeds, epochs, n_train, n_test = (2, 3, 50, 20) if args.quick else (args.seeds, args.epochs, 500, 200)
    torch.set_num_threads(1)
    kw = {"n_classes": C, "noise": 0.7}
    train_all = synthetic_scenes(n_train, seed=1000, **kw)
    train = [_subset(train_all, list(range(i, min(i + 25, n_train)))) for i in range(0, n_train, 25)]
    test = synthetic_scenes(n_test, seed=2000, **kw)
    results = {name: [run(name, s, train, test, epochs) for s in range(seeds)] for name in OBJECTIVES}
    args.out.mkdir(parents=True, exist_ok=True)
    md = (f"synthetic scenes: {n_train} train / {n_test} test, {C} classes, {R} predicates, noise 0.7; {epochs} "
          f"epochs, {seeds} seeds (mean ± std); torch {torch.__version__}, 1 thread\n\n" + table(results))
    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    (args.out / "results.md").write_text(md + "\n")
    print(md)
    return 0


def _subset(b, scenes: list[int]):
    """The scenes ``scenes`` of a SceneBatch, renumbered (mini-batches for training)."""
    keep = torch.isin(b.batch, torch.tensor(scenes))
    new_id = torch.full((len(keep),), -1, dtype=torch.long)
    new_id[keep] = torch.arange(int(keep.sum()))
    ekeep = keep[b.edge_index[0]]
    remap = {g: k for k, g in enumerate(scenes)}
    return SceneBatch(x=b.x[keep], pos=b.pos[keep], y=b.y[keep], edge_index=new_id[b.edge_index[:, ekeep]],
                      edge_y=b.edge_y[ekeep], edge_y_multi=b.edge_y_multi[ekeep],
                      batch=torch.tensor([remap[int(g)] for g in b.batch[keep]]), num_graphs=len(scenes))


if __name__ == "__main__":
    sys.exit(main())
