r"""A small DDR vision transformer (:class:`DDRViT`, timm-style) and the report of its learned gates.

.. math:: \mathrm{logits} = W_{\mathrm{head}}\,\mathrm{mean}_{\mathrm{tokens}}\,
          \mathrm{LN}\big(\mathrm{DDR}_L \circ \cdots \circ \mathrm{DDR}_1(\mathrm{PatchEmbed}(x) + P)\big)

with :math:`\mathrm{DDR}_\ell` the Dual-Domain Residual blocks of :mod:`fastnips.vision.blocks` and
:math:`P` a learned absolute position embedding (optional). :func:`gate_report` reads each block's learned
gates :math:`\sigma(a_s), \sigma(a_a)` after training.

The blocks (``SpectralMixer``, ``GatedAttention``, ``DDRBlock``, ``spectral_mix_reference``) live in
:mod:`fastnips.vision.blocks`; importing them from this module still works but is deprecated.

Paper: "Relative positional bias parameterized in the frequency domain" with Dual-Domain Residual blocks
(NeurIPS 2026). Measurements of the defaults: docs/notes/vision.md.
"""

from __future__ import annotations

import copy
import numbers
from dataclasses import dataclass, field, fields, replace
from typing import Any

import torch
from torch import nn

from .._compat import moved
from .blocks import DDRBlock as _DDRBlock

__all__ = [
    "DDRViT",
    "DDRViTConfig",
    "GateReport",
    "gate_report",
]

_BIAS_KINDS = ("freq", "swin", None)
_POS_EMBEDS = ("none", "learned")
_WEIGHT_INITS = ("xavier", "trunc_normal")

# ---------------------------------------------------------------------------------------------------
# the model


_DEFAULT = object()


@dataclass(frozen=True)
class DDRViTConfig:
    r"""Hyper-parameters of :class:`DDRViT` (see there for each field), as a frozen dataclass.

    The model it describes computes

    .. math:: \mathrm{logits} = W_{\mathrm{head}}\,\mathrm{mean}_{\mathrm{tokens}}\,
              \mathrm{LN}\big(\mathrm{DDR}_L \circ \cdots \circ \mathrm{DDR}_1(\mathrm{PatchEmbed}(x) + P)\big).

    Parameters
    ----------
    img_size, patch, in_chans, num_classes, dim, depth, num_heads : int
        As in :class:`DDRViT`.
    bias : {"freq", "swin", None} or nn.Module
        ``"freq"``, ``"swin"``, ``None`` or an ``nn.Module`` (copied into every block).
    mlp_ratio : float
        MLP hidden width ratio of every block.
    window : int or (int, int), optional
        Attention window; None: the whole token grid.
    pos_embed : {"learned", "none"}
        Absolute position embedding.
    branch : {"both", "spectral", "attention"}
        Branches of every block.
    bias_kwargs : dict, optional
        Go to the named bias kind's constructor.
    weight_init : {"xavier", "trunc_normal"}
        Init of the linear weights.

    References
    ----------
    "Relative positional bias parameterized in the frequency domain" with Dual-Domain Residual blocks
    (NeurIPS 2026).

    Examples
    --------
    >>> cfg = DDRViTConfig(img_size=8, patch=2)
    >>> DDRViT(config=cfg).grid
    (4, 4)
    """

    img_size: int = 28
    patch: int = 4
    in_chans: int = 1
    num_classes: int = 10
    dim: int = 32
    depth: int = 2
    num_heads: int = 1
    bias: str | None = "freq"
    mlp_ratio: float = 4.0
    window: int | tuple[int, int] | None = None
    pos_embed: str = "learned"
    branch: str = "both"
    bias_kwargs: dict | None = field(default=None, compare=True)
    weight_init: str = "xavier"


