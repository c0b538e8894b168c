"""Smoke run of bench/diffusion/eval_fds.py (1 seed, 3 targets, 2 NFE budgets) and the diffusion demo rows."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from ..helpers import load_bench_script

pytest.importorskip("torch")
pytest.importorskip("sklearn")


def test_eval_fds_smoke(tmp_path):
    mod = load_bench_script("diffusion/eval_fds.py")
    out = tmp_path / "smoke.json"
    report = mod.main(["--smoke", "--quiet", "--threads", "1", "--out", str(out)])
    res = json.loads(out.read_text())
    cfg = mod.MODES["smoke"]
    # the NFE accounting: one evaluation per step, or 2 * steps - 1 for the Heun-based samplers
    for s in cfg["samplers"]:
        heun_like = mod.SAMPLERS[s][2]
        for b in cfg["nfes"]:
            assert res["nfe_used"][f"{s}/{b}"] == (2 * ((b + 1) // 2) - 1 if heun_like else b)
    for t in cfg["targets"]:
        assert f"### {t} (n = {cfg['n'][t]}): sw, exact-vs-exact floor" in report
        floor = np.mean(res["floor"][f"{t}/sw"])
        # a 10-step Euler (DDIM) run on an exact denoiser lands within a few floors of exact samples
        assert 0 < floor < np.mean(res["values"][f"{t}/sw/euler/10"]) < 8 * floor
    assert out.with_suffix(".png").stat().st_size > 10_000
    assert re.search(r"Driver effect on SW \(gmm2d\)", report)


def test_demo_diffusion_rows():
    from fastnips.diffusion.demo import demo_diffusion

    rows = demo_diffusion(0, n=500)
    assert [r["task"] for r in rows] == ["diffusion fds", "diffusion heun", "diffusion fds euler", "diffusion euler"]
    sw = {r["task"]: float(r["result"].split()[1]) for r in rows}
    assert sw["diffusion fds euler"] < sw["diffusion heun"]  # Heun's 3 steps from sigma 80 collapse; Euler's 6 do not
    again = demo_diffusion(0, n=500)
    assert [r["result"] for r in again] == [r["result"] for r in rows]  # deterministic for a seed
