r"""Template-variant understanding metrics: sibling matching (``template-1``), retrieval (``template-2``) and
clustering (``template-3``) of layouts by the template they come from (numpy / scipy only).

* Matching: a prediction per pair (same template or not). Accuracy; macro precision / recall / F1 over the
  labels present in either list (zero when undefined, scikit-learn's ``zero_division=0``); ROC AUC
  :math:`= (\sum_{\text{pos}} \mathrm{rank} - n_+(n_+ + 1)/2) / (n_+ n_-)` with mid-ranks for ties (the
  Mann-Whitney form of the trapezoidal ROC area); average precision
  :math:`\sum_n (R_n - R_{n-1}) P_n` over the distinct score thresholds (scikit-learn's definition).
* Retrieval: per query a ranking of candidate ids and the relevant ids (or id -> graded relevance). MRR, MAP
  (precision at each hit over the number of relevant ids), nDCG@k (linear gains, :math:`\log_2(i + 2)`
  discount) and recall@k, lica-gdb's definitions. Choice: a ranking that repeats an id keeps its first
  occurrence (lica-gdb would count a repeated relevant id twice in MAP and nDCG).
* Clustering: from the contingency table :math:`n_{ij}` of true groups (rows) by predicted clusters: ARI (pair
  counting), mutual information, NMI and AMI with the arithmetic-mean normaliser, homogeneity, completeness,
  V-measure and Fowlkes-Mallows, with scikit-learn's conventions for the degenerate cases (both labelings a
  single cluster: 1; one of them a single cluster: AMI 0; expected MI equal to its maximum: AMI 1). The
  expected mutual information of AMI is the hypergeometric sum, vectorised with ``gammaln`` over a
  (groups x clusters x overlap) grid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from scipy.special import gammaln
from scipy.stats import rankdata

from ._checks import as_finite, check_k, same_length
from .understanding import label_scores

__all__ = ["clustering_scores", "contingency", "matching_scores", "retrieval_scores"]

_EPS = np.finfo(np.float64).eps


def _auc(scores: np.ndarray, y: np.ndarray) -> float:
    npos, nneg = int(y.sum()), int((~y).sum())
    if npos == 0 or nneg == 0:
        return float("nan")
    r = rankdata(scores)
    return float((r[y].sum() - npos * (npos + 1) / 2) / (npos * nneg))


def _ap(scores: np.ndarray, y: np.ndarray) -> float:
    if not y.any():
        return float("nan")
    order = np.argsort(-scores, kind="mergesort")
    s, yy = scores[order], y[order]
    last = np.r_[np.flatnonzero(np.diff(s) != 0), len(s) - 1]  # the end of each tie group
    tps = np.cumsum(yy)[last].astype(np.float64)
    prec = tps / (last + 1)
    rec = tps / tps[-1]
    return float(np.sum(np.diff(np.r_[0.0, rec]) * prec))


def matching_scores(pred: Sequence, gt: Sequence, scores: Sequence | None = None) -> dict[str, float]:
    """Sibling-matching metrics (same template: 1, different: 0), lica-gdb's ``template-1``.

    Parameters
    ----------
    pred : sequence
        Predicted labels per pair (compared as strings with ``gt``).
    gt : sequence of {0, 1}
        True labels.
    scores : sequence of float, optional
        Confidence that each pair matches, for ``auc_roc`` and ``average_precision``; by default the predicted
        labels themselves as numbers (what lica-gdb does).

    Returns
    -------
    dict
        ``accuracy``, ``precision``, ``recall``, ``f1`` (macro), ``auc_roc``, ``average_precision`` (NaN when
        ``gt`` holds one class only; lica-gdb reports 0.0 there).

    Examples
    --------
    >>> r = matching_scores([1, 0, 1, 1], [1, 0, 0, 1])
    >>> r["accuracy"], r["auc_roc"]
    (0.75, 0.75)
    """
    same_length(pred, gt, "pred", "gt")
    lab = label_scores(pred, gt)
    out = {k: lab[k] for k in ("accuracy", "precision", "recall", "f1")}
    try:
        s = as_finite([float(x) for x in (pred if scores is None else scores)], "scores")
        y = np.array([int(g) for g in gt]) == 1
    except (TypeError, ValueError) as e:
        if scores is not None:
            raise ValueError(f"scores: expected one finite number per pair ({e})") from None
        return out  # non-numeric predictions: no ranking metrics, as in lica-gdb
    same_length(s, y, "scores", "gt")
    out["auc_roc"], out["average_precision"] = _auc(s, y), _ap(s, y)
    return out


def _gains(ranked: Sequence, relevant: object) -> tuple[list, np.ndarray, dict]:
    """(the ranking without repeats, its hit flags, id -> relevance)."""
    rel = dict(relevant) if isinstance(relevant, Mapping) else dict.fromkeys(relevant, 1)
    items = list(dict.fromkeys(ranked))
    return items, np.array([1.0 if i in rel else 0.0 for i in items]), rel


def retrieval_scores(ranked: Sequence[Sequence], relevant: Sequence, ks: Sequence[int] = (1, 5, 10)
                     ) -> dict[str, float]:
    """Layout-retrieval metrics (module docstring), means over queries, lica-gdb's ``template-2``.

    Parameters
    ----------
    ranked : sequence of sequence
        Per query, the candidate ids, most similar first.
    relevant : sequence
        Per query, the relevant ids (a list or set) or a mapping id -> graded relevance (nDCG uses the grades).
    ks : sequence of int
        Cut-offs of ``ndcg@k`` and ``recall@k``.

    Returns
    -------
    dict
        ``mrr``, ``map``, ``ndcg@k``, ``recall@k``.

    Examples
    --------
    >>> retrieval_scores([["a", "b", "c"]], [["b"]], ks=(1,))
    {'mrr': 0.5, 'map': 0.5, 'ndcg@1': 0.0, 'recall@1': 0.0}
    """
    same_length(ranked, relevant, "ranked", "relevant")
    ks = [check_k(k, "ks") for k in ks]
    nq = len(ranked)
    out = {"mrr": 0.0, "map": 0.0, **{f"ndcg@{k}": 0.0 for k in ks}, **{f"recall@{k}": 0.0 for k in ks}}
    for lst, rel in zip(ranked, relevant):
        items, hit, rmap = _gains(lst, rel)
        pos = np.flatnonzero(hit)
        if pos.size:
            out["mrr"] += 1.0 / (int(pos[0]) + 1)
            if rmap:
                out["map"] += float(np.sum(np.arange(1, pos.size + 1) / (pos + 1))) / len(rmap)
        gain = np.array([float(rmap.get(i, 0.0)) for i in items])
        ideal = np.sort(np.array(list(rmap.values()), dtype=np.float64))[::-1]
        for k in ks:
            disc = 1.0 / np.log2(np.arange(2, k + 2))
            idcg = float(np.sum(ideal[:k] * disc[: min(k, ideal.size)]))
            dcg = float(np.sum(gain[:k] * disc[: min(k, gain.size)]))
            out[f"ndcg@{k}"] += dcg / idcg if idcg > 0 else 0.0
            if rmap:
                out[f"recall@{k}"] += float(np.count_nonzero(hit[:k])) / len(rmap)
    return {k: v / nq for k, v in out.items()} if nq else out


def contingency(gt: Sequence, pred: Sequence) -> np.ndarray:
    """Contingency table: ``out[i, j]`` = items in true group i and predicted cluster j (sorted label order).

    Parameters
    ----------
    gt, pred : sequence of hashable
        True group and predicted cluster of each item.

    Returns
    -------
    numpy.ndarray of int64, shape (groups, clusters)

    Examples
    --------
    >>> contingency([0, 0, 1], ["a", "b", "b"]).tolist()
    [[1, 1], [0, 1]]
    """
    same_length(gt, pred, "gt", "pred")
    _, gi = np.unique(np.asarray([str(g) for g in gt]), return_inverse=True)
    _, pi = np.unique(np.asarray([str(p) for p in pred]), return_inverse=True)
    C = np.zeros((gi.max(initial=-1) + 1, pi.max(initial=-1) + 1), dtype=np.int64)
    np.add.at(C, (gi, pi), 1)
    return C


def _entropy(counts: np.ndarray) -> float:
    n = counts.sum()
    p = counts[counts > 0] / n
    return float(-np.sum(p * np.log(p))) if n else 0.0


def _mi(C: np.ndarray) -> float:
    n = C.sum()
    a, b = C.sum(1), C.sum(0)
    i, j = np.nonzero(C)
    v = C[i, j].astype(np.float64)
    return float(max(np.sum(v / n * (np.log(v) + np.log(n) - np.log(a[i] * 1.0) - np.log(b[j] * 1.0))), 0.0))


def _emi(C: np.ndarray) -> float:
    """Expected mutual information of two random labelings with the margins of ``C``."""
    N = int(C.sum())
    a, b = C.sum(1).astype(np.float64), C.sum(0).astype(np.float64)
    nij = np.arange(1, int(min(a.max(), b.max())) + 1, dtype=np.float64)
    A, B, K = a[:, None, None], b[None, :, None], nij[None, None, :]
    valid = (K >= np.maximum(1, A + B - N)) & (K <= np.minimum(A, B))
    Kc = np.where(valid, K, 1.0)
    logp = (gammaln(A + 1) + gammaln(B + 1) + gammaln(N - A + 1) + gammaln(N - B + 1) - gammaln(N + 1)
            - gammaln(Kc + 1) - gammaln(A - Kc + 1) - gammaln(B - Kc + 1)
            - gammaln(np.maximum(N - A - B + Kc, 0) + 1))
    term = Kc / N * (np.log(N * Kc) - np.log(A * B)) * np.exp(logp)
    return float(np.sum(np.where(valid, term, 0.0)))


def _ari_fmi(C: np.ndarray) -> tuple[float, float]:
    n = int(C.sum())
    a, b = C.sum(1), C.sum(0)
    ss = int(np.sum(C * C))
    tp = ss - n
    fp = int(np.dot(C, b).sum()) - ss
    fn = int(np.dot(C.T, a).sum()) - ss
    tn = n * n - fp - fn - ss
    ari = 1.0 if fn == 0 and fp == 0 else 2.0 * (tp * tn - fn * fp) / ((tp + fn) * (fn + tn) + (tp + fp) * (fp + tn))
    pk, qk = int(np.sum(b * b)) - n, int(np.sum(a * a)) - n
    fmi = float(np.sqrt(tp / pk) * np.sqrt(tp / qk)) if tp != 0 else 0.0
    return float(ari), fmi


def clustering_scores(pred: Sequence, gt: Sequence) -> dict[str, float]:
    """Agreement of a predicted clustering of layouts with their true template groups (``template-3``).

    Parameters
    ----------
    pred : sequence of hashable
        Predicted cluster of each layout (any labels; compared as strings).
    gt : sequence of hashable
        True template (sibling group) of each layout, same length.

    Returns
    -------
    dict
        ``ari``, ``nmi``, ``ami``, ``fowlkes_mallows``, ``homogeneity``, ``completeness``, ``v_measure``
        (definitions in the module docstring).

    Examples
    --------
    >>> r = clustering_scores([0, 0, 1, 1], ["x", "x", "y", "y"])
    >>> round(r["ari"], 12), round(r["nmi"], 12), round(r["v_measure"], 12)
    (1.0, 1.0, 1.0)
    """
    C = contingency(gt, pred)
    if C.size == 0:
        return dict.fromkeys(("ari", "nmi", "ami", "fowlkes_mallows", "homogeneity", "completeness",
                              "v_measure"), 1.0)
    hg, hp = _entropy(C.sum(1)), _entropy(C.sum(0))
    mi = _mi(C)
    ari, fmi = _ari_fmi(C)
    single = C.shape[0] == C.shape[1] == 1
    mean_h = (hg + hp) / 2
    nmi = 1.0 if single else mi / max(mean_h, _EPS)
    if single:
        ami = 1.0
    elif 1 in C.shape:
        ami = 0.0  # one side is a single cluster, the other is not
    else:
        emi = _emi(C)
        den = mean_h - emi
        # every labeling with these margins has the same MI (e.g. all singletons): a perfect match, 1 (the value
        # scikit-learn's eps guard is meant to give; it gets it by rounding)
        ami = 1.0 if abs(den) <= 1e-12 * max(1.0, mean_h) else (mi - emi) / den
    h = mi / hg if hg else 1.0
    c = mi / hp if hp else 1.0
    v = 0.0 if h + c == 0 else 2 * h * c / (h + c)
    return {"ari": ari, "nmi": float(nmi), "ami": float(ami), "fowlkes_mallows": fmi,
            "homogeneity": float(h), "completeness": float(c), "v_measure": float(v)}
