"""bench/scenegraph/eval_hellinger.py --quick runs and writes its tables; the baseline predictor and the evaluation
metrics on hand-computed cases."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from fastnips.scenegraph import SceneGraphPredictor, calibration_error, synthetic_scenes, triplet_recall  # noqa: E402

from ..helpers import load_bench_script  # noqa: E402


def test_quick_evaluation_writes_its_tables(tmp_path):
    ev = load_bench_script("scenegraph/eval_hellinger.py")
    assert ev.main(["--quick", "--out", str(tmp_path)]) == 0
    res = json.loads((tmp_path / "results.json").read_text())
    assert set(res) == set(ev.OBJECTIVES)
    for runs in res.values():
        assert len(runs) == 2
        for r in runs:
            assert all(0 <= r[k] <= 1 for k in ("node_acc", "pred_acc", "recall@1", "recall@5", "graph_hellinger"))
            assert r["recall@1"] <= r["recall@5"]
    assert "| ce+hellinger |" in (tmp_path / "results.md").read_text()


def test_triplet_recall_by_hand():
    p = torch.tensor([[0.7, 0.3], [0.4, 0.6]])
    e = torch.tensor([[0.2, 0.8]])
    ei = torch.tensor([[0], [1]])
    # triplet scores p0(s) e(r) p1(o): the best is (0, 1, 1) = 0.7 * 0.8 * 0.6
    assert triplet_recall(p, e, ei, torch.tensor([0, 1]), torch.tensor([1]), k=1) == 1.0
    # (1, 0, 0) = 0.3 * 0.2 * 0.4 = 0.024 is the worst of the 8: rank 7
    assert triplet_recall(p, e, ei, torch.tensor([1, 0]), torch.tensor([0]), k=7) == 0.0
    assert triplet_recall(p, e, ei, torch.tensor([1, 0]), torch.tensor([0]), k=8) == 1.0
    with pytest.raises(ValueError, match="k must be"):
        triplet_recall(p, e, ei, torch.tensor([1, 0]), torch.tensor([0]), k=0)


def test_calibration_error_by_hand():
    probs = torch.tensor([[0.9, 0.1], [0.9, 0.1], [0.6, 0.4], [0.6, 0.4]])
    labels = torch.tensor([0, 1, 0, 0])
    # bin of 0.9: accuracy 0.5, confidence 0.9 -> 0.4 x 1/2; bin of 0.6: accuracy 1, confidence 0.6 -> 0.4 x 1/2
    assert calibration_error(probs, labels) == pytest.approx(0.4)


def test_predictor_shapes_and_refusal():
    b = synthetic_scenes(2, seed=0)
    zn, ze = SceneGraphPredictor(b.x.shape[1], 8, 8)(b)
    assert zn.shape == (b.x.shape[0], 8)
    assert ze.shape == (b.edge_index.shape[1], 8)
    with pytest.raises(ValueError, match="n_classes"):
        SceneGraphPredictor(4, 0, 8)
