"""``fastnips demo`` rows for the scene-graph loss: the factorised triplet distance against the explicit joint
(agreement and speed), and a short training of the baseline predictor with cross-entropy alone vs with the
Hellinger triplet loss added, on synthetic scenes."""

from __future__ import annotations

import time

__all__ = ["demo_scenegraph"]


def demo_scenegraph(seed: int, *, epochs: int = 25, values: bool = False) -> list[dict]:
    """Two rows: ``scenegraph metric`` (max |factorised - joint| and the speed-up at C = 20, R = 8, E = 2000) and
    ``scenegraph loss`` (test triplet recall@5 and graph Hellinger distance after ``epochs`` epochs on 100
    synthetic scenes, CE vs CE + Hellinger, one seed). Deterministic for a seed (fixed epochs, one thread).

    Parameters
    ----------
    seed : int
    epochs : int, default 25
    values : bool, default False
        Add a ``"values"`` dict of the numbers to each row (``fastnips demo --json``).

    Returns
    -------
    list of dict
        ``{"task", "backend", "result", "detail"}`` rows.

    Examples
    --------
    >>> [r["task"] for r in demo_scenegraph(0, epochs=1)]  # doctest: +SKIP
    ['scenegraph metric', 'scenegraph loss']
    """
    import torch
    import torch.nn.functional as F

    from . import SceneGraphPredictor, hellinger_triplet_loss, synthetic_scenes, triplet_hellinger, triplet_recall
    from .reference import triplet_bc_bruteforce

    g = torch.Generator().manual_seed(seed)
    C, R, E, N = 20, 8, 2000, 500
    sm = lambda *s: torch.softmax(2 * torch.randn(*s, generator=g, dtype=torch.float64), -1)
    P, Q, pe, qe = sm(N, C), sm(N, C), sm(E, R), sm(E, R)
    ei = torch.randint(0, N, (2, E), generator=g)
    t0 = time.perf_counter()
    fact = triplet_hellinger(P, pe, Q, qe, ei, squared=True)
    t1 = time.perf_counter()
    brute = 1 - triplet_bc_bruteforce(P, pe, Q, qe, ei)
    t2 = time.perf_counter()
    err = float((fact - brute).abs().max())
    rows = [{"task": "scenegraph metric", "backend": "reference", "result": f"{err:.0e} / {(t2 - t1) / (t1 - t0):.0f}x",
             "detail": f"max |factorised - joint| / speed-up, C={C} R={R} E={E}",
             "values": {"max_abs_err": err, "speedup": (t2 - t1) / (t1 - t0)}}]

    train = synthetic_scenes(100, n_classes=8, noise=0.7, seed=1000 + seed)
    test = synthetic_scenes(50, n_classes=8, noise=0.7, seed=2000 + seed)
    out = {}
    for name in ("ce", "ce+hell"):
        torch.manual_seed(seed)
        model = SceneGraphPredictor(train.x.shape[1], 8, 8)
        opt = torch.optim.Adam(model.parameters(), lr=3e-3)
        for _ in range(epochs * 4):  # full-batch steps
            zn, ze = model(train)
            loss = F.cross_entropy(zn, train.y) + F.cross_entropy(ze, train.edge_y)
            if name == "ce+hell":
                loss = loss + hellinger_triplet_loss(zn, ze, train.edge_index, train)
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            zn, ze = model(test)
            rec = triplet_recall(zn.softmax(1), ze.softmax(1), test.edge_index, test.y, test.edge_y, k=5)
            h = float(torch.sqrt(hellinger_triplet_loss(zn, ze, test.edge_index, test, node_weight=0.0,
                                                        reduction="none")).mean())
        out[name] = (rec, h)
    rows.append({"task": "scenegraph loss", "backend": "reference",
                 "result": f"{out['ce'][0]:.2f}/{out['ce+hell'][0]:.2f} {out['ce'][1]:.3f}/{out['ce+hell'][1]:.3f}",
                 "detail": f"R@5, graph H: CE / CE+Hellinger, {epochs * 4} steps, synthetic scenes",
                 "values": {k: {"recall@5": v[0], "graph_hellinger": v[1]} for k, v in out.items()}})
    if not values:
        for r in rows:
            r.pop("values")
    return rows
