"""``fastnips demo`` rows for the vision package: a tiny DDRViT on digits, bias parameter counts, and
the transfer error of the frequency ``refine`` vs a bicubic table resize."""

from __future__ import annotations

import copy
import math
import time

__all__ = ["demo_vision"]


def _skip(detail: str) -> list[dict]:
    return [{"task": "vision", "backend": "-", "result": "skipped", "detail": detail}]


def _optimizer(model, torch):
    """AdamW (lr 3e-3, wd 0.05) with timm's rule: no decay on norms, biases, gates, the position embedding and the
    attention bias."""
    skip = model.no_weight_decay()
    named = list(model.named_parameters())
    return torch.optim.AdamW([
        {"params": [p for n, p in named if p.ndim > 1 and n not in skip and ".attn.bias." not in n]},
        {"params": [p for n, p in named if p.ndim <= 1 or n in skip or ".attn.bias." in n], "weight_decay": 0.0},
    ], lr=3e-3, weight_decay=0.05)


def _train(model, Xtr, ytr, *, epochs: int, gen, torch) -> float:
    """``epochs`` epochs of batch-32 AdamW with a cosine schedule from 3e-3 and label smoothing 0.1 (a fixed
    number of steps: no wall-clock cap, so a seed gives the same model on any load). Returns the seconds."""
    import torch.nn.functional as F

    opt = _optimizer(model, torch)
    t0 = time.perf_counter()
    step = 0
    total = epochs * -(-len(Xtr) // 32)
    model.train()
    for _ in range(epochs):
        perm = torch.randperm(len(Xtr), generator=gen)
        for i in range(0, len(Xtr), 32):
            for g in opt.param_groups:
                g["lr"] = 3e-3 * 0.5 * (1 + math.cos(math.pi * step / total))
            idx = perm[i:i + 32]
            loss = F.cross_entropy(model(Xtr[idx]), ytr[idx], label_smoothing=0.1)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
    return time.perf_counter() - t0


def _transfer_errors(bias, m: int, torch) -> tuple[float, float, float]:
    """``max_d |k'(2d) - k(d)|`` over the learned offsets ``|d| < m`` for the frequency ``refine`` (x2) of
    ``bias`` and for the plain bicubic resize of its Swin table; and ``max |k|``."""
    from .swin import SwinRelPosBias

    bias = copy.deepcopy(bias).double()
    with torch.no_grad():
        k = bias.kernel()[0].double()  # (2m-1, 2m-1) periodic kernel, offsets d mod N
        n = bias.grid[0]
        fine = bias.transfer(mode="refine", factor=2).kernel()[0]
        d = torch.arange(-(m - 1), m)
        err_refine = float((fine[(2 * d[:, None]) % (2 * n), (2 * d[None, :]) % (2 * n)]
                            - k[d[:, None] % n, d[None, :] % n]).abs().max())
        table = bias.to_swin_table().double()  # ((2m-1)^2, 1), row (dh+m-1)(2m-1)+(dw+m-1)
        swin = SwinRelPosBias(1, m, init_std=0.0).double()
        swin.relative_position_bias_table.copy_(table)
        big = swin.resize(2 * m, mode="bicubic").relative_position_bias_table[:, 0].reshape(4 * m - 1, 4 * m - 1)
        c = 2 * m - 1  # centre (offset 0) of the (4m-1)^2 table
        err_bicubic = float((big[c + 2 * d[:, None], c + 2 * d[None, :]]
                             - table[:, 0].reshape(2 * m - 1, 2 * m - 1)).abs().max())
    return err_refine, err_bicubic, float(k.abs().max())


def demo_vision(seed: int, *, epochs: int = 12, values: bool = False) -> list[dict]:
    """Train ``DDRViT.tiny`` (frequency bias) on sklearn digits for ``epochs`` epochs; report three rows.

    1. test accuracy (8x8 digits, patch 2 -> 4x4 tokens = one window, ``epochs`` epochs of AdamW, batch 32,
       cosine schedule from 3e-3; the model's defaults: learned position embedding, xavier init). The run is
       step-budgeted, hence deterministic for a seed and a thread count (``fastnips demo`` runs it on one
       torch thread). Timings and accuracies: docs/notes/vision.md;
    2. bias parameters per head: frequency ``hermitian`` (lossless, = Swin), ``separable`` rank 2 and the Swin
       table, at Swin's M = 7 (52 vs 169: 3.25x) and at the model's window (M = 4);
    3. transfer error on the trained bias, 2x finer grid: ``max_d |k'(2d) - k(d)|`` over the learned offsets for
       ``FreqRelPosBias.transfer(mode="refine")`` vs ``SwinRelPosBias.resize(mode="bicubic")`` of the same
       table, absolute and relative to ``max |k|``.

    Returns a list of ``{"task", "backend", "result", "detail"}`` dicts (the ``fastnips demo`` table rows), with
    a ``"values"`` dict of the numbers as well when ``values`` is true (``fastnips demo --json``).

    Examples
    --------
    >>> [row["task"] for row in demo_vision(0, epochs=1)]  # doctest: +SKIP
    ['vision', 'vision bias params', 'vision transfer']
    """
    from .. import _optional

    torch = _optional.torch_or_none()
    if torch is None:
        return _skip("torch is not installed")
    try:
        from ..data.images import digits
        Xtr, ytr = digits("train")
        Xte, yte = digits("test")
    except ImportError as e:
        return _skip(f"digits need scikit-learn ({e})")

    from .freqbias import count_bias_params
    from .models import DDRViT, gate_report

    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    Xtr, ytr, Xte, yte = (torch.from_numpy(a.copy()) for a in (Xtr, ytr, Xte, yte))
    model = DDRViT.tiny(img_size=8, patch=2, bias="freq")
    if not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be a positive int, got {epochs!r}")
    train_s = _train(model, Xtr, ytr, epochs=epochs, gen=gen, torch=torch)
    model.eval()
    with torch.no_grad():
        acc = float((model(Xte).argmax(1) == yte).float().mean())
    gates = " ".join(f"{g['spectral_gate']:.2f}/{g['attention_gate']:.2f}" for g in gate_report(model))

    m = model.blocks[0].attn.window[0]
    counts = {M: (count_bias_params("freq", M, 1), count_bias_params("freq", M, 1, param="separable", rank=2),
                  count_bias_params("swin", M, 1)) for M in (7, m)}
    herm7, sep7, swin7 = counts[7]
    err_refine, err_bicubic, scale = _transfer_errors(model.blocks[0].attn.bias, m, torch)  # window m -> 2m
    rows = [
        {"task": "vision", "backend": "torch",
         "result": f"acc {acc:.3f}",
         "detail": f"DDRViT-tiny (freq bias, {sum(p.numel() for p in model.parameters()):,} params) on digits "
                   f"8x8, patch 2 = 4x4 tokens, {len(Xtr)} train / {len(Xte)} test, {epochs} epochs ({train_s:.1f} s)"
                   f": test accuracy {acc:.3f}; gates spectral/attention per block {gates}"},
        {"task": "vision bias params", "backend": "-",
         "result": f"{sep7} vs {swin7} ({swin7 / sep7:.2f}x)",
         "detail": f"per head at Swin's M = 7: freq separable r=2 {sep7}, freq hermitian {herm7} (lossless), "
                   f"Swin table {swin7}; at the model's window M = {m}: separable {counts[m][1]}, hermitian "
                   f"{counts[m][0]}, Swin {counts[m][2]}"},
        {"task": "vision transfer", "backend": "-",
         "result": f"{err_refine:.1e} vs {err_bicubic:.1e}",
         "detail": f"trained bias, {m}x{m} -> {2 * m}x{2 * m} window: max |bias at the original offsets after - "
                   f"before|, frequency refine {err_refine:.2e} vs bicubic table resize {err_bicubic:.2e} "
                   f"(max |bias| {scale:.2e})"},
    ]
    if values:
        numbers = [{"accuracy": acc, "epochs": epochs},
                   {"separable_m7": sep7, "hermitian_m7": herm7, "swin_m7": swin7},
                   {"refine": err_refine, "bicubic": err_bicubic, "max_abs_bias": scale}]
        for row, v in zip(rows, numbers):
            row["values"] = v
    return rows
