"""Smoke run of bench/vision/eval_freqbias.py (1 seed, a few hundred images, 1-3 epochs) and of demo_vision."""

from __future__ import annotations

import json
import re

import pytest

from ..helpers import load_bench_script

torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")


def _load():
    return load_bench_script("vision/eval_freqbias.py")


def test_zoom_protocol_equals_nearest_upsampling():
    """patch 2 with the sum-pooled 4x4 kernel == patch 4 on the 2x nearest-upsampled image (protocol (b))."""
    mod = _load()
    g = torch.Generator().manual_seed(0)
    w = torch.randn(8, 1, 4, 4, generator=g, dtype=torch.float64)
    x = torch.rand(3, 1, 28, 28, generator=g, dtype=torch.float64)
    a = torch.nn.functional.conv2d(x, mod.sum_pool_patch(w), stride=2)
    b = torch.nn.functional.conv2d(torch.nn.functional.interpolate(x, scale_factor=2, mode="nearest"), w, stride=4)
    torch.testing.assert_close(a, b)


def test_filter_transfers():
    """refine keeps the continuous convolution (k'(2d) * 4 = k(d)); extend keeps the taps at the same offsets."""
    mod = _load()
    g = torch.Generator().manual_seed(1)
    cw = torch.randn(7, 4, 5, 2, generator=g, dtype=torch.float64)
    k = torch.fft.irfft2(torch.view_as_complex(cw), s=(7, 7), dim=(0, 1))
    d = torch.arange(-3, 4)
    for method, step, scale in (("refine", 2, 4.0), ("extend", 1, 1.0)):
        k2 = torch.fft.irfft2(torch.view_as_complex(mod.transfer_filter(cw, (7, 7), method)), s=(14, 14), dim=(0, 1))
        got = k2[(step * d[:, None]) % 14, (step * d[None, :]) % 14] * scale
        torch.testing.assert_close(got, k[d[:, None] % 7, d[None, :] % 7])
    assert mod.transfer_filter(cw, (7, 7), "bicubic").shape == (14, 8, 5, 2)
    with pytest.raises(ValueError, match="unknown method"):
        mod.transfer_filter(cw, (7, 7), "nearest")


@pytest.mark.parametrize("kind", ["freq-herm", "freq-sep", "swin", "none"])
def test_transfer_model_runs_and_refine_keeps_bias_samples(kind):
    mod = _load()
    model = mod.build(kind, 0).eval()
    x = torch.rand(2, 1, 28, 28)
    for proto in mod.PROTOCOLS:
        for method in mod.METHODS:
            new = mod.transfer_model(model, method, proto)
            assert new.grid == (14, 14)
            assert new(mod.transfer_images(x, proto)).shape == (2, 10)
    if kind != "none":
        b = model.blocks[0].attn.bias
        fine = mod.transfer_bias(b, "refine")()[0]  # (196, 196)
        coarse = b()[0]  # (49, 49)
        idx = torch.tensor([2 * (i // 7) * 14 + 2 * (i % 7) for i in range(49)])  # coarse token i -> fine 2p_i
        torch.testing.assert_close(fine[idx][:, idx], coarse, atol=1e-6, rtol=0)


def test_smoke_report_and_files(tmp_path, capsys):
    mod = _load()
    out = tmp_path / "res.json"
    report = mod.main(["--smoke", "--quiet", "--threads", "1", "--out", str(out)])
    assert report in capsys.readouterr().out
    for section in ("(a) test accuracy", "(b) MNIST-5k resolution transfer", "(c) learned per-layer gates",
                    "Command:", "torch "):
        assert section in report
    rows = [line for line in report.splitlines() if line.startswith("| ")]
    for label in mod.LABELS.values():
        assert sum(f"| {label} |" in line for line in rows) == 5  # (a) twice, (b) once, (c) twice
    assert "n/a" not in report
    res = json.loads(out.read_text())
    assert out.with_suffix(".png").stat().st_size > 1000
    # counts: hermitian = Swin = (2M-1)^2 per head, separable 2 * 2 (2M-1) (52 at M = 7)
    assert res["bias_per_head"]["mnist5k/freq-sep"] == 52
    assert res["bias_per_head"]["mnist5k/swin"] == 169
    assert res["bias_per_head"]["digits/freq-herm"] == 49  # digits: patch 2 -> M = 4
    assert res["bias_per_head"]["digits/none"] == 0
    assert res["params"]["mnist5k/freq-herm"] - res["params"]["mnist5k/none"] == res["bias_params"]["mnist5k/swin"]
    for key, accs in res["acc"].items():
        assert all(0.0 <= a <= 1.0 for a in accs), key
    # 10 epochs on 512 digits (160 steps): measured 20-44 % over seeds 0, 1 and the 4 biases (chance 10 %)
    digit_accs = [res["acc"][f"digits/{kind}"][0] for kind in mod.BIASES]
    assert min(digit_accs) > 0.12
    assert sum(digit_accs) / len(digit_accs) > 0.2
    assert len(res["transfer"]) == len(mod.BIASES) * len(mod.PROTOCOLS) * len(mod.METHODS)
    for gates in res["gates"].values():
        assert all(0.0 < g < 1.0 for blk in gates[0] for g in blk)


def test_demo_vision_rows():
    import torch

    from fastnips.vision.demo import demo_vision

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the demo runs it: tiny models are 5-20x slower on busy threads
    try:
        rows = demo_vision(0)  # the demo's 12 epochs, no wall-clock cap
        a, b = (re.sub(r"\d+\.\d s\)", "", demo_vision(1, epochs=2)[0]["detail"]) for _ in range(2))
    finally:
        torch.set_num_threads(threads)
    assert [r["task"] for r in rows] == ["vision", "vision bias params", "vision transfer"]
    for r in rows:
        assert set(r) == {"task", "backend", "result", "detail"}
    acc = float(rows[0]["result"].split()[1])
    assert acc > 0.85  # 10 classes: chance is 0.1; measured 0.950 at seed 0
    assert "test accuracy" in a
    assert a == b  # deterministic for a seed (the seconds aside)
    assert rows[1]["result"].startswith("52 vs 169")
    refine, bicubic = (float(t) for t in rows[2]["result"].split(" vs "))
    assert refine < 1e-12 < bicubic