class DDRViT(nn.Module):
    r"""A small isotropic vision transformer of :class:`~fastnips.vision.DDRBlock` s, timm-style.

    patch-embedding conv (kernel = stride = ``patch``) -> learned absolute position embedding (default) ->
    ``depth`` DDR blocks on the (img/patch)² token grid -> LayerNorm -> mean over tokens -> linear head:

    .. math:: \mathrm{logits} = W_{\mathrm{head}}\,\mathrm{mean}_{\mathrm{tokens}}\,
              \mathrm{LN}\big(\mathrm{DDR}_L \circ \cdots \circ \mathrm{DDR}_1(\mathrm{PatchEmbed}(x) + P)\big).

    Parameters
    ----------
    img_size, patch, in_chans, num_classes, dim, depth, num_heads : int
        As in :class:`DDRViTConfig`; ``img_size`` must be a multiple of ``patch``. ``num_classes=0`` gives an
        identity head (features), as in timm.
    bias : {"freq", "swin", None} or nn.Module
        The attention bias of every block. A module (anything whose ``forward()`` returns ``(num_heads, N, N)``
        for the attention window) is deep-copied into each block, so the blocks do not share parameters.
    config : DDRViTConfig, optional
        Base values; every argument given explicitly (not left at its default) overrides the config.
    mlp_ratio : float
        Passed to every :class:`~fastnips.vision.DDRBlock`.
    window : int or (int, int), optional
        Passed to every :class:`~fastnips.vision.DDRBlock` (``window=None``: attention over the whole grid).
    pos_embed : {"learned", "none"}
        ``"learned"`` (default) adds a trunc-normal(0.02) ``(1, N, dim)`` embedding as in ViT / DeiT / GFNet.
        ``"none"`` keeps the model purely relative (the filter is a circular convolution, the bias depends on
        offsets only): the ablation where the bias is the attention's only source of position.
    branch : {"both", "spectral", "attention"}
        Passed to every :class:`~fastnips.vision.DDRBlock`.
    bias_kwargs : dict, optional
        Keyword arguments for the named bias kind, e.g. ``bias="freq", bias_kwargs={"param": "separable",
        "rank": 2}`` (the rank-2 separable frequency family) or ``{"init_std": 0.0}``.
    weight_init : {"xavier", "trunc_normal"}
        Linear weights xavier-uniform (default; the original ViT/JAX init, timm ``weight_init="jax"``) or
        trunc-normal(std 0.02) (timm's default ViT init); linear biases zero in both.

    Notes
    -----
    Shapes: ``forward(x)`` takes images (B, in_chans, img_size, img_size) and returns logits
    (B, num_classes) (features (B, dim) when ``num_classes=0``).

    The defaults (xavier init, learned position embedding) are the ones that trained well at dim 32 on digits
    and MNIST-5k; the measurements behind the choice are in docs/notes/vision.md.

    Configs: :meth:`tiny` (dim 32, depth 2, 1 head; about 33k parameters at 28/4) and :meth:`small` (dim 64,
    depth 4, 2 heads; about 0.23M), sized to train on two CPU cores in minutes on MNIST-5k (28x28, patch 4 ->
    7x7 tokens = one Swin window) or sklearn digits (``img_size=8, patch=1`` or ``2``).

    timm-style methods: :meth:`forward_features` (normalised tokens (B, N, dim)), :meth:`forward_head`,
    :meth:`reset_classifier`, :meth:`no_weight_decay`; ``num_features`` = ``dim``.

    References
    ----------
    "Relative positional bias parameterized in the frequency domain" with Dual-Domain Residual blocks
    (NeurIPS 2026). Layout: Dosovitskiy et al., ViT (ICLR 2021); timm.

    Examples
    --------
    >>> import torch
    >>> net = DDRViT.tiny(img_size=8, patch=2, bias="freq")  # sklearn digits: 4x4 tokens, one window
    >>> net(torch.randn(5, 1, 8, 8)).shape
    torch.Size([5, 10])
    """

    def __init__(self, img_size: int = _DEFAULT, patch: int = _DEFAULT, in_chans: int = _DEFAULT,
                 num_classes: int = _DEFAULT, dim: int = _DEFAULT, depth: int = _DEFAULT, num_heads: int = _DEFAULT,
                 bias: str | nn.Module | None = _DEFAULT, config: DDRViTConfig | None = None, *,
                 mlp_ratio: float = _DEFAULT, window: int | tuple[int, int] | None = _DEFAULT,
                 pos_embed: str = _DEFAULT, branch: str = _DEFAULT, bias_kwargs: dict[str, Any] | None = _DEFAULT,
                 weight_init: str = _DEFAULT):
        super().__init__()
        if config is None:
            config = DDRViTConfig()
        elif not isinstance(config, DDRViTConfig):
            raise ValueError(f"DDRViT: config must be a DDRViTConfig, got {type(config).__name__}")
        given = dict(img_size=img_size, patch=patch, in_chans=in_chans, num_classes=num_classes, dim=dim,
                     depth=depth, num_heads=num_heads, bias=bias, mlp_ratio=mlp_ratio, window=window,
                     pos_embed=pos_embed, branch=branch, bias_kwargs=bias_kwargs, weight_init=weight_init)
        given = {k: v for k, v in given.items() if v is not _DEFAULT}
        if "bias" in given and "bias_kwargs" not in given:  # a new bias kind does not inherit the old kwargs
            given["bias_kwargs"] = None
        cfg = replace(config, **given)
        for name in ("img_size", "patch", "in_chans", "dim", "depth", "num_heads"):
            v = getattr(cfg, name)
            if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"DDRViT: {name} must be a positive int, got {v!r}")
        if not isinstance(cfg.num_classes, numbers.Integral) or cfg.num_classes < 0:
            raise ValueError(f"DDRViT: num_classes must be an int >= 0, got {cfg.num_classes!r}")
        if cfg.img_size % cfg.patch:
            raise ValueError(f"DDRViT: img_size={cfg.img_size} is not a multiple of patch={cfg.patch}")
        if cfg.dim % cfg.num_heads:
            raise ValueError(f"DDRViT: dim={cfg.dim} is not divisible by num_heads={cfg.num_heads}")
        if cfg.pos_embed not in _POS_EMBEDS:
            raise ValueError(f"DDRViT: unknown pos_embed {cfg.pos_embed!r}; choose one of {_POS_EMBEDS}")
        if cfg.weight_init not in _WEIGHT_INITS:
            raise ValueError(f"DDRViT: unknown weight_init {cfg.weight_init!r}; choose one of {_WEIGHT_INITS}")
        if not isinstance(cfg.bias, nn.Module) and cfg.bias not in _BIAS_KINDS and cfg.bias != "none":
            raise ValueError(f"DDRViT: unknown bias kind {cfg.bias!r}; choose one of 'freq', 'swin', None, "
                             "or pass a module")
        if cfg.bias_kwargs is not None and not isinstance(cfg.bias_kwargs, dict):
            raise ValueError(f"DDRViT: bias_kwargs must be a dict, got {type(cfg.bias_kwargs).__name__}")
        self.config = cfg
        g = cfg.img_size // cfg.patch
        self.grid = (g, g)
        self.num_classes = int(cfg.num_classes)
        self.num_features = self.embed_dim = int(cfg.dim)
        self.patch_embed = nn.Conv2d(cfg.in_chans, cfg.dim, kernel_size=cfg.patch, stride=cfg.patch)
        self.pos_embed = nn.Parameter(torch.zeros(1, g * g, cfg.dim)) if cfg.pos_embed == "learned" else None
        self.blocks = nn.ModuleList(
            _DDRBlock(cfg.dim, self.grid, cfg.num_heads,
                     bias=copy.deepcopy(cfg.bias) if isinstance(cfg.bias, nn.Module) else cfg.bias,
                     bias_kwargs=cfg.bias_kwargs, mlp_ratio=cfg.mlp_ratio, window=cfg.window, branch=cfg.branch)
            for _ in range(cfg.depth)
        )
        self.norm = nn.LayerNorm(cfg.dim, eps=1e-6)
        self.head = nn.Linear(cfg.dim, self.num_classes) if self.num_classes else nn.Identity()
        self.apply(self._init_xavier if cfg.weight_init == "xavier" else self._init_weights)
        if self.pos_embed is not None:
            nn.init.trunc_normal_(self.pos_embed, std=0.02)

    @staticmethod
    def _init_xavier(m: nn.Module) -> None:
        if isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)

    @staticmethod
    def _init_weights(m: nn.Module) -> None:
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)

    @classmethod
    def tiny(cls, **overrides: Any) -> DDRViT:
        """dim 32, depth 2, 1 head, freq bias, 28x28 / patch 4 / 10 classes unless overridden
        (digits: ``DDRViT.tiny(img_size=8, patch=2)``)."""
        return cls(config=DDRViTConfig(dim=32, depth=2, num_heads=1), **overrides)

    @classmethod
    def small(cls, **overrides: Any) -> DDRViT:
        """dim 64, depth 4, 2 heads, freq bias, 28x28 / patch 4 / 10 classes unless overridden."""
        return cls(config=DDRViTConfig(dim=64, depth=4, num_heads=2), **overrides)

    def no_weight_decay(self) -> set[str]:
        """Parameter names to keep out of weight decay (timm's hook): position embedding and gate logits."""
        names = {"pos_embed"} if self.pos_embed is not None else set()
        return names | {n for n, _ in self.named_parameters() if n.endswith(("gate_spectral", "gate_attention"))}

    def reset_classifier(self, num_classes: int) -> None:
        """Replace the head by a fresh one with ``num_classes`` outputs (0: identity, features)."""
        self.num_classes = int(num_classes)
        self.head = nn.Linear(self.num_features, self.num_classes) if self.num_classes else nn.Identity()

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        """Normalised tokens (B, N, dim) of images ``x`` of shape (B, in_chans, img_size, img_size)."""
        cfg = self.config
        want = (cfg.in_chans, cfg.img_size, cfg.img_size)
        if x.dim() != 4 or tuple(x.shape[1:]) != want:
            raise ValueError(f"DDRViT: expected images of shape (B, {', '.join(map(str, want))}), "
                             f"got {tuple(x.shape)}")
        x = self.patch_embed(x).flatten(2).transpose(1, 2)  # (B, N, dim), row-major tokens
        if self.pos_embed is not None:
            x = x + self.pos_embed
        for blk in self.blocks:
            x = blk(x)
        return self.norm(x)

    def forward_head(self, x: torch.Tensor, pre_logits: bool = False) -> torch.Tensor:
        """Logits (B, num_classes) from tokens (B, N, dim): token mean, then the head (not if ``pre_logits``)."""
        x = x.mean(dim=1)
        return x if pre_logits else self.head(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (B, num_classes) of images ``x`` of shape (B, in_chans, img_size, img_size)."""
        return self.forward_head(self.forward_features(x))

    def extra_repr(self) -> str:
        """The configuration, for ``repr``."""
        return ", ".join(f"{f.name}={getattr(self.config, f.name)!r}" for f in fields(self.config))


# ---------------------------------------------------------------------------------------------------
# reading the gates


class GateReport(list):
    r"""A list of dicts ``{block, spectral_gate, attention_gate, leaning}``; ``str()`` gives a table.

    One row per :class:`~fastnips.vision.DDRBlock`, with its gates :math:`\sigma(a_s)` and
    :math:`\sigma(a_a)`; built by :func:`gate_report`. Constructed like a ``list``, from an optional
    iterable of such dicts.

    References
    ----------
    The learned per-layer gates of "Relative positional bias parameterized in the frequency domain" with
    Dual-Domain Residual blocks (NeurIPS 2026).

    Examples
    --------
    >>> print(GateReport([{"block": "blocks.0", "spectral_gate": 0.6, "attention_gate": 0.4,
    ...                    "leaning": "spectral"}]))
    block     spectral σ(a_s)  attention σ(a_a)  leaning
    --------  ---------------  ----------------  --------
    blocks.0  0.6000           0.4000            spectral
    """

    def table(self) -> str:
        """The rows as an aligned text table (also ``str(report)``)."""
        rows = [("block", "spectral σ(a_s)", "attention σ(a_a)", "leaning")]
        rows += [(r["block"], f"{r['spectral_gate']:.4f}", f"{r['attention_gate']:.4f}", r["leaning"]) for r in self]
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = ["  ".join(c.ljust(wd) for c, wd in zip(r, widths)).rstrip() for r in rows]
        lines.insert(1, "  ".join("-" * wd for wd in widths))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def gate_report(model: nn.Module, *, margin: float = 0.05) -> GateReport:
    r"""Read the per-layer gates of every :class:`~fastnips.vision.DDRBlock` in ``model`` (in module order).

    For each block, :math:`g_s = \sigma(a_s)` and :math:`g_a = \sigma(a_a)`; the block leans spectral when
    :math:`g_s > g_a + \mathrm{margin}`, attention when :math:`g_a > g_s + \mathrm{margin}`, else balanced.

    Parameters
    ----------
    model : nn.Module
        A model containing :class:`~fastnips.vision.DDRBlock` s (or a bare block).
    margin : float
        How much one gate must exceed the other to count as a leaning.

    Returns
    -------
    GateReport
        A list of dicts: ``block`` (the module's qualified name, "" for a bare block), ``spectral_gate`` =
        σ(a_s) and ``attention_gate`` = σ(a_a) as floats, and ``leaning``: ``"spectral"`` or ``"attention"``
        when one gate exceeds the other by more than ``margin``, else ``"balanced"``.

    Raises
    ------
    ValueError
        A model without DDR blocks.

    References
    ----------
    The learned per-layer gates of "Relative positional bias parameterized in the frequency domain" with
    Dual-Domain Residual blocks (NeurIPS 2026).

    Examples
    --------
    >>> net = DDRViT.tiny(img_size=8, patch=2)
    >>> [row["leaning"] for row in gate_report(net)]  # gates start at sigma(0) = 0.5
    ['balanced', 'balanced']
    """
    out = GateReport()
    for name, m in model.named_modules():
        if isinstance(m, _DDRBlock):
            s, a = (float(t.detach()) for t in m.gates())
            lean = "spectral" if s > a + margin else "attention" if a > s + margin else "balanced"
            out.append({"block": name, "spectral_gate": s, "attention_gate": a, "leaning": lean})
    if not out:
        raise ValueError(f"gate_report: {type(model).__name__} contains no DDRBlock")
    return out


# Names that moved to fastnips.vision.blocks (also importable from fastnips.vision); the old path warns.
__getattr__ = moved(__name__, dict.fromkeys(("DDRBlock", "GatedAttention", "SpectralMixer", "spectral_mix_reference"),
                                            "fastnips.vision.blocks"))
