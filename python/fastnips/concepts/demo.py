"""``fastnips demo`` row for the concept decomposition: GRACE against the per-instance non-negative lasso on
planted concepts (recovery AUROC, held-out 10-NN overlap, and the encoding speed-up)."""

from __future__ import annotations

import time

__all__ = ["demo_concepts"]


def demo_concepts(seed: int, *, epochs: int = 10, values: bool = False) -> list[dict]:
    """One row ``concepts``: AUROC of GRACE / of the lasso on held-out planted data (d = 64, K = 100, 1,500 train,
    500 held-out), the 10-NN overlap of GRACE's codes, and how much faster encoding is than solving one lasso per
    sample. Deterministic for a seed except the speed-up (a timing).

    Parameters
    ----------
    seed : int
    epochs : int, default 10
    values : bool, default False
        Add a ``"values"`` dict of the numbers (``fastnips demo --json``).

    Returns
    -------
    list of dict

    Examples
    --------
    >>> [r["task"] for r in demo_concepts(0, epochs=1)]  # doctest: +SKIP
    ['concepts']
    """
    from . import GRACE, concept_auroc, knn_overlap, nonneg_lasso, planted_concepts

    p = planted_concepts(2000, seed=seed)
    Xtr, Xte, Ate = p.X[:1500], p.X[1500:], p.A[1500:]
    model = GRACE(epochs=epochs, seed=seed).fit(Xtr, p.C)
    t0 = time.perf_counter()
    A = model.transform(Xte)
    t1 = time.perf_counter()
    L = nonneg_lasso(Xte.double(), model.concepts_.double(), 0.01)
    t2 = time.perf_counter()
    v = {"auroc_grace": concept_auroc(A, Ate), "auroc_lasso": concept_auroc(L, Ate), "knn10": knn_overlap(Xte, A),
         "speedup": (t2 - t1) / max(t1 - t0, 1e-9)}
    row = {"task": "concepts", "backend": "reference",
           "result": f"{v['auroc_grace']:.3f}/{v['auroc_lasso']:.3f} {v['knn10']:.2f} {v['speedup']:.0f}x",
           "detail": "planted concepts: AUROC GRACE / lasso, GRACE 10-NN overlap, encode vs lasso speed-up"}
    if values:
        row["values"] = v
    return [row]
