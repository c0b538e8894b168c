"""The font-Jaccard baseline: similarities by hand, the vectorised matrix against the pairwise definition, and
the baseline's matching / ranking / clustering on hand cases and on synthetic templates whose sibling groups
are known."""

from __future__ import annotations

import numpy as np
import pytest

from fastnips.designbench import (
    FontJaccardBaseline,
    Layout,
    clustering_scores,
    font_jaccard,
    font_jaccard_matrix,
    matching_scores,
    normalize_font,
    synthetic_templates,
)


def test_jaccard_by_hand():
    assert normalize_font(" Open  Sans--700") == "open sans"
    assert normalize_font("Open Sans--700", strip_weight=False) == "open sans--700"
    assert font_jaccard(["Cinzel--400", "Arimo--700"], ["arimo--400", "Rufina"]) == pytest.approx(1 / 3)
    assert font_jaccard([], []) == 0.0
    lay = Layout([[0, 0, 1, 1], [0, 0, 1, 1]], ["text", "image"], ["Lato--400", None])
    assert font_jaccard(lay, ["lato"]) == 1.0
    with pytest.raises(ValueError, match="the string"):
        font_jaccard("Lato", ["Lato"])


def test_matrix_equals_pairwise_definition():
    rng = np.random.default_rng(0)
    pool = [f"f{i}" for i in range(8)]
    sets = [list(rng.choice(pool, int(rng.integers(0, 4)), replace=False)) for _ in range(25)]
    M = font_jaccard_matrix(sets)
    for i, a in enumerate(sets):
        for j, b in enumerate(sets):
            A, B = set(a), set(b)
            assert M[i, j] == (len(A & B) / len(A | B) if A | B else 0.0)
    assert font_jaccard_matrix(sets[:3], sets[3:5]).shape == (3, 2)


def test_baseline_by_hand():
    fj = FontJaccardBaseline(threshold=0.5)
    labels, scores = fj.match([["a", "b"], ["a"]], [["b", "c"], ["a", "b"]])
    assert labels == [0, 1]
    assert scores == [pytest.approx(1 / 3), 0.5]
    assert fj.rank(["a", "b"], [["c"], ["a", "b"], ["a"]], ids=["x", "y", "z"]) == ["y", "z", "x"]
    groups = [["a", "b"], ["a", "b"], ["c"], ["c", "d"], ["e"], ["e"]]
    assert fj.cluster(groups, n_clusters=3).tolist() == [0, 0, 1, 1, 2, 2]
    assert fj.cluster(groups, n_clusters=1).tolist() == [0] * 6
    with pytest.raises(ValueError, match="threshold"):
        FontJaccardBaseline(threshold=1.5)
    with pytest.raises(ValueError, match="n_clusters"):
        fj.cluster(groups, n_clusters=0)


def test_siblings_with_unchanged_fonts_always_match():
    # font_change = 0: every pair of siblings has the same font set (J = 1) by construction, so the baseline
    # finds every true pair (recall of class 1 is exactly 1) at any threshold
    lays = synthetic_templates(12, 4, seed=3, font_change=0.0)
    by_t: dict[str, list] = {}
    for lay in lays:
        by_t.setdefault(lay.template_id, []).append(lay)
    a = [g[0] for g in by_t.values() for _ in range(3)]
    b = [x for g in by_t.values() for x in g[1:]]
    labels, scores = FontJaccardBaseline(threshold=1.0).match(a, b)
    assert labels == [1] * len(a)
    assert scores == [1.0] * len(a)
    truth = [lay.template_id for lay in lays]
    pred = FontJaccardBaseline().cluster(lays, n_clusters=12)
    r = clustering_scores(pred, truth)
    # a cluster never splits a template (homogeneity < 1 only through templates that share a font set)
    assert r["completeness"] == pytest.approx(1.0, abs=1e-12)
    assert matching_scores(labels, [1] * len(a))["accuracy"] == 1.0
