r"""A small U-Net, EDM preconditioning and training, and the shipped digits denoiser.

EDM preconditioning (Karras et al. 2022, Table 1): a raw network :math:`F_\theta` becomes the denoiser

.. math::

    D_\theta(x, \sigma) = c_{skip}(\sigma)\,x + c_{out}(\sigma)\,F_\theta(c_{in}(\sigma)\,x,\ c_{noise}(\sigma)),

    c_{skip} = \frac{\sigma_d^2}{\sigma^2 + \sigma_d^2},\quad
    c_{out} = \frac{\sigma\,\sigma_d}{\sqrt{\sigma^2 + \sigma_d^2}},\quad
    c_{in} = \frac{1}{\sqrt{\sigma^2 + \sigma_d^2}},\quad
    c_{noise} = \tfrac14 \ln\sigma,

trained with the loss :math:`\mathbb E_{\sigma, y, n}\big[\lambda(\sigma)\,\|D_\theta(y + \sigma n, \sigma) -
y\|^2\big]`, :math:`\ln\sigma \sim \mathcal N(P_{mean}, P_{std}^2)` with :math:`P_{mean} = -1.2`,
:math:`P_{std} = 1.2`, and :math:`\lambda(\sigma) = (\sigma^2 + \sigma_d^2)/(\sigma\sigma_d)^2` (which makes the
effective target of :math:`F_\theta` unit-variance at every :math:`\sigma`). The loss reported here is the mean
over pixels of :math:`\lambda\,(D - y)^2`, so a network that outputs :math:`F = 0` scores about 1.

:class:`SmallUNet` is a DDPM-style U-Net (Ho et al. 2020) cut down for 8x8 to 32x32 images: per resolution
``n_res`` residual blocks (GroupNorm, SiLU, 3x3 convs, the noise embedding added per channel after the first
conv), stride-2 conv downsampling, nearest-neighbour upsampling, skip connections by concatenation, no
attention, output conv initialised to zero (so an untrained :class:`EDMDenoiser` is :math:`c_{skip}x`). The noise
level enters through sinusoidal features of :math:`c_{noise}` and a two-layer MLP. Two configurations:

* :data:`DIGITS_CONFIG` -- ``SmallUNet(in_ch=1, base=24, mults=(1, 2), n_res=1)`` for 1x8x8 digits
  (8 -> 4 -> 8), 357,625 parameters (0.7 MB in fp16); the shipped checkpoint.
* :data:`CIFAR_CONFIG` -- ``SmallUNet(in_ch=3, base=32, mults=(1, 2, 2), n_res=1)`` for 3x32x32 inputs
  (32 -> 16 -> 8), 1,046,883 parameters, the model timed by the sampler-overhead benchmark (no trained weights
  ship for it; it runs with random weights).

The shipped checkpoint ``fastnips/data/digits_unet.pt`` (fp16 weights) is made by
``bench/diffusion/train_unet.py`` and loaded by :func:`load_digits_denoiser`. Images are in [-1, 1]
(``2 * pixel - 1``). The training run's settings and losses are in the loaded model's ``train_info``; the
recorded run, timings and sample quality are in docs/notes/diffusion.md.

Examples
--------
>>> import torch
>>> from fastnips.diffusion.models import load_digits_denoiser
>>> D = load_digits_denoiser()
>>> D(torch.zeros(2, 1, 8, 8), torch.full((2,), 0.5)).shape
torch.Size([2, 1, 8, 8])

References
----------
Karras, Aittala, Aila, Laine, "Elucidating the Design Space of Diffusion-Based Generative Models", NeurIPS 2022.
Ho, Jain, Abbeel, "Denoising Diffusion Probabilistic Models", NeurIPS 2020 (the U-Net layout).
Ronneberger, Fischer, Brox, "U-Net", MICCAI 2015.
"""

from __future__ import annotations

import copy
import math
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "CHECKPOINT_FORMAT",
    "CIFAR_CONFIG",
    "DIGITS_CONFIG",
    "EDMDenoiser",
    "SmallUNet",
    "edm_loss",
    "load_denoiser",
    "load_digits_denoiser",
    "save_denoiser",
    "train_edm",
]

#: The ``format`` field of a saved denoiser; :func:`load_digits_denoiser` refuses anything else.
CHECKPOINT_FORMAT = "fastnips.edm_unet/1"

#: The shipped digits model (1x8x8).
DIGITS_CONFIG = {"in_ch": 1, "base": 24, "mults": (1, 2), "n_res": 1}
#: The 3x32x32 model of the sampler-overhead benchmark.
CIFAR_CONFIG = {"in_ch": 3, "base": 32, "mults": (1, 2, 2), "n_res": 1}


