"""Low-NFE frontier of the Fast-Driver Sampler against the samplers it competes with, on exact-score targets
(issue 6, item 5). Offline; every denoiser is exact, so differences are the samplers' own.

    OMP_NUM_THREADS=2 python bench/diffusion/eval_fds.py                # quick (default): 3 seeds, fewer samples
    python bench/diffusion/eval_fds.py --full --out bench/diffusion/results/fds.json   # 5 seeds (+ PNG plot)
    python bench/diffusion/eval_fds.py --smoke                          # seconds; what tests/diffusion runs

Targets (``TARGETS``; exact denoisers from :mod:`fastnips.diffusion.targets`):

* ``gmm2d``: ``GMM.grid2d()``, 25 equal modes on {-4,-2,0,2,4}^2, std 0.1 (float64);
* ``gmm32``, ``gmm3072``: ``GMM.random(d, 16, seed=0)`` (16 orthogonal, equally weighted modes, per-coordinate RMS
  0.5, std 0.1; 3072 = 3x32x32);
* ``kde-digits``, ``kde-mnist``: ``KDE.digits(s=0.05)`` / ``KDE.mnist5k(s=0.05)``, the exact optimal denoiser of a
  Gaussian kernel density on the training images (pixels mapped to [-1, 1]), 64-d and 784-d;
* ``unet-digits``: the learned-model check, the shipped EDM U-Net trained on the digits (``load_digits_denoiser``);
  reference = random subsets of all 1,797 digits, floor = SW between two disjoint random subsets of real digits.

Schedule: Karras et al. (EDM) with sigma_min 0.002, sigma_max 80, rho 7, for every sampler and target. NFE budget
``B`` in (4, 6, 8, 10, 14, 20): one-evaluation-per-step samplers take ``B`` steps; Heun-based ones (Heun, EDM,
FDS with the Heun base) take ``(B+1)//2`` steps = ``2*steps-1 <= B`` evaluations (the last step is Euler). The
evaluations are counted and the actual count is recorded.

Samplers (``SAMPLERS``): ``euler`` (= DDIM eta 0), ``heun`` (EDM Algorithm 1), ``edm`` (Algorithm 2: EDM's
ImageNet-64 churn settings S_churn 40, S_tmin 0.05, S_tmax 50, S_noise 1.003), ``euler_a`` (ancestral, eta 1),
``dpmpp_2m``, ``dpmpp_2m_sde`` (eta 1, midpoint); and FDS at gamma 0.2 (the sampler's default, churn at every
step), each on the Heun base (no suffix) and the Euler base (``_euler``): the time-shuffled Lorenz driver
(``fds``), the temporally correlated Lorenz driver (``fds_temporal``: shuffle "none", tau 0.5, normalised by its
Q), 4 fast driver values per step (``fds_nfast4``, temporal driver), and the ablations at the **same gamma and
equal Q = 1**: Gaussian (``fds_gauss``: this *is* EDM's churn at gamma 0.2), Rademacher and uniform
(``fds_rademacher``, ``fds_uniform``: bounded i.i.d.; on the Heun base only ``fds``, ``fds_temporal`` and
``fds_gauss``, since that base collapses at NFE <= 10 on this schedule). A churn sweep on the Euler base: gamma
0.05, 0.1, 0.414 for the time-shuffled Lorenz and the Gaussian driver (``fds_euler_g<gamma>``,
``fds_gauss_euler_g<gamma>``).

Metrics (:mod:`fastnips.diffusion.metrics`), each printed with its exact-vs-exact floor (``noise_floor``: the
metric between two independent exact sample sets of the same size): sliced Wasserstein-2 (all targets; the
main table), MMD (2-D), mode TV and in-mode fraction (GMMs), mean distance to the nearest training image (KDEs:
the exact KDE's own samples sit at about s*sqrt(d) from their training image).

Pairing: for a seed s, every sampler starts from the same x_T (drawn from a generator seeded 1,000,003 + s, so
that it is independent of the samplers' noise) and stochastic samplers get the seed s, so sampler differences
are paired; the tables give mean ± 95 % CI (t-interval over seeds) and, for FDS vs the best
baseline at each NFE, the paired difference with its CI.

This file is a script, not a pytest-benchmark file (bench/ collects bench_*.py only).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

from fastnips.diffusion import metrics as M
from fastnips.diffusion import samplers as S
from fastnips.diffusion.schedules import get_sigmas_karras
from fastnips.diffusion.targets import GMM, KDE

SIGMA_MIN, SIGMA_MAX, RHO = 0.002, 80.0, 7.0
NFES = (4, 6, 8, 10, 14, 20)
FDS_GAMMA = 0.2

#: name -> (function, kwargs, heun_like)
SAMPLERS = {
    "euler": (S.sample_euler, {}, False),
    "heun": (S.sample_heun, {}, True),
    "edm": (S.sample_edm, {}, True),
    "euler_a": (S.sample_euler_ancestral, {"eta": 1.0}, False),
    "dpmpp_2m": (S.sample_dpmpp_2m, {}, False),
    "dpmpp_2m_sde": (S.sample_dpmpp_2m_sde, {"eta": 1.0}, False),
}
_TEMPORAL = ("lorenz", {"shuffle": "none"})  # a Lorenz driver with options, built per shape and seed
for _base, _suffix in (("heun", ""), ("euler", "_euler")):
    for _name, _kw in (("fds", {"driver": "lorenz"}), ("fds_temporal", {"driver": _TEMPORAL}),
                       ("fds_nfast4", {"driver": _TEMPORAL, "n_fast": 4}), ("fds_gauss", {"driver": "gaussian"}),
                       ("fds_rademacher", {"driver": "rademacher"}), ("fds_uniform", {"driver": "uniform"})):
        if _base == "heun" and _name not in ("fds", "fds_temporal", "fds_gauss"):
            continue  # the Heun base collapses at NFE <= 10 on this schedule: its ablations say nothing there
        SAMPLERS[_name + _suffix] = (S.sample_fds, {**_kw, "gamma": FDS_GAMMA, "solver": _base}, _base == "heun")
#: churn sweep (Euler base, the better base at low NFE): time-shuffled Lorenz vs Gaussian at equal Q
for _g in (0.05, 0.1, 0.414):
    for _name, _drv in (("fds", "lorenz"), ("fds_gauss", "gaussian")):
        SAMPLERS[f"{_name}_euler_g{_g}"] = (S.sample_fds, {"driver": _drv, "gamma": _g, "solver": "euler"}, False)
BASELINES = ("euler", "heun", "edm", "euler_a", "dpmpp_2m", "dpmpp_2m_sde")
#: (sampler, its Gaussian-driver twin) for the driver-effect table
DRIVER_PAIRS = [("fds", "fds_gauss"), ("fds_temporal", "fds_gauss")]
DRIVER_PAIRS += [(f"{d}_euler", "fds_gauss_euler")
                 for d in ("fds", "fds_temporal", "fds_nfast4", "fds_rademacher", "fds_uniform")]
DRIVER_PAIRS += [(f"fds_euler_g{g}", f"fds_gauss_euler_g{g}") for g in (0.05, 0.1, 0.414)]
#: the lines of the plot (all samplers are in the tables)
PLOT_SAMPLERS = ("euler", "heun", "edm", "euler_a", "dpmpp_2m", "dpmpp_2m_sde", "fds", "fds_euler",
                 "fds_temporal_euler", "fds_gauss_euler")
TARGETS = ("gmm2d", "gmm32", "gmm3072", "kde-digits", "kde-mnist", "unet-digits")
#: per mode: samples per target, seeds, NFE budgets, samplers
MODES = {
    "smoke": dict(n={"gmm2d": 400, "gmm32": 200, "gmm3072": 64, "kde-digits": 100, "kde-mnist": 32, "unet-digits": 64},
                  seeds=1, nfes=(4, 10), targets=("gmm2d", "kde-digits", "unet-digits"),
                  samplers=("euler", "heun", "dpmpp_2m", "fds", "fds_temporal_euler", "fds_gauss_euler")),
    "quick": dict(n={"gmm2d": 2000, "gmm32": 1000, "gmm3072": 256, "kde-digits": 500, "kde-mnist": 200,
                     "unet-digits": 400},
                  seeds=3, nfes=NFES, targets=TARGETS, samplers=tuple(SAMPLERS)),
    "full": dict(n={"gmm2d": 4000, "gmm32": 2000, "gmm3072": 500, "kde-digits": 1000, "kde-mnist": 400,
                    "unet-digits": 800},
                 seeds=5, nfes=NFES, targets=TARGETS, samplers=tuple(SAMPLERS)),
}
SW_PROJ = 256


# ---------------------------------------------------------------------------------------------------
# targets and samplers


class RealDigits:
    """The learned-model target: the shipped digits U-Net as the denoiser, real digits (model space) as samples."""

    def __init__(self):
        from fastnips.data.images import digits
        from fastnips.diffusion.models import load_digits_denoiser

        self.net = load_digits_denoiser().eval()
        self.images = KDE.to_model_space(torch.from_numpy(digits("all")[0].copy()))

    def denoiser(self, x, sigma):
        return self.net(x, sigma)

    def sample(self, n, *, seed=0):
        """``n`` real digits drawn without replacement; seeds 2s and 2s+1 (the floor's pair) are disjoint."""
        perm = torch.randperm(len(self.images), generator=torch.Generator().manual_seed(seed // 2))
        half = len(self.images) // 2
        if n > half:
            raise ValueError(f"at most {half} real digits per set, asked for {n}")
        idx = perm[:n] if seed % 2 == 0 else perm[half:half + n]
        return self.images[idx]


def make_target(name: str):
    """(target, dtype): the exact-score target ``name`` of ``TARGETS``."""
    if name == "unet-digits":
        return RealDigits(), torch.float32
    if name == "gmm2d":
        return GMM.grid2d(), torch.float64
    if name == "gmm32":
        return GMM.random(32, 16, seed=0), torch.float32
    if name == "gmm3072":
        return GMM.random(3072, 16, seed=0, shape=(3, 32, 32)), torch.float32
    if name == "kde-digits":
        return KDE.digits(s=0.05), torch.float32
    if name == "kde-mnist":
        return KDE.mnist5k(s=0.05), torch.float32
    raise ValueError(f"unknown target {name!r}; available: {', '.join(TARGETS)}")


class Counted:
    """The target as a k-diffusion model, counting evaluations."""

    def __init__(self, target, dtype):
        self.target, self.dtype, self.calls = target, dtype, 0

    def __call__(self, x, sigma, **kw):
        self.calls += 1
        return self.target.denoiser(x, sigma).to(x.dtype)


def steps_for(nfe: int, heun_like: bool) -> int:
    return (nfe + 1) // 2 if heun_like else nfe


def run_sampler(name: str, model: Counted, x_T: torch.Tensor, nfe: int, seed: int) -> tuple[torch.Tensor, int]:
    """Samples of ``name`` from ``x_T`` with an NFE budget ``nfe`` (module docstring); (samples, evaluations)."""
    fn, kw, heun_like = SAMPLERS[name]
    kw = dict(kw)
    sigmas = get_sigmas_karras(steps_for(nfe, heun_like), SIGMA_MIN, SIGMA_MAX, RHO).to(x_T.dtype)
    if fn is S.sample_fds:
        drv = kw.pop("driver")
        if isinstance(drv, tuple):  # a Lorenz driver with options, built for this shape and seed
            from fastnips.diffusion.drivers import Lorenz

            drv = Lorenz(tuple(x_T.shape), seed=seed, **drv[1])
        kw.update(driver=drv, seed=seed)
    elif name in ("edm", "euler_a", "dpmpp_2m_sde"):
        kw["seed"] = seed
    model.calls = 0
    with torch.no_grad():
        out = fn(model, x_T.clone(), sigmas, disable=True, **kw)
    return out, model.calls


# ---------------------------------------------------------------------------------------------------
# metrics


def metric_fns(tname: str, target):
    """name -> (callable(samples, reference_samples) -> float). Two-sample metrics compare with a fresh exact set."""
    flat = lambda a: a.reshape(a.shape[0], -1)
    out = {"sw": lambda x, ref: M.sliced_wasserstein(flat(x), flat(ref), n_proj=SW_PROJ, seed=0)}
    if tname == "gmm2d":
        out["mmd"] = lambda x, ref: M.mmd_rbf(flat(x), flat(ref))
    if tname.startswith("gmm"):
        out["mode_tv"] = lambda x, ref: M.mode_tv(x, target)
        out["in_mode"] = lambda x, ref: M.in_mode_frac(x, target)
    elif isinstance(target, KDE):
        out["nn_train"] = lambda x, ref: M.nn_train_distance(x, target)
    return out


def ci95(values) -> tuple[float, float]:
    """(mean, half-width of the 95 % t-interval); half-width nan for one value."""
    v = np.asarray(values, dtype=np.float64)
    if v.size < 2:
        return float(v.mean()), float("nan")
    from scipy import stats

    return float(v.mean()), float(stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))


# ---------------------------------------------------------------------------------------------------
# the run


def run(cfg: dict, log) -> dict:
    res = {"values": {}, "floor": {}, "nfe_used": {}, "seconds": {}, "n": {}}
    seeds = list(range(cfg["seeds"]))
    for tname in cfg["targets"]:
        target, dtype = make_target(tname)
        n = cfg["n"][tname]
        res["n"][tname] = n
        model = Counted(target, dtype)
        fns = metric_fns(tname, target)
        shape = tuple(target.sample(1, seed=0).shape[1:])
        for mname, fn in fns.items():  # floor: the metric on exact samples against another exact set
            vals = []
            for s in seeds:
                a = target.sample(n, seed=10_000 + 2 * s).to(dtype)
                b = target.sample(n, seed=10_001 + 2 * s).to(dtype)
                vals.append(fn(a, b))
            res["floor"][f"{tname}/{mname}"] = vals
        t_target = time.perf_counter()
        for s in seeds:
            # x_T from its own stream: a Generator seeded with s would make the first Gaussian noise of the
            # samplers seeded with s (and of drivers.Gaussian(seed=s)) equal x_T / sigma_max
            g = torch.Generator().manual_seed(1_000_003 + s)
            x_T = torch.randn((n, *shape), generator=g, dtype=dtype) * SIGMA_MAX
            ref = target.sample(n, seed=20_000 + s).to(dtype)
            for sname in cfg["samplers"]:
                for nfe in cfg["nfes"]:
                    t0 = time.perf_counter()
                    x, used = run_sampler(sname, model, x_T, nfe, s)
                    res["seconds"].setdefault(f"{tname}/{sname}", []).append(time.perf_counter() - t0)
                    res["nfe_used"][f"{sname}/{nfe}"] = used
                    finite = bool(torch.isfinite(x).all())
                    for mname, fn in fns.items():
                        v = fn(x, ref) if finite else float("nan")
                        res["values"].setdefault(f"{tname}/{mname}/{sname}/{nfe}", []).append(v)
            log(f"  {tname} seed {s}: {time.perf_counter() - t_target:.0f} s")
    return res


# ---------------------------------------------------------------------------------------------------
# report


def _fmt(values, digits=3) -> str:
    m, h = ci95(values)
    if not math.isfinite(m):
        return "nan"
    return f"{m:.{digits}f}" if not math.isfinite(h) else f"{m:.{digits}f} ± {h:.{digits}f}"


def best_baseline(res, tname, mname, nfe, samplers, lower=True):
    cands = [b for b in BASELINES if b in samplers]
    key = lambda b: np.nanmean(res["values"][f"{tname}/{mname}/{b}/{nfe}"])
    vals = {b: key(b) for b in cands}
    vals = {b: v for b, v in vals.items() if math.isfinite(v)}
    if not vals:
        return None
    return min(vals, key=vals.get) if lower else max(vals, key=vals.get)


def format_report(header, res, cfg) -> str:
    lines = list(header)
    samplers, nfes = cfg["samplers"], cfg["nfes"]
    for tname in cfg["targets"]:
        mnames = sorted({k.split("/")[1] for k in res["values"] if k.startswith(tname + "/")},
                        key=["sw", "mmd", "mode_tv", "in_mode", "nn_train"].index)
        for mname in mnames:
            fl = res["floor"][f"{tname}/{mname}"]
            lines += ["", f"### {tname} (n = {res['n'][tname]}): {mname}, exact-vs-exact floor {_fmt(fl)}", "",
                      "| sampler | " + " | ".join(f"NFE {b}" for b in nfes) + " |",
                      "|---|" + "---|" * len(nfes)]
            for sname in samplers:
                cells = [_fmt(res["values"][f"{tname}/{mname}/{sname}/{b}"]) for b in nfes]
                lines.append(f"| {sname} | " + " | ".join(cells) + " |")
        # paired FDS - best baseline on SW
        lines += ["", f"Paired SW difference vs the best baseline at each NFE ({tname}; negative = better than it):",
                  "", "| sampler | " + " | ".join(f"NFE {b}" for b in nfes) + " |", "|---|" + "---|" * len(nfes)]
        for sname in samplers:
            if sname in BASELINES:
                continue
            cells = []
            for b in nfes:
                bb = best_baseline(res, tname, "sw", b, samplers)
                if bb is None:
                    cells.append("-")
                    continue
                d = np.asarray(res["values"][f"{tname}/sw/{sname}/{b}"]) - np.asarray(
                    res["values"][f"{tname}/sw/{bb}/{b}"])
                cells.append(f"{_fmt(d)} ({bb})")
            lines.append(f"| {sname} | " + " | ".join(cells) + " |")
        # the driver's own effect: each driver minus the Gaussian driver at the same base and gamma (paired)
        pairs = [(a, b) for a, b in DRIVER_PAIRS if a in samplers and b in samplers]
        if pairs:
            lines += ["", f"Driver effect on SW ({tname}): sampler minus the same sampler with the Gaussian driver "
                      "(paired; negative = the driver helps):", "",
                      "| pair | " + " | ".join(f"NFE {b}" for b in nfes) + " |", "|---|" + "---|" * len(nfes)]
            for a, g in pairs:
                cells = [_fmt(np.asarray(res["values"][f"{tname}/sw/{a}/{b}"])
                              - np.asarray(res["values"][f"{tname}/sw/{g}/{b}"])) for b in nfes]
                lines.append(f"| {a} - {g} | " + " | ".join(cells) + " |")
    used = ", ".join(f"{s}: " + "/".join(str(res["nfe_used"][f"{s}/{b}"]) for b in nfes) for s in samplers)
    lines += ["", f"Evaluations actually used per NFE budget: {used}."]
    return "\n".join(lines)


def plot(res, cfg, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    targets = cfg["targets"]
    fig, axes = plt.subplots(1, len(targets), figsize=(4.2 * len(targets), 3.6), squeeze=False)
    styles = {s: ("-" if s in BASELINES else "--") for s in cfg["samplers"]}
    for ax, tname in zip(axes[0], targets):
        for i, sname in enumerate(s for s in cfg["samplers"] if s in PLOT_SAMPLERS):
            mh = [ci95(res["values"][f"{tname}/sw/{sname}/{b}"]) for b in cfg["nfes"]]
            m = np.array([a for a, _ in mh])
            h = np.nan_to_num(np.array([b for _, b in mh]))
            ax.errorbar(cfg["nfes"], m, yerr=h, fmt=styles[sname] + "o", ms=3, capsize=2, label=sname,
                        color=f"C{i % 10}", alpha=0.9)
        fl = np.mean(res["floor"][f"{tname}/sw"])
        ax.axhline(fl, color="k", lw=0.8, ls=":", label="exact floor")
        ax.set_yscale("log")
        ax.set_xlabel("NFE")
        ax.set_title(f"{tname}: sliced W2")
    axes[0][0].set_ylabel("SW2 to exact samples (log)")
    axes[0][-1].legend(fontsize=6, loc="upper right", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="the default: 3 seeds, fewer samples")
    mode.add_argument("--full", action="store_true", help="5 seeds, more samples")
    mode.add_argument("--smoke", action="store_true", help="1 seed, 2 targets, 2 NFEs (tests)")
    ap.add_argument("--seeds", type=int, default=None, help="override the number of seeds")
    ap.add_argument("--targets", nargs="+", choices=TARGETS, default=None)
    ap.add_argument("--out", type=Path, default=None, help="write JSON here and the plot next to it (.png)")
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    name = "full" if args.full else "smoke" if args.smoke else "quick"
    cfg = dict(MODES[name])
    if args.seeds is not None:
        if args.seeds < 1:
            ap.error("--seeds must be >= 1")
        cfg["seeds"] = args.seeds
    if args.targets:
        cfg["targets"] = tuple(args.targets)
    torch.set_num_threads(args.threads)

    def log(msg):
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    res = run(cfg, log)
    wall = time.perf_counter() - t0
    cmd = "python bench/diffusion/eval_fds.py " + " ".join(sys.argv[1:] if argv is None else argv)
    header = [f"## Fast-Driver Sampler vs few-step samplers on exact-score targets ({name} mode, {cfg['seeds']} "
              "seed(s), mean ± 95 % CI)", "",
              f"Command: `{cmd.strip()}`  ",
              f"Date: {datetime.datetime.now().isoformat(timespec='seconds')}; torch {torch.__version__}; "
              f"{platform.machine()}, torch threads {args.threads}; wall time {wall:.0f} s  ",
              f"Schedule: Karras sigma_min {SIGMA_MIN}, sigma_max {SIGMA_MAX}, rho {RHO}; FDS gamma {FDS_GAMMA}."]
    report = format_report(header, res, cfg)
    print(report, flush=True)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        payload = {"mode": name, "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in cfg.items()},
                   "wall_s": wall, "command": cmd.strip(), "torch": torch.__version__, **res}
        args.out.write_text(json.dumps(payload, indent=1))
        plot(res, cfg, args.out.with_suffix(".png"))
    return report


if __name__ == "__main__":
    main()
