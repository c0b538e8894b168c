"""The local-dataset reader: a hand-made copy in the published layout, lica-gdb's bundled verify fixture (the
real file formats), and the errors that name what is missing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fastnips.designbench import Layout, load_gdb, load_task


def _write(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj), encoding="utf-8")


def _dataset(root: Path) -> Path:
    comp = {"type": "TEXT", "left": "10px", "top": "20.5px", "width": "100px", "height": "30px",
            "fontFamily": "Cinzel--400", "transform": "rotate(-5.5deg)"}
    bg = {"type": "IMAGE", "width": "200px", "height": "100px", "transform": "none"}
    for lid, tid in (("L1", "T1"), ("L2", "T1"), ("L3", "T2")):
        _write(root / "lica-data" / "layouts" / tid / f"{lid}.json",
               {"width": 200, "height": 100, "components": [bg, comp]})
    _write(root / "lica-data" / "metadata.csv", "layout_id,template_id\nL1,T1\n")
    _write(root / "benchmarks" / "template" / "template-1.json",
           {"data_root": "lica-data", "layout_index": {"L1": "T1", "L3": "T2"},
            "pairs": [{"layout_a": "L1", "layout_b": "L3", "label": 0}]})
    _write(root / "benchmarks" / "layout" / "ComponentCount" / "samples.csv",
           "sample_id,image_path,prompt,expected_output\nL1,lica-data/images/T1/L1.png,count,2\n")
    return root


def test_hand_made_copy(tmp_path):
    ds = load_gdb(_dataset(tmp_path))
    assert sorted(ds.layouts) == ["L1", "L2", "L3"]
    assert ds.templates == {"T1": ["L1", "L2"], "T2": ["L3"]}
    assert ds.siblings("L1") == ["L2"]
    lay = ds.layouts["L1"]
    assert isinstance(lay, Layout)
    assert lay.template_id == "T1"
    assert lay.boxes.tolist() == [[0, 0, 200, 100], [10, 20.5, 100, 30]]
    assert lay.types == ("image", "text")
    assert lay.z.tolist() == [0, 1]
    assert lay.rotations.tolist() == [0.0, -5.5]
    assert lay.font_set() == {"cinzel"}
    assert ds.metadata == [{"layout_id": "L1", "template_id": "T1"}]
    assert ds.image_path("L3") == tmp_path / "lica-data" / "images" / "T2" / "L3.png"
    assert load_gdb(tmp_path / "lica-data", limit=1).templates == {"T1": ["L1"]}  # the core folder works too
    pairs = load_task(tmp_path, "template-1")
    assert pairs == [{"layout_a": "L1", "layout_b": "L3", "label": 0, "layout_index": {"L1": "T1", "L3": "T2"},
                      "data_root": "lica-data"}]
    rows = load_task(tmp_path, "layout-5")
    assert rows[0]["ground_truth"] == 2
    assert rows[0]["image_path"].endswith("lica-data/images/T1/L1.png")


def test_errors_name_what_is_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such folder"):
        load_gdb(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="lica-data/layouts"):
        load_gdb(tmp_path)
    (tmp_path / "lica-data" / "layouts").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="holds no"):
        load_gdb(tmp_path)
    _write(tmp_path / "lica-data" / "layouts" / "T" / "bad.json", "{not json")
    with pytest.raises(ValueError, match=r"bad\.json: not valid JSON"):
        load_gdb(tmp_path)
    _write(tmp_path / "lica-data" / "layouts" / "T" / "bad.json", {"no": "components"})
    with pytest.raises(ValueError, match="'components' list"):
        load_gdb(tmp_path)
    _write(tmp_path / "lica-data" / "layouts" / "T" / "bad.json",
           '{"width": 10, "height": 10, "components": [{"left": "NaN", "width": NaN, "height": "5px"}]}')
    with pytest.raises(ValueError, match=r"bad\.json: Layout\.boxes: box 0 has a NaN"):
        load_gdb(tmp_path)
    _write(tmp_path / "benchmarks" / "template" / "template-2.json", "[1, 2")
    with pytest.raises(ValueError, match=r"template-2\.json: not valid JSON"):
        load_task(tmp_path, "template-2")
    with pytest.raises(FileNotFoundError, match=r"ComponentDetection/samples\.csv"):
        load_task(tmp_path, "layout-7")
    with pytest.raises(FileNotFoundError, match=r"template-3\.json"):
        load_task(tmp_path, "template-3")
    with pytest.raises(ValueError, match="task must be one of"):
        load_task(tmp_path, "svg-1")


def test_lica_gdb_verify_fixture():
    gdb = pytest.importorskip("gdb", reason="lica-gdb ships a small copy of the dataset in its wheel")
    root = Path(gdb.__file__).parent / "_verify_data"
    if not (root / "lica-data" / "layouts").is_dir():
        pytest.skip("this lica-gdb version ships no verify fixture")
    ds = load_gdb(root)
    assert len(ds.layouts) == 4
    assert ds.templates["b88fde26-58c2-4d55-8b81-66601086a0d0"] == ["58Uk9hjmhLtCzWgSrIbB", "iZCigr3Lv9tAwHXDkxch"]
    lay = ds.layouts["B0zh8N0hAZYAFe3l2vmH"]
    assert len(lay) == 9
    assert lay.types[0] == "image"
    assert lay.boxes[0].tolist() == [0, 0, 1636.36, 1080.0]
    assert lay.font_set() == {"rufina", "cinzel"}
    assert ds.layouts["iZCigr3Lv9tAwHXDkxch"].rotations.min() == pytest.approx(-5.1646)
    pairs = load_task(root, "template-1")
    assert [p["label"] for p in pairs] == [1, 0]
    assert load_task(root, "layout-5")[0]["sample_id"] == "gT6aha6BT385mIz8ddgx"


def test_metrics_on_the_real_fixture_layouts_equal_lica_gdb(gdb_layout, gdb_template):
    """The four real layouts lica-gdb ships: detection of each layout from its sibling (or itself), and font-Jaccard
    matching of its template-1 pairs, scored by both implementations."""
    gdb = pytest.importorskip("gdb")
    root = Path(gdb.__file__).parent / "_verify_data"
    if not (root / "lica-data" / "layouts").is_dir():
        pytest.skip("this lica-gdb version ships no verify fixture")
    from fastnips.designbench import FontJaccardBaseline, detection_map, matching_scores

    ds = load_gdb(root)
    dets = lambda x: [{"bbox": b.tolist(), "label": t, "score": 1.0 - i / 100}
                      for i, (b, t) in enumerate(zip(x.boxes, x.types))]
    ids = sorted(ds.layouts)
    pred = [dets(ds.layouts[(ds.siblings(i) or [i])[0]]) for i in ids]
    gt = [dets(ds.layouts[i]) for i in ids]
    assert detection_map(pred, gt) == gdb_layout._detection_map(pred, gt)
    pairs = load_task(root, "template-1")
    labels, _ = FontJaccardBaseline().match([ds.layouts[p["layout_a"]] for p in pairs],
                                            [ds.layouts[p["layout_b"]] for p in pairs])
    y = [p["label"] for p in pairs]
    ref = gdb_template.PairwiseLayoutMatching().evaluate([str(v) for v in labels], y)
    ours = matching_scores([str(v) for v in labels], y)
    assert all(ours[k] == pytest.approx(ref[k], abs=1e-12) for k in ref)
    assert labels == y  # the two real sibling / non-sibling pairs are told apart by their fonts


def test_repeated_layout_ids_and_bad_limits_are_refused(tmp_path):
    """A layout id in two template folders used to replace the first layout silently (the templates still listed
    both); limit=-1 silently dropped the last layout."""
    root = _dataset(tmp_path)
    _write(root / "lica-data" / "layouts" / "T2" / "L1.json", {"width": 1, "height": 1, "components": []})
    with pytest.raises(ValueError, match=r"layout id 'L1' also in .*T1"):
        load_gdb(root)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="limit"):
            load_gdb(root, limit=bad)