def _groups(ch: int, groups: int) -> int:
    g = min(groups, ch)
    while ch % g:
        g -= 1
    return g


class _ResBlock(nn.Module):
    def __init__(self, cin: int, cout: int, emb_dim: int, groups: int, dropout: float):
        super().__init__()
        self.norm1 = nn.GroupNorm(_groups(cin, groups), cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.emb = nn.Linear(emb_dim, cout)
        self.norm2 = nn.GroupNorm(_groups(cout, groups), cout)
        self.drop = nn.Dropout(dropout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, emb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.emb(emb)[:, :, None, None]
        h = self.conv2(self.drop(F.silu(self.norm2(h))))
        return self.skip(x) + h


class SmallUNet(nn.Module):
    r"""A small noise-conditioned U-Net :math:`F_\theta(x, c_{noise})`: (B, C, H, W), (B,) -> (B, out_ch, H, W).

    H and W must be divisible by :math:`2^{\text{len(mults)}-1}`.

    Parameters
    ----------
    in_ch : int
        Image channels C.
    base : int
        Channels at full resolution; level i has ``base * mults[i]`` channels.
    mults : tuple of int
        Channel multipliers per resolution level (one level per entry; each after the first halves H and W).
    n_res : int
        Residual blocks per level on the way down (``n_res + 1`` on the way up, as in DDPM).
    emb_dim : int, optional
        Width of the noise embedding (default ``4 * base``).
    out_ch : int, optional
        Output channels (default ``in_ch``).
    groups : int
        GroupNorm groups (reduced to a divisor of the channel count where needed).
    dropout : float
    """

    def __init__(self, in_ch: int = 1, base: int = 32, mults: tuple[int, ...] = (1, 2), n_res: int = 1,
                 emb_dim: int | None = None, out_ch: int | None = None, groups: int = 8, dropout: float = 0.0):
        super().__init__()
        for name, v in (("in_ch", in_ch), ("base", base), ("n_res", n_res)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"SmallUNet: {name} must be a positive int, got {v!r}")
        mults = tuple(int(m) for m in mults)
        if not mults or any(m < 1 for m in mults):
            raise ValueError(f"SmallUNet: mults must be a non-empty tuple of positive ints, got {mults!r}")
        emb_dim = 4 * base if emb_dim is None else int(emb_dim)
        out_ch = in_ch if out_ch is None else int(out_ch)
        self.config = {"in_ch": in_ch, "base": base, "mults": mults, "n_res": n_res, "emb_dim": emb_dim,
                       "out_ch": out_ch, "groups": groups, "dropout": dropout}
        self.in_ch, self.levels = in_ch, len(mults)
        half = base // 2 if base >= 2 else 1
        # geometric frequencies 1 .. 1000 for c_noise = ln(sigma)/4 in about [-2, 1.5]
        self.register_buffer("freqs", torch.exp(torch.linspace(0.0, math.log(1000.0), half)), persistent=False)
        self.emb = nn.Sequential(nn.Linear(2 * half, emb_dim), nn.SiLU(), nn.Linear(emb_dim, emb_dim))
        self.conv_in = nn.Conv2d(in_ch, base * mults[0], 3, padding=1)
        self.down = nn.ModuleList()
        self.downsample = nn.ModuleList()
        chans = [base * mults[0]]
        ch = base * mults[0]
        for i, m in enumerate(mults):
            blocks = nn.ModuleList()
            for _ in range(n_res):
                blocks.append(_ResBlock(ch, base * m, emb_dim, groups, dropout))
                ch = base * m
                chans.append(ch)
            self.down.append(blocks)
            if i < len(mults) - 1:
                self.downsample.append(nn.Conv2d(ch, ch, 3, stride=2, padding=1))
                chans.append(ch)
        self.mid = nn.ModuleList([_ResBlock(ch, ch, emb_dim, groups, dropout),
                                  _ResBlock(ch, ch, emb_dim, groups, dropout)])
        self.up = nn.ModuleList()
        self.upsample = nn.ModuleList()
        for i, m in reversed(list(enumerate(mults))):
            blocks = nn.ModuleList()
            for _ in range(n_res + 1):
                blocks.append(_ResBlock(ch + chans.pop(), base * m, emb_dim, groups, dropout))
                ch = base * m
            self.up.append(blocks)
            if i > 0:
                self.upsample.append(nn.Conv2d(ch, ch, 3, padding=1))
        self.norm_out = nn.GroupNorm(_groups(ch, groups), ch)
        self.conv_out = nn.Conv2d(ch, out_ch, 3, padding=1)
        nn.init.zeros_(self.conv_out.weight)
        nn.init.zeros_(self.conv_out.bias)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, x: torch.Tensor, c_noise: torch.Tensor) -> torch.Tensor:
        if x.ndim != 4 or x.shape[1] != self.in_ch:
            raise ValueError(f"SmallUNet: x must be (B, {self.in_ch}, H, W), got {tuple(x.shape)}")
        f = 2 ** (self.levels - 1)
        if x.shape[2] % f or x.shape[3] % f:
            raise ValueError(f"SmallUNet: H and W must be divisible by {f}, got {tuple(x.shape[2:])}")
        c = c_noise.reshape(-1).to(x.dtype)
        if c.numel() == 1:
            c = c.expand(x.shape[0])
        ang = c[:, None] * self.freqs.to(x.dtype)
        emb = self.emb(torch.cat([ang.cos(), ang.sin()], 1))
        h = self.conv_in(x)
        skips = [h]
        for i, blocks in enumerate(self.down):
            for blk in blocks:
                h = blk(h, emb)
                skips.append(h)
            if i < self.levels - 1:
                h = self.downsample[i](h)
                skips.append(h)
        for blk in self.mid:
            h = blk(h, emb)
        for j, blocks in enumerate(self.up):
            for blk in blocks:
                h = blk(torch.cat([h, skips.pop()], 1), emb)
            if j < self.levels - 1:
                h = self.upsample[j](F.interpolate(h, scale_factor=2.0, mode="nearest"))
        return self.conv_out(F.silu(self.norm_out(h)))


class EDMDenoiser(nn.Module):
    r"""EDM-preconditioned denoiser :math:`D(x, \sigma) = c_{skip} x + c_{out} F(c_{in} x, c_{noise})` (module
    docstring), callable as a k-diffusion model ``model(x, sigma, **extra_args)``.

    Parameters
    ----------
    net : nn.Module
        :math:`F_\theta`, called as ``net(x_in, c_noise)`` with ``x_in`` (B, ...) and ``c_noise`` (B,).
    sigma_data : float
        :math:`\sigma_d`, the data standard deviation the preconditioning assumes (0.5 as in EDM).

    ``forward(x, sigma)``: ``x`` (B, C, H, W); ``sigma`` a scalar or (B,), :math:`\ge 0`. At :math:`\sigma = 0`
    (clamped to 1e-12 inside :math:`c_{noise}`), :math:`c_{out} = 0` and :math:`D = x`. The network runs in its
    own dtype; the result has ``x``'s dtype. ``extra_args`` are ignored (no class conditioning).
    """

    def __init__(self, net: nn.Module, sigma_data: float = 0.5):
        super().__init__()
        if not (math.isfinite(sigma_data) and sigma_data > 0):
            raise ValueError(f"EDMDenoiser: sigma_data must be > 0, got {sigma_data!r}")
        self.net = net
        self.sigma_data = float(sigma_data)
        self.train_info: dict = {}

    def precond(self, sigma: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(c_skip, c_out, c_in, c_noise)`` for a tensor of noise levels (same shape as ``sigma``)."""
        sd2 = self.sigma_data**2
        s2 = sigma * sigma
        c_skip = sd2 / (s2 + sd2)
        c_out = sigma * self.sigma_data / (s2 + sd2).sqrt()
        c_in = 1.0 / (s2 + sd2).sqrt()
        c_noise = sigma.clamp_min(1e-12).log() / 4.0
        return c_skip, c_out, c_in, c_noise

    def forward(self, x: torch.Tensor, sigma, **extra_args) -> torch.Tensor:
        p = next(self.net.parameters(), None)
        dt = p.dtype if p is not None else x.dtype
        xx = x.to(dt)
        if isinstance(sigma, torch.Tensor):
            s = sigma.to(device=x.device, dtype=dt).reshape(-1)
        else:
            s = torch.as_tensor(sigma, dtype=torch.float64).to(device=x.device, dtype=dt).reshape(-1)
        if s.numel() == 1:
            s = s.expand(x.shape[0])
        if s.numel() != x.shape[0]:
            raise ValueError(f"EDMDenoiser: sigma must be a scalar or have shape ({x.shape[0]},), got "
                             f"{tuple(torch.as_tensor(sigma).shape)}")
        c_skip, c_out, c_in, c_noise = self.precond(s)
        view = (-1,) + (1,) * (x.ndim - 1)
        f = self.net(c_in.reshape(view) * xx, c_noise)
        return (c_skip.reshape(view) * xx + c_out.reshape(view) * f).to(x.dtype)


def edm_loss(model: EDMDenoiser, y: torch.Tensor, *, generator: torch.Generator | None = None,
             P_mean: float = -1.2, P_std: float = 1.2, reduce: bool = True):
    r"""EDM training loss :math:`\lambda(\sigma)\,(D(y + \sigma n, \sigma) - y)^2`, mean over pixels (and over the
    batch when ``reduce``), :math:`\ln\sigma \sim \mathcal N(P_{mean}, P_{std}^2)`, :math:`n \sim \mathcal N(0, I)`,
    :math:`\lambda = (\sigma^2 + \sigma_d^2)/(\sigma\sigma_d)^2`. ``y``: (B, C, H, W) clean images in model space.
    Draws come from ``generator`` (on ``y``'s device) when given."""
    b = y.shape[0]
    rn = torch.randn(b, generator=generator, device=y.device, dtype=y.dtype)
    sigma = (rn * P_std + P_mean).exp()
    n = torch.randn(y.shape, generator=generator, device=y.device, dtype=y.dtype)
    sd = model.sigma_data
    weight = (sigma**2 + sd**2) / (sigma * sd) ** 2
    d = model(y + sigma.reshape(-1, 1, 1, 1) * n, sigma)
    per = weight * ((d - y) ** 2).reshape(b, -1).mean(1)
    return per.mean() if reduce else per


def _bar(total: int, enabled: bool):
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # tqdm is optional
        return None
    return tqdm(total=total, desc="train_edm", unit="step", leave=False)


def train_edm(model: EDMDenoiser, data, *, epochs: int = 100, batch_size: int = 128, lr: float = 2e-3,
              seed: int = 0, progress: bool = True, ema_decay: float | None = 0.999, warmup: int = 100,
              P_mean: float = -1.2, P_std: float = 1.2, max_steps: int | None = None) -> list[float]:
    r"""Train an :class:`EDMDenoiser` with the EDM loss (:func:`edm_loss`) on ``data``, in place.

    Adam (betas 0.9/0.999) at learning rate ``lr`` after a linear warm-up of ``warmup`` steps, then cosine decay to
    ``lr / 20`` at the end; gradient norm clipped at 1; each epoch is one seeded shuffle of the data in batches of
    ``batch_size`` (the last partial batch dropped). With ``ema_decay`` an exponential moving average of the
    weights is kept (EMA warm-up :math:`\min(\text{decay}, (1+t)/(10+t))`) and copied into the model at the end,
    as EDM samples from EMA weights. The model ends in eval mode with its run in ``model.train_info``.

    Parameters
    ----------
    model : EDMDenoiser
    data : torch.Tensor or array, (n, C, H, W)
        Training images in model space ([-1, 1]).
    epochs, batch_size : int
    lr : float
    seed : int
        Seeds the initial shuffle/noise generator (the model's initial weights are the caller's).
    progress : bool
        A tqdm bar (if tqdm is installed).
    max_steps : int, optional
        Stop after this many optimizer steps (for smoke tests).

    Returns
    -------
    list of float
        The training loss of every step (before the EMA).
    """
    y_all = torch.as_tensor(data)
    if y_all.ndim != 4 or y_all.shape[0] < 1:
        raise ValueError(f"train_edm: data must be (n, C, H, W), got {tuple(y_all.shape)}")
    if not bool(torch.isfinite(y_all).all()):
        raise ValueError("train_edm: data contains NaN or inf")
    p0 = next(model.parameters())
    y_all = y_all.to(device=p0.device, dtype=p0.dtype)
    n = y_all.shape[0]
    if batch_size < 1 or epochs < 1:
        raise ValueError("train_edm: epochs and batch_size must be >= 1")
    bs = min(int(batch_size), n)
    per_epoch = n // bs
    total = per_epoch * int(epochs) if max_steps is None else min(per_epoch * int(epochs), int(max_steps))
    gen = torch.Generator(device=p0.device).manual_seed(int(seed))
    cpu_gen = torch.Generator().manual_seed(int(seed))
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    ema = copy.deepcopy(model).eval() if ema_decay else None
    if ema is not None:
        for q in ema.parameters():
            q.requires_grad_(False)

    def lr_at(step: int) -> float:
        if step < warmup:
            return lr * (step + 1) / warmup
        prog = (step - warmup) / max(1, total - warmup)
        return lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * prog)))

    losses: list[float] = []
    bar = _bar(total, progress)
    t0 = time.perf_counter()
    model.train()
    step = 0
    try:
        while step < total:
            perm = torch.randperm(n, generator=cpu_gen).to(p0.device)
            for i in range(per_epoch):
                if step >= total:
                    break
                for g in opt.param_groups:
                    g["lr"] = lr_at(step)
                loss = edm_loss(model, y_all[perm[i * bs:(i + 1) * bs]], generator=gen, P_mean=P_mean, P_std=P_std)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                if ema is not None:
                    dec = min(float(ema_decay), (1 + step) / (10 + step))
                    with torch.no_grad():
                        for pe, pm in zip(ema.parameters(), model.parameters()):
                            pe.lerp_(pm, 1.0 - dec)
                losses.append(float(loss.detach()))
                step += 1
                if bar is not None:
                    bar.update(1)
                    if step % 20 == 0:
                        bar.set_postfix(loss=f"{sum(losses[-20:]) / 20:.4f}")
    finally:
        if bar is not None:
            bar.close()
    if ema is not None:
        model.load_state_dict(ema.state_dict())
    model.eval()
    model.train_info = {"epochs": int(epochs), "steps": step, "batch_size": bs, "lr": lr, "seed": int(seed),
                        "ema_decay": ema_decay, "warmup": warmup, "P_mean": P_mean, "P_std": P_std,
                        "n_train": n, "final_train_loss": sum(losses[-per_epoch:]) / len(losses[-per_epoch:]),
                        "seconds": time.perf_counter() - t0, "threads": torch.get_num_threads(),
                        "torch": str(torch.__version__)}
    return losses


