"""Matching, retrieval and clustering metrics: hand-computed values, scikit-learn's clustering and ranking
metrics, and lica-gdb's ``template-1`` / ``template-2`` / ``template-3`` evaluations on random inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fastnips.designbench import clustering_scores, contingency, matching_scores, retrieval_scores

KEYS = ("ari", "nmi", "ami", "fowlkes_mallows", "homogeneity", "completeness", "v_measure")


def test_clustering_by_hand():
    # gt {1,2}{3,4}, pred {1,2,3}{4}: 6 pairs; 2 together in gt, 3 in pred, 1 in both.
    # ARI = (1 - 2*3/6) / ((2+3)/2 - 2*3/6) = 0; FMI = 1 / sqrt(2 * 3)
    r = clustering_scores([0, 0, 0, 1], ["a", "a", "b", "b"])
    assert r["ari"] == pytest.approx(0.0, abs=1e-15)
    assert r["fowlkes_mallows"] == pytest.approx(1 / math.sqrt(6), abs=1e-15)
    # homogeneity: H(gt) = ln 2; H(gt | pred) = 3/4 * H(2/3, 1/3)
    h_cond = 0.75 * -(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3))
    assert r["homogeneity"] == pytest.approx(1 - h_cond / math.log(2), abs=1e-14)
    perfect = clustering_scores(["x", "x", "y"], [1, 1, 2])
    assert all(perfect[k] == pytest.approx(1.0, abs=1e-12) for k in KEYS)
    assert contingency([0, 0, 1], ["a", "b", "b"]).tolist() == [[1, 1], [0, 1]]


def test_clustering_equals_sklearn():
    M = pytest.importorskip("sklearn.metrics", reason="scikit-learn's clustering metrics are the reference")
    rng = np.random.default_rng(0)
    for _ in range(100):
        n = int(rng.integers(1, 40))
        g, p = rng.integers(0, int(rng.integers(1, 7)), n), rng.integers(0, int(rng.integers(1, 7)), n)
        r = clustering_scores(p, g)
        h, c, v = M.homogeneity_completeness_v_measure(g, p)
        ref = {"ari": M.adjusted_rand_score(g, p), "nmi": M.normalized_mutual_info_score(g, p),
               "ami": M.adjusted_mutual_info_score(g, p), "fowlkes_mallows": M.fowlkes_mallows_score(g, p),
               "homogeneity": h, "completeness": c, "v_measure": v}
        for k in KEYS:
            assert r[k] == pytest.approx(ref[k], abs=1e-9), (k, g, p)


def test_clustering_equals_lica_gdb(gdb_template):
    bench = gdb_template.LayoutClustering()
    rng = np.random.default_rng(1)
    preds, gts = [], []
    for _ in range(40):
        n = int(rng.integers(3, 20))
        gts.append(rng.integers(0, 4, n).tolist())
        preds.append(rng.integers(0, 4, n).tolist())
    ref = bench.evaluate(preds, gts)
    ours = {k: np.mean([clustering_scores(p, g)[k] for p, g in zip(preds, gts)]) for k in KEYS}
    for k in KEYS:
        assert ours[k] == pytest.approx(ref[k], abs=1e-9)


def test_matching_by_hand():
    r = matching_scores([1, 0, 1, 1], [1, 0, 0, 1], scores=[0.9, 0.2, 0.6, 0.4])
    assert r["accuracy"] == 0.75
    # class 1: P = 2/3, R = 1; class 0: P = 1, R = 1/2
    assert r["precision"] == pytest.approx((2 / 3 + 1) / 2)
    assert r["recall"] == pytest.approx(0.75)
    assert r["f1"] == pytest.approx((0.8 + 2 / 3) / 2)
    # scores: positives 0.9, 0.4; negatives 0.2, 0.6 -> 3 of 4 pairs ordered right
    assert r["auc_roc"] == 0.75
    # ranked 0.9 (+), 0.6 (-), 0.4 (+), 0.2: AP = 1/2 * 1 + 1/2 * 2/3
    assert r["average_precision"] == pytest.approx(0.5 + 1 / 3)
    assert math.isnan(matching_scores([1, 1], [1, 1])["auc_roc"])
    assert "auc_roc" not in matching_scores(["yes"], [1])


def test_matching_equals_sklearn_and_lica_gdb(gdb_template):
    M = pytest.importorskip("sklearn.metrics", reason="scikit-learn's ranking metrics are the reference")
    bench = gdb_template.PairwiseLayoutMatching()
    rng = np.random.default_rng(2)
    for _ in range(40):
        n = int(rng.integers(4, 40))
        y = np.r_[0, 1, rng.integers(0, 2, n - 2)]
        s = rng.integers(0, 5, n) / 4
        r = matching_scores(rng.integers(0, 2, n).tolist(), y.tolist(), scores=s.tolist())
        assert r["auc_roc"] == pytest.approx(M.roc_auc_score(y, s), abs=1e-12)
        assert r["average_precision"] == pytest.approx(M.average_precision_score(y, s), abs=1e-12)
        pred = [str(v) for v in rng.integers(0, 2, n)]
        ref, ours = bench.evaluate(pred, y.tolist()), matching_scores(pred, y.tolist())
        for k in ref:
            assert ours[k] == pytest.approx(ref[k], abs=1e-12), k


def test_retrieval_by_hand():
    r = retrieval_scores([["a", "b", "c", "d"]], [["b", "d"]], ks=(1, 4))
    assert r["mrr"] == 0.5
    assert r["map"] == pytest.approx((1 / 2 + 2 / 4) / 2)
    assert r["ndcg@4"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3)))
    assert r["recall@1"] == 0.0
    assert r["recall@4"] == 1.0
    graded = retrieval_scores([["a", "b"]], [{"a": 1, "b": 3}], ks=(2,))
    assert graded["ndcg@2"] == pytest.approx((1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3)))
    dup = retrieval_scores([["b", "b", "c"]], [["b"]], ks=(3,))  # a repeated id counts once
    assert dup["map"] == 1.0
    assert dup["ndcg@3"] == 1.0
    with pytest.raises(ValueError, match="positive integer"):
        retrieval_scores([["a"]], [["a"]], ks=(0,))


def test_retrieval_equals_lica_gdb(gdb_template):
    bench = gdb_template.LayoutRetrieval()
    rng = np.random.default_rng(3)
    ids = [f"layout{i:012d}" for i in range(30)]
    ranked, rel = [], []
    for q in range(50):
        cand = list(rng.permutation(ids)[: rng.integers(1, 20)])
        ranked.append(cand)
        rel.append(list(rng.choice(ids, int(rng.integers(0, 4)), replace=False)) if q % 5 else
                   {i: int(rng.integers(1, 4)) for i in rng.choice(ids, 3, replace=False)})
    ref, ours = bench.evaluate(ranked, rel), retrieval_scores(ranked, rel)
    assert set(ref) <= set(ours)
    for k in ref:
        assert ours[k] == pytest.approx(ref[k], abs=1e-12), k
