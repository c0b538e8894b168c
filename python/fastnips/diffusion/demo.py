"""``fastnips demo`` rows for the diffusion package (issue 6): the 2-D Gaussian-mixture target sampled at an NFE
budget of 6 with the Fast-Driver Sampler and with Heun, scored by sliced W2 and mode TV against exact samples."""

from __future__ import annotations

import time

__all__ = ["demo_diffusion"]


def demo_diffusion(seed: int, *, n: int = 2000, nfe: int = 6, values: bool = False) -> list[dict]:
    """Sample ``GMM.grid2d()`` (25 modes, std 0.1) from the same x_T with ``sample_fds`` (time-shuffled Lorenz
    driver, gamma 0.2) and ``sample_heun`` at ``nfe`` model evaluations, on the Karras schedule (0.002, 80, 7).

    Both use the Heun base with ``(nfe + 1) // 2`` steps (``2*steps - 1`` evaluations; the last step is Euler),
    and FDS on the Euler base and Euler itself with ``nfe`` steps are two more rows: at this budget the Euler base
    is the one that works (Heun collapses from sigma 80 in 3 steps; see bench/README.md, "Fast-Driver Sampler").
    Metrics: sliced W2 to an exact sample set of the same size (256 directions) and mode TV, each with its
    exact-vs-exact floor. Returns ``fastnips demo`` table rows (with a ``"values"`` dict of the numbers when
    ``values`` is true).
    """
    from .. import _optional

    torch = _optional.torch_or_none()
    if torch is None:
        return [{"task": "diffusion", "backend": "-", "result": "skipped", "detail": "torch is not installed"}]
    from .. import _backend
    from .metrics import mode_tv, sliced_wasserstein
    from .samplers import sample_euler, sample_fds, sample_heun
    from .schedules import get_sigmas_karras
    from .targets import GMM

    gmm = GMM.grid2d()
    g = torch.Generator().manual_seed(seed)
    x_T = torch.randn(n, 2, generator=g, dtype=torch.float64) * 80.0
    ref = gmm.sample(n, seed=2 * seed + 1)
    floor_sw = sliced_wasserstein(gmm.sample(n, seed=2 * seed + 2), ref)
    floor_tv = mode_tv(gmm.sample(n, seed=2 * seed + 2), gmm)
    steps = (nfe + 1) // 2
    heun_sig = get_sigmas_karras(steps, 0.002, 80.0, 7.0)
    runs = [
        ("diffusion fds", f"{2 * steps - 1} NFE, Heun base, time-shuffled Lorenz driver, gamma 0.2",
         lambda: sample_fds(gmm, x_T, heun_sig, driver="lorenz", gamma=0.2, seed=seed)),
        ("diffusion heun", f"{2 * steps - 1} NFE, EDM Algorithm 1 (deterministic)",
         lambda: sample_heun(gmm, x_T, heun_sig)),
        ("diffusion fds euler", f"{nfe} NFE, Euler base, time-shuffled Lorenz driver, gamma 0.2",
         lambda: sample_fds(gmm, x_T, get_sigmas_karras(nfe, 0.002, 80.0, 7.0), driver="lorenz", gamma=0.2,
                            solver="euler", seed=seed)),
        ("diffusion euler", f"{nfe} NFE, Euler (= DDIM, deterministic)",
         lambda: sample_euler(gmm, x_T, get_sigmas_karras(nfe, 0.002, 80.0, 7.0))),
    ]
    native = "cpp" if not _backend.why_unavailable("cpp") else "reference"
    rows = []
    for task, what, fn in runs:
        t0 = time.perf_counter()
        x = fn()
        dt = time.perf_counter() - t0
        sw, tv = sliced_wasserstein(x, ref), mode_tv(x, gmm)
        row = {"task": task, "backend": f"{native}+torch" if "fds" in task else "torch",
               "result": f"SW {sw:.3f} / TV {tv:.3f}",
               "detail": f"2-D GMM, 25 modes, n = {n}, {what}, {dt:.2f} s; floors (exact vs exact samples): "
                         f"SW {floor_sw:.3f}, TV {floor_tv:.3f}"}
        if values:
            row["values"] = {"sw": sw, "tv": tv, "sw_floor": floor_sw, "tv_floor": floor_tv,
                             "nfe": 2 * steps - 1 if "euler" not in task else nfe}
        rows.append(row)
    return rows
