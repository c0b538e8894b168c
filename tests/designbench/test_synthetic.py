"""The synthetic template generator (determinism, structure, refusals), the Layout record's checks, and the
heuristic baselines on hand cases."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from fastnips.designbench import (
    ASPECT_RATIOS,
    Layout,
    area_depth,
    component_keys,
    prior_detections,
    ratio_label,
    sibling_placements,
    synthetic_templates,
    type_mean_boxes,
)


def test_generator_is_deterministic_and_structured():
    a, b = synthetic_templates(6, 3, seed=1), synthetic_templates(6, 3, seed=1)
    assert [x.source for x in a] == [y.source for y in b]
    assert synthetic_templates(6, 3, seed=2)[0].source != a[0].source
    assert len(a) == 18
    assert len({x.template_id for x in a}) == 6
    for lay in a:
        assert lay.types[0] == "image"
        assert lay.boxes[0, 0] == 0
        assert lay.boxes[0, 2] == lay.width == 1080
        assert ratio_label(lay.width, lay.height) in ASPECT_RATIOS
        assert any(t == "text" for t in lay.types)
        assert lay.font_set()
    # siblings share the canvas
    assert {(x.width, x.height) for x in a[:3]} == {(a[0].width, a[0].height)}
    with pytest.raises(ValueError, match="n_templates"):
        synthetic_templates(0)
    with pytest.raises(ValueError, match="font_change"):
        synthetic_templates(2, font_change=2.0)


def test_generator_does_not_depend_on_the_hash_seed():
    code = ("import json, fastnips.designbench as db; "
            "print(json.dumps([x.source for x in db.synthetic_templates(4, 3, seed=7, font_change=0.5)]))")
    outs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        outs.append(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                   check=True, timeout=120).stdout)
    assert outs[0] == outs[1]


def test_layout_record_checks():
    with pytest.raises(ValueError, match="one entry per box"):
        Layout([[0, 0, 1, 1]], ["text", "image"], [None])
    with pytest.raises(ValueError, match="canvas must be positive"):
        Layout([[0, 0, 1, 1]], ["text"], [None], width=0)
    with pytest.raises(ValueError, match="negative width"):
        Layout([[0, 0, -1, 1]], ["text"], [None])
    with pytest.raises(ValueError, match="'components' list"):
        Layout.from_gdb({"width": 1})


def test_heuristics_by_hand():
    lay = Layout([[0, 0, 100, 100], [10, 10, 50, 50], [0, 0, 80, 10], [5, 5, 5, 5]],
                 ["image", "image", "text", "group"], [None, None, "Lato", None], width=100, height=100)
    assert area_depth(lay).tolist() == [0.0, 1.0, 3.0, 2.0]
    assert component_keys(lay) == ["image0", "image1", "text0", "group0"]
    means = type_mean_boxes([lay])
    assert means["image"][0].tolist() == [0.05, 0.05, 0.75, 0.75]
    assert means["image"][1] == 0.5
    det = prior_detections(Layout([[0, 0, 1, 1]], ["text"], [None], width=200, height=100), [lay])
    assert {d["label"]: d["bbox"] for d in det}["image"] == [10.0, 5.0, 150.0, 75.0]
    sib = Layout([[0, 0, 50, 50]], ["image"], [None], width=50, height=50)
    got = sibling_placements(lay, sib, ["image0", "text0"], means)
    assert got["image0"] == [0.0, 0.0, 100.0, 100.0]  # scaled from the sibling's canvas
    assert got["text0"] == [0.0, 0.0, 80.0, 10.0]  # not in the sibling: the type mean
    assert sibling_placements(lay, None, ["logo0"])["logo0"] == [37.5, 37.5, 25.0, 25.0]
    assert np.all(area_depth(Layout(np.zeros((0, 4)), [], [])) == [])
