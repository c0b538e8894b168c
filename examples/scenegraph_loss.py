"""The Hellinger triplet loss (``fastnips.scenegraph``) on a scene-graph predictor's logits.

1. The metric: the triplet Hellinger distance of two probabilistic scene graphs, factorised (O(C + R) per edge)
   against the explicit joint over (subject, predicate, object) (O(C^2 R)): the same numbers.
2. A small message-passing predictor (``SceneGraphPredictor``) trained on rule-generated synthetic 3-D scenes
   with cross-entropy plus the graph-level Hellinger loss; test triplet recall@5 (higher is better) and the
   graph-level triplet Hellinger distance (lower is better).
3. The same loss called the PyG way: ``edge_index`` and a batch object read by attribute (``y``, ``edge_y``,
   ``batch``).

Synthetic data only: the paper's 3DSSG scenes need a signed data agreement.
Run: ``python examples/scenegraph_loss.py`` (needs torch; about 10 s on 2 cores). Seeded, step-budgeted: the
numbers repeat for a given torch build and thread count.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import fastnips.scenegraph as sg
from fastnips.scenegraph.reference import triplet_bc_bruteforce

STEPS = 100


def metric_check() -> None:
    g = torch.Generator().manual_seed(0)
    sm = lambda *s: torch.softmax(2 * torch.randn(*s, generator=g, dtype=torch.float64), -1)
    P, Q, pe, qe = sm(50, 20), sm(50, 20), sm(300, 8), sm(300, 8)
    ei = torch.randint(0, 50, (2, 300), generator=g)
    fact = sg.triplet_hellinger(P, pe, Q, qe, ei, squared=True)
    joint = 1 - triplet_bc_bruteforce(P, pe, Q, qe, ei)
    print(f"factorised vs explicit joint, 300 edges, C=20, R=8: max difference {float((fact - joint).abs().max()):.1e}")


def train() -> None:
    torch.manual_seed(0)
    train_set = sg.synthetic_scenes(100, noise=0.7, seed=1)
    test_set = sg.synthetic_scenes(50, noise=0.7, seed=2)
    model = sg.SceneGraphPredictor(train_set.x.shape[1], n_classes=8, n_predicates=8)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    criterion = sg.HellingerTripletLoss(node_weight=0.5)
    for _ in range(STEPS):
        zn, ze = model(train_set)
        loss = F.cross_entropy(zn, train_set.y) + F.cross_entropy(ze, train_set.edge_y)
        loss = loss + criterion(zn, ze, train_set.edge_index, train_set)  # targets y / edge_y / batch by attribute
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        zn, ze = model(test_set)
        r5 = sg.triplet_recall(zn.softmax(1), ze.softmax(1), test_set.edge_index, test_set.y, test_set.edge_y, k=5)
        h = sg.hellinger_triplet_loss(zn, ze, test_set.edge_index, (test_set.y, test_set.edge_y),
                                      batch=test_set.batch, node_weight=0.0, reduction="none").sqrt().mean()
    print(f"after {STEPS} steps: test triplet recall@5 {r5:.3f} (higher is better), graph-level triplet "
          f"Hellinger {float(h):.3f} (lower is better)")


if __name__ == "__main__":
    torch.set_num_threads(1)
    metric_check()
    train()
