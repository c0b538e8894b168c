"""GRACE (``fastnips.concepts``): one global non-negative concept map for all embeddings, against one lasso per
embedding.

1. Planted data: embeddings built from 4 of 100 known concepts each (plus noise). GRACE is trained once on 1,500
   of them; on 500 held-out embeddings it recovers which concepts are active (AUROC, higher is better) about as
   well as a per-embedding non-negative lasso, and encodes thousands of times faster (one matrix product).
2. The Gram term: held-out Gram error (lower is better) with and without it, and the 10-NN overlap (higher is
   better), which moves little and not always in the same direction (bench/README.md has the 5-seed numbers).
3. Your data: ``load_embeddings("emb.npy")`` and ``load_concepts("words.txt", "concepts.npy")``, then
   ``GRACE().fit(X, C).top_concepts(X[:5], names)``.

Run: ``python examples/concepts_grace.py`` (needs torch; about 15 s on 2 cores). Seeded.
"""

from __future__ import annotations

import time

import torch

import fastnips.concepts as fc


def main() -> None:
    p = fc.planted_concepts(2000, seed=0)
    Xtr, Xte, Ate = p.X[:1500], p.X[1500:], p.A[1500:]
    names = [f"concept{i}" for i in range(p.C.shape[0])]
    for gram in (0.0, 50.0):
        model = fc.GRACE(gram=gram, epochs=10).fit(Xtr, p.C)
        A = model.transform(Xte)
        print(f"GRACE gram={gram:>4}: AUROC {fc.concept_auroc(A, Ate):.3f}, held-out Gram error "
              f"{fc.gram_error(Xte, A):.4f}, 10-NN overlap {fc.knn_overlap(Xte, A):.3f}, "
              f"{fc.sparsity(A):.1f} non-zeros per code")
    t0 = time.perf_counter()
    L = fc.nonneg_lasso(Xte.double(), model.concepts_.double(), 0.01)
    t1 = time.perf_counter()
    model.transform(Xte)
    t2 = time.perf_counter()
    print(f"per-instance lasso: AUROC {fc.concept_auroc(L, Ate):.3f}; encoding 500 embeddings took "
          f"{(t1 - t0) * 1e3:.0f} ms (lasso) vs {(t2 - t1) * 1e3:.1f} ms (GRACE)")
    print("top concepts of the first held-out embedding:", model.top_concepts(Xte[:1], names, k=4)[0])
    print("its true concepts:", [names[j] for j in torch.nonzero(Ate[0]).flatten().tolist()])


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
