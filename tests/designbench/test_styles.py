"""Colour parsing and CIEDE2000 (published test pairs of Sharma, Wu and Dalal 2005), and the style-completion /
colour-transfer metrics by hand and against lica-gdb's ``_evaluate_template_generation``."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from fastnips.designbench import delta_e, parse_color, srgb_to_lab, synthetic_templates, template_generation_metrics

# (Lab 1, Lab 2, Delta E 2000) from Sharma, Wu and Dalal (2005), Table 1 (pairs 1, 2, 3, 7, 17, 18, 25)
SHARMA = [((50.0, 2.6772, -79.7751), (50.0, 0.0, -82.7485), 2.0425),
          ((50.0, 3.1571, -77.2803), (50.0, 0.0, -82.7485), 2.8615),
          ((50.0, 2.8361, -74.0200), (50.0, 0.0, -82.7485), 3.4412),
          ((50.0, 0.0, 0.0), (50.0, -1.0, 2.0), 2.3669),
          ((50.0, 2.5, 0.0), (73.0, 25.0, -18.0), 27.1492),
          ((50.0, 2.5, 0.0), (61.0, -5.0, 29.0), 22.8977),
          ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644)]


def test_ciede2000_published_pairs():
    a = np.array([p[0] for p in SHARMA])
    b = np.array([p[1] for p in SHARMA])
    d = delta_e(a, b, lab=True)
    assert np.abs(d - [p[2] for p in SHARMA]).max() < 5e-5  # the table has 4 decimals
    assert np.allclose(delta_e(b, a, lab=True), d, atol=1e-12)  # symmetric


def test_colour_parsing_and_lab():
    assert parse_color("rgb(255, 0, 0)") == (1.0, 0.0, 0.0)
    assert parse_color("rgba(0, 0, 255, 0.5)") == (0.0, 0.0, 1.0)
    assert parse_color("#00ff00") == (0.0, 1.0, 0.0)
    assert parse_color("red") is None
    assert parse_color("#fff") is None
    assert parse_color(None) is None
    # sRGB red: L* 53.24, a* 80.09, b* 67.20 (the usual published value for D65)
    assert srgb_to_lab([1.0, 0.0, 0.0]) == pytest.approx([53.24, 80.09, 67.20], abs=0.02)
    assert float(delta_e([1.0, 0.0, 0.0], [0.0, 0.0, 0.0], method="rgb")) == 255.0
    with pytest.raises(ValueError, match="method"):
        delta_e([0, 0, 0], [0, 0, 0], method="cie76")


def test_style_completion_by_hand():
    gt = {"background": "rgb(0, 0, 0)", "components": [
        {"fontFamily": "Arimo", "fontSize": "20px", "color": "rgb(255, 0, 0)", "textAlign": "left", "opacity": 1},
        {"fontFamily": "Lato", "fontSize": "10px", "color": "rgb(0, 0, 255)", "textAlign": "center"}]}
    pr = {"background": "rgb(0, 0, 0)", "components": [
        {"fontFamily": "arimo ", "fontSize": "24px", "color": "#ff0000", "textAlign": "left", "opacity": 0.5},
        {"fontFamily": "Lato", "fontSize": "10px", "color": "rgb(0, 255, 0)", "textAlign": "right"}]}
    r = template_generation_metrics([pr, "not json"], [gt, gt], "style_completion")
    assert r["json_valid"] == 0.5
    assert r["font_exact_match"] == 1.0
    assert r["color_exact_match"] == 0.5
    assert r["text_align_accuracy"] == 0.5
    assert r["font_size_mae"] == 2.0
    assert r["opacity_mae"] == 0.5
    assert r["component_count_match"] == 1.0
    assert r["font_adherence"] == pytest.approx(1 / 3)  # raw names: {arimo , Lato} vs {Arimo, Lato}
    # predicted colours: black, red, green; true palette black, red, blue: green is far from all -> 2/3
    assert r["color_palette_adherence"] == pytest.approx(2 / 3)
    assert r["bg_color_distance"] == 0.0
    assert r["font_size_cosine"] == pytest.approx((10 * 10 + 24 * 20) / (np.hypot(10, 24) * np.hypot(10, 20)))


def test_color_transfer_by_hand():
    designated = {"components": [{"left": "0px", "top": "0px", "width": "10px", "height": "10px",
                                  "color": "rgb(255, 0, 0)"}]}
    bundle = {"designated_layout": designated, "target_palette": [{"color": "rgb(0, 0, 255)"},
                                                                  {"color": "rgb(255, 255, 0)"}]}
    pr = {"background": "rgb(0, 0, 254)", "components": [{"left": "0px", "top": "0px", "width": "10px",
                                                          "height": "10px", "color": "rgb(0, 255, 0)"}]}
    r = template_generation_metrics([pr], [bundle], "color_transfer")
    assert r["color_palette_adherence"] == 0.5  # the background is near blue, the text green is near nothing
    assert r["palette_coverage"] == 0.5
    assert r["position_fidelity"] == 0.0  # both position vectors are zero: cosine undefined -> 0
    assert r["area_fidelity"] == 1.0
    assert r["bg_color_distance"] == pytest.approx(float(delta_e([0, 0, 254 / 255], [0, 0, 1.0])))
    with pytest.raises(ValueError, match="task"):
        template_generation_metrics([pr], [bundle], "recolour")


def _perturbed(layout: dict, rng) -> dict:
    out = copy.deepcopy(layout)
    for c in out["components"]:
        if "fontSize" in c and rng.random() < 0.5:
            c["fontSize"] = f"{int(rng.integers(8, 90))}px"
        if "color" in c and rng.random() < 0.5:
            c["color"] = f"rgb({rng.integers(0, 256)}, {rng.integers(0, 256)}, {rng.integers(0, 256)})"
        if "textAlign" in c and rng.random() < 0.3:
            c["textAlign"] = "center"
        if "fontFamily" in c and rng.random() < 0.2:
            c["fontFamily"] = "Lato--400"
    if rng.random() < 0.3:
        out["components"] = out["components"][:-1]
    return out


def test_equals_lica_gdb_without_scikit_image(gdb_template):
    lays = synthetic_templates(8, 3, seed=5)
    rng = np.random.default_rng(0)
    gts = [lay.source for lay in lays]
    preds = [_perturbed(g, rng) for g in gts] + [{}, "garbage"]
    gts = gts + gts[:2]
    method = "ciede2000" if _has_skimage() else "rgb"  # lica-gdb's own fallback when scikit-image is missing
    ref = gdb_template._evaluate_template_generation(preds, gts, "style_completion")
    ours = template_generation_metrics(preds, gts, "style_completion", delta_e=method)
    for k, v in ours.items():
        assert v == pytest.approx(ref[k], abs=1e-9), k
    bundles = [{"designated_layout": g, "target_palette": [{"color": c} for c in ("rgb(10, 20, 30)", "#ffcc00")]}
               for g in gts]
    ref = gdb_template._evaluate_template_generation(preds, bundles, "color_transfer")
    ours = template_generation_metrics(preds, bundles, "color_transfer", delta_e=method)
    assert {"color_palette_adherence", "palette_coverage", "position_fidelity", "area_fidelity"} <= set(ours)
    for k, v in ours.items():
        assert v == pytest.approx(ref[k], abs=1e-9), k


def _has_skimage() -> bool:
    try:
        import skimage  # noqa: F401
    except ImportError:
        return False
    return True


def test_non_finite_lab_colours_are_refused():
    with pytest.raises(ValueError, match="finite"):  # was a silent NaN with lab=True
        delta_e([np.nan, 0, 0], [0, 0, 0], lab=True)
    with pytest.raises(ValueError, match="finite"):
        delta_e([0, 0, 0], [np.inf, 0, 0], method="rgb")