def save_denoiser(model: EDMDenoiser, path, *, info: dict | None = None, half: bool = True) -> None:
    """Write ``{"format", "config", "sigma_data", "state_dict" (fp16 when half), "info"}`` with ``torch.save``
    (the net must be a :class:`SmallUNet`; ``info`` holds plain Python values only)."""
    if not isinstance(model.net, SmallUNet):
        raise TypeError("save_denoiser: model.net must be a SmallUNet")
    sd = {k: v.detach().to("cpu", torch.float16 if half else torch.float32).clone()
          for k, v in model.net.state_dict().items()}
    cfg = dict(model.net.config)
    cfg["mults"] = list(cfg["mults"])
    torch.save({"format": CHECKPOINT_FORMAT, "config": cfg, "sigma_data": model.sigma_data, "state_dict": sd,
                "info": dict(model.train_info if info is None else info)}, Path(path))


def load_denoiser(path, *, dtype: torch.dtype = torch.float32, device=None) -> EDMDenoiser:
    """Load a checkpoint written by :func:`save_denoiser` (eval mode, ``dtype``, on ``device``)."""
    ckpt = torch.load(Path(path), map_location="cpu", weights_only=True)
    if not isinstance(ckpt, dict) or ckpt.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"load_denoiser: {path} is not a {CHECKPOINT_FORMAT} checkpoint")
    cfg = dict(ckpt["config"])
    cfg["mults"] = tuple(cfg["mults"])
    net = SmallUNet(**cfg)
    net.load_state_dict({k: v.to(torch.float32) for k, v in ckpt["state_dict"].items()})
    model = EDMDenoiser(net, sigma_data=float(ckpt["sigma_data"]))
    model.train_info = dict(ckpt.get("info", {}))
    return model.to(device=device, dtype=dtype).eval()


def load_digits_denoiser(path=None, *, dtype: torch.dtype = torch.float32, device=None) -> EDMDenoiser:
    """The shipped EDM denoiser for 8x8 digits in [-1, 1] (``fastnips/data/digits_unet.pt``), or the checkpoint at
    ``path``: an :class:`EDMDenoiser` over a :class:`SmallUNet` (:data:`DIGITS_CONFIG`), in eval mode, with its
    training facts in ``train_info``. Call it as ``model(x, sigma)`` with ``x`` (B, 1, 8, 8)."""
    if path is not None:
        return load_denoiser(path, dtype=dtype, device=device)
    from importlib.resources import as_file, files

    with as_file(files("fastnips.data").joinpath("digits_unet.pt")) as p:
        if not p.is_file():
            raise FileNotFoundError(f"load_digits_denoiser: the shipped checkpoint {p} is missing "
                                    "(bench/diffusion/train_unet.py makes it)")
        return load_denoiser(p, dtype=dtype, device=device)
