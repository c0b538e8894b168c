r"""A tiny Llama-style decoder, trained from scratch on stdlib docstrings, for fast pruning tests.

Architecture (Llama; Touvron et al. 2023), for input ids :math:`t_1..t_T` and :math:`L` layers:

.. math::

    h^{(0)} = E[t], \quad
    a = h + W_o\,\mathrm{Attn}(\mathrm{RoPE}(W_q \bar h), \mathrm{RoPE}(W_k \bar h), W_v \bar h),
    \quad \bar h = \mathrm{RMSNorm}_1(h),

    h' = a + W_{down}\,(\mathrm{silu}(W_{gate}\bar a) \odot W_{up}\bar a), \quad \bar a = \mathrm{RMSNorm}_2(a),
    \qquad \mathrm{logits} = W_{lm}\,\mathrm{RMSNorm}(h^{(L)}),

with causal softmax attention (``F.scaled_dot_product_attention(is_causal=True)``), rotary position
embeddings on the first/second halves of each head (HF's ``rotate_half`` convention), RMSNorm computed in
float32 (:math:`x / \sqrt{\mathrm{mean}(x^2) + \epsilon} \cdot w`), no biases.

**The module tree and the call conventions are HF transformers' Llama (checked against 5.24)**, so that
pruning code written for ``LlamaForCausalLM`` (SmolLM2) runs unchanged on :class:`TinyDecoder`, and the
state dicts are interchangeable (``TinyDecoder.load_state_dict(LlamaForCausalLM(...).state_dict())`` and
back, see :meth:`TinyConfig.to_llama_config`)::

    lm_head                                  nn.Linear(d_model, vocab, bias=False)
    model.embed_tokens                       nn.Embedding(vocab, d_model)
    model.layers[i]                          TinyDecoderLayer
        .self_attn.{q,k,v,o}_proj            nn.Linear(bias=False)
        .mlp.{gate,up,down}_proj, .mlp.act_fn  nn.Linear(bias=False), nn.SiLU
        .input_layernorm, .post_attention_layernorm   RMSNorm
    model.norm                               RMSNorm
    model.rotary_emb                         TinyRotaryEmbedding (no parameters)

* ``model.rotary_emb(hidden_states, position_ids) -> (cos, sin)``, each ``[B or 1, T, head_dim]`` in the
  dtype of ``hidden_states`` (``position_ids`` is ``[1, T]`` or ``[B, T]``).
* ``layer(hidden_states, attention_mask=None, position_ids=None, position_embeddings=(cos, sin), **ignored)
  -> hidden_states`` (a tensor, ``[B, T, d_model]``, as HF 5.x; older 4.x releases returned a tuple).
* ``layer.self_attn(hidden_states, position_embeddings=..., attention_mask=None, **ignored) -> (out, None)``
  (``out`` after ``o_proj``, before the residual add; HF's sdpa path also returns ``None`` weights).
* ``layer.mlp(x) -> tensor`` (after ``down_proj``, before the residual add).
* ``attention_mask=None`` means causal (as HF's sdpa path, which receives None when nothing is padded);
  a given 4-D mask (additive float or bool, broadcastable to ``[B, H, T, T]``) replaces the causal one.

The shipped checkpoint (``fastnips/data/tiny_decoder.pt``, made by ``bench/prune/train_tiny.py``) is a
byte-level model (vocab 258 = 256 bytes + BOS + EOS) loaded by :func:`load_tiny`; its size, training budget
and held-out perplexity are in ``model.train_info`` and in the script's docstring.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from operator import attrgetter
from pathlib import Path

import torch
import torch.nn.functional as F
from numpy.typing import ArrayLike
from torch import nn

__all__ = [
    "CHECKPOINT_FORMAT",
    "RMSNorm",
    "TinyAttention",
    "TinyConfig",
    "TinyDecoder",
    "TinyDecoderLayer",
    "TinyMLP",
    "TinyModel",
    "TinyOutput",
    "TinyRotaryEmbedding",
    "load_tiny",
    "save_tiny",
    "train_tiny",
]

#: The ``format`` field of a saved checkpoint; :func:`load_tiny` refuses anything else.
CHECKPOINT_FORMAT = "fastnips.tiny_decoder/1"


@dataclass
class TinyConfig:
    """Sizes of a :class:`TinyDecoder`. HF-style read-only aliases are provided for generic code.

    Parameters
    ----------
    vocab : int
        Vocabulary size (258 for :class:`~fastnips.data.text.ByteTokenizer`: 256 bytes + BOS + EOS).
    d_model, n_layers, n_heads, d_ff : int
        Hidden size, decoder layers, attention heads (``d_model / n_heads`` must be even, for RoPE), MLP width.
    max_seq : int
        Context length used in training (``max_position_embeddings``); longer inputs run but extrapolate.
    n_kv_heads : int or None
        Key/value heads (grouped-query attention as in SmolLM2); None means ``n_heads``.
    rms_eps, rope_theta : float
        RMSNorm epsilon and RoPE base (HF Llama's defaults).
    """

    vocab: int = 258
    d_model: int = 128
    n_layers: int = 4
    n_heads: int = 4
    d_ff: int = 352
    max_seq: int = 128
    n_kv_heads: int | None = None
    rms_eps: float = 1e-6
    rope_theta: float = 10000.0

    def __post_init__(self):
        for name in ("vocab", "d_model", "n_layers", "n_heads", "d_ff", "max_seq"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"TinyConfig: {name} must be a positive int, got {v!r}")
        if self.n_kv_heads is not None and (isinstance(self.n_kv_heads, bool) or not isinstance(self.n_kv_heads, int)
                                            or self.n_kv_heads <= 0 or self.n_heads % self.n_kv_heads):
            raise ValueError(f"TinyConfig: n_kv_heads must be a positive divisor of n_heads={self.n_heads}, "
                             f"got {self.n_kv_heads!r}")
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise ValueError(f"TinyConfig: d_model={self.d_model} must be n_heads={self.n_heads} times an even "
                             "head dimension")
        if not (self.rms_eps > 0 and self.rope_theta > 0):
            raise ValueError("TinyConfig: rms_eps and rope_theta must be > 0")

    # HF LlamaConfig names, for code written against HF models
    vocab_size = property(attrgetter("vocab"))
    hidden_size = property(attrgetter("d_model"))
    num_hidden_layers = property(attrgetter("n_layers"))
    num_attention_heads = property(attrgetter("n_heads"))
    intermediate_size = property(attrgetter("d_ff"))
    max_position_embeddings = property(attrgetter("max_seq"))
    rms_norm_eps = property(attrgetter("rms_eps"))

    @property
    def num_key_value_heads(self) -> int:
        """Key/value heads (``n_kv_heads``, or ``n_heads`` when None)."""
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def head_dim(self) -> int:
        """Channels per head, ``d_model // n_heads``."""
        return self.d_model // self.n_heads

    use_cache = False  # a class attribute: there is no KV cache; HF code may read or set it

    def to_dict(self) -> dict:
        """The fields as a plain dict (what checkpoints store)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> TinyConfig:
        """The inverse of :meth:`to_dict`; unknown keys raise ``ValueError``."""
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"TinyConfig.from_dict: unknown fields {sorted(unknown)}")
        return cls(**d)

    def to_llama_config(self):
        """The equivalent ``transformers.LlamaConfig`` (needs transformers): a ``LlamaForCausalLM`` built from it
        takes this model's state dict as is and computes the same logits."""
        from .._optional import require

        transformers = require("transformers")
        return transformers.LlamaConfig(
            vocab_size=self.vocab, hidden_size=self.d_model, intermediate_size=self.d_ff,
            num_hidden_layers=self.n_layers, num_attention_heads=self.n_heads,
            num_key_value_heads=self.num_key_value_heads, max_position_embeddings=self.max_seq,
            rms_norm_eps=self.rms_eps, rope_theta=self.rope_theta,
            hidden_act="silu", attention_bias=False, mlp_bias=False, tie_word_embeddings=False,
            bos_token_id=256 if self.vocab >= 258 else None, eos_token_id=257 if self.vocab >= 258 else None,
            pad_token_id=None)


@dataclass
class TinyOutput:
    """What :meth:`TinyDecoder.forward` returns (the fields of HF's ``CausalLMOutput`` that exist here)."""

    logits: torch.Tensor
    loss: torch.Tensor | None = None


@dataclass
class TinyModelOutput:
    """What :meth:`TinyModel.forward` returns (as HF's ``BaseModelOutput``)."""

    last_hidden_state: torch.Tensor


class RMSNorm(nn.Module):
    """:math:`w \\odot x / \\sqrt{\\mathrm{mean}(x^2) + \\epsilon}`, computed in float32 (HF's LlamaRMSNorm)."""

    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        dtype = hidden_states.dtype
        h = hidden_states.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * h.to(dtype)

    def extra_repr(self) -> str:
        return f"{tuple(self.weight.shape)}, eps={self.variance_epsilon}"


class TinyRotaryEmbedding(nn.Module):
    """RoPE tables: ``forward(x, position_ids) -> (cos, sin)``, each ``[*position_ids.shape, head_dim]``."""

    def __init__(self, config: TinyConfig):
        super().__init__()
        dim = config.head_dim
        inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        freqs = position_ids[..., None].to(torch.float32) * self.inv_freq.to(device=x.device)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def _apply_rope(q, k, cos, sin):
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)  # [B, 1, T, hd] against [B, H, T, hd]
    return q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin


class TinyAttention(nn.Module):
    """Causal multi-head (optionally grouped-query) attention with RoPE; HF LlamaAttention's names and call."""

    def __init__(self, config: TinyConfig, layer_idx: int = 0):
        super().__init__()
        self.layer_idx = layer_idx
        self.head_dim = config.head_dim
        self.num_heads = config.n_heads
        self.num_key_value_heads = config.num_key_value_heads
        self.num_key_value_groups = self.num_heads // self.num_key_value_heads
        self.scaling = self.head_dim**-0.5
        self.is_causal = True
        d, hd = config.d_model, self.head_dim
        self.q_proj = nn.Linear(d, self.num_heads * hd, bias=False)
        self.k_proj = nn.Linear(d, self.num_key_value_heads * hd, bias=False)
        self.v_proj = nn.Linear(d, self.num_key_value_heads * hd, bias=False)
        self.o_proj = nn.Linear(self.num_heads * hd, d, bias=False)

    def forward(self, hidden_states: torch.Tensor, position_embeddings: tuple[torch.Tensor, torch.Tensor] | None = None,
                attention_mask: torch.Tensor | None = None, **kwargs) -> tuple[torch.Tensor, None]:
        if position_embeddings is None:
            raise ValueError("TinyAttention: position_embeddings=(cos, sin) is required (from model.rotary_emb), "
                             "as in HF Llama")
        B, T, _ = hidden_states.shape
        shape = (B, T, -1, self.head_dim)
        q = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        cos, sin = position_embeddings
        q, k = _apply_rope(q, k, cos, sin)
        if self.num_key_value_groups > 1:
            k = k.repeat_interleave(self.num_key_value_groups, dim=1)
            v = v.repeat_interleave(self.num_key_value_groups, dim=1)
        if attention_mask is None:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=T > 1, scale=self.scaling)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask, scale=self.scaling)
        out = out.transpose(1, 2).reshape(B, T, -1)
        return self.o_proj(out), None


class TinyMLP(nn.Module):
    """SwiGLU: ``down_proj(silu(gate_proj(x)) * up_proj(x))`` (HF LlamaMLP)."""

    def __init__(self, config: TinyConfig):
        super().__init__()
        self.gate_proj = nn.Linear(config.d_model, config.d_ff, bias=False)
        self.up_proj = nn.Linear(config.d_model, config.d_ff, bias=False)
        self.down_proj = nn.Linear(config.d_ff, config.d_model, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class TinyDecoderLayer(nn.Module):
    """Pre-norm block: ``h + attn(norm1(h))`` then ``+ mlp(norm2(.))``. Returns a tensor, as HF LlamaDecoderLayer."""

    def __init__(self, config: TinyConfig, layer_idx: int = 0):
        super().__init__()
        self.hidden_size = config.d_model
        # registration order = HF's, so named_modules()/state_dict() list the same names in the same order
        self.self_attn = TinyAttention(config, layer_idx)
        self.mlp = TinyMLP(config)
        self.input_layernorm = RMSNorm(config.d_model, config.rms_eps)
        self.post_attention_layernorm = RMSNorm(config.d_model, config.rms_eps)

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None,
                position_ids: torch.Tensor | None = None,
                position_embeddings: tuple[torch.Tensor, torch.Tensor] | None = None, **kwargs) -> torch.Tensor:
        residual = hidden_states
        h = self.input_layernorm(hidden_states)
        h, _ = self.self_attn(hidden_states=h, position_embeddings=position_embeddings, attention_mask=attention_mask)
        h = residual + h
        residual = h
        h = self.mlp(self.post_attention_layernorm(h))
        return residual + h


class TinyModel(nn.Module):
    """The decoder stack without the LM head (HF's ``LlamaModel``)."""

    def __init__(self, config: TinyConfig):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab, config.d_model)
        self.layers = nn.ModuleList(TinyDecoderLayer(config, i) for i in range(config.n_layers))
        self.norm = RMSNorm(config.d_model, config.rms_eps)
        self.rotary_emb = TinyRotaryEmbedding(config)

    def forward(self, input_ids: torch.Tensor, position_ids: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None, **kwargs) -> TinyModelOutput:
        input_ids = _check_ids(input_ids, self.config.vocab)
        if attention_mask is not None and not bool(torch.all(attention_mask != 0)):
            raise NotImplementedError("TinyDecoder: padding masks are not supported; pack sequences instead")
        h = self.embed_tokens(input_ids)
        if position_ids is None:
            position_ids = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        pe = self.rotary_emb(h, position_ids)
        for layer in self.layers:
            h = layer(h, attention_mask=None, position_ids=position_ids, position_embeddings=pe)
        return TinyModelOutput(last_hidden_state=self.norm(h))


def _check_ids(input_ids, vocab: int) -> torch.Tensor:
    if not isinstance(input_ids, torch.Tensor):
        raise TypeError(f"TinyDecoder: input_ids must be a tensor, got {type(input_ids).__name__}")
    if input_ids.dim() != 2 or input_ids.dtype.is_floating_point or input_ids.dtype == torch.bool:
        raise ValueError(f"TinyDecoder: input_ids must be an integer tensor [batch, seq], got {input_ids.dtype} "
                         f"{tuple(input_ids.shape)}")
    if input_ids.numel() and (int(input_ids.min()) < 0 or int(input_ids.max()) >= vocab):
        raise ValueError(f"TinyDecoder: token ids must lie in [0, {vocab}), got [{int(input_ids.min())}, "
                         f"{int(input_ids.max())}]")
    return input_ids.long()


class TinyDecoder(nn.Module):
    """A Llama-architecture causal LM with HF Llama's module names (see the module docstring).

    ``forward(input_ids, labels=None, position_ids=None, **ignored) -> TinyOutput`` with ``.logits``
    ``[B, T, vocab]`` (float, the model's dtype) and, when ``labels`` are given, ``.loss``: the mean
    next-token cross entropy of ``labels[:, 1:]`` given positions ``:-1`` (HF's convention; label -100 is
    ignored). Keyword arguments HF callers pass (``use_cache``, ``return_dict``, ...) are accepted and ignored.
    """

    def __init__(self, config: TinyConfig | None = None):
        super().__init__()
        self.config = TinyConfig() if config is None else config
        self.model = TinyModel(self.config)
        self.lm_head = nn.Linear(self.config.d_model, self.config.vocab, bias=False)
        self.train_info: dict = {}
        self.reset_parameters()

    def reset_parameters(self, std: float = 0.02) -> None:
        """Normal(0, std) weights (o_proj and down_proj scaled by 1/sqrt(2 n_layers)), RMSNorm weights 1."""
        out_std = std / math.sqrt(2 * self.config.n_layers)
        for name, p in self.named_parameters():
            if name.endswith("layernorm.weight") or name == "model.norm.weight":
                nn.init.ones_(p)
            elif name.endswith(("o_proj.weight", "down_proj.weight")):
                nn.init.normal_(p, 0.0, out_std)
            else:
                nn.init.normal_(p, 0.0, std)

    @property
    def device(self) -> torch.device:
        """The device of the parameters."""
        return next(self.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        """The dtype of the parameters."""
        return next(self.parameters()).dtype

    def num_parameters(self) -> int:
        """Number of parameter entries."""
        return sum(p.numel() for p in self.parameters())

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor | None = None,
                position_ids: torch.Tensor | None = None, attention_mask: torch.Tensor | None = None,
                **kwargs: object) -> TinyOutput:
        """Logits for ``input_ids`` (B, T) and, with ``labels``, the next-token loss (class docstring).

        Returns
        -------
        TinyOutput
            ``.logits`` of shape (B, T, vocab); ``.loss`` a scalar tensor or None.
        """
        h = self.model(input_ids, position_ids=position_ids, attention_mask=attention_mask).last_hidden_state
        logits = self.lm_head(h)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(),
                                   labels[:, 1:].reshape(-1).long(), ignore_index=-100)
        return TinyOutput(logits=logits, loss=loss)


# ---------------------------------------------------------------------------------------------------
# training


def train_tiny(config: TinyConfig, ids: ArrayLike, steps: int, *, batch_size: int = 32, seqlen: int | None = None,
               lr: float = 3e-3, min_lr_ratio: float = 0.1, warmup: int | None = None, weight_decay: float = 0.1,
               betas: tuple[float, float] = (0.9, 0.95), grad_clip: float = 1.0, seed: int = 0,
               log_every: int = 0, log: Callable[[str], object] = print) -> tuple[TinyDecoder, list[float]]:
    r"""Train a fresh :class:`TinyDecoder` on random windows of a token stream (next-token cross entropy).

    Each step draws ``batch_size`` windows of ``seqlen + 1`` tokens at uniformly random offsets of ``ids``
    (a seeded ``torch.Generator``). AdamW (``betas``, decoupled ``weight_decay`` on matrices and embeddings,
    none on RMSNorm weights), gradient-norm clipping at ``grad_clip``, learning rate: linear warmup over
    ``warmup`` steps (default ``min(100, steps // 10)``) then cosine decay from ``lr`` to ``lr * min_lr_ratio``.

    Deterministic for a given seed, torch version and thread count (the global RNG state of the caller is
    left untouched). Returns ``(model, losses)``: the model in eval mode, float32, with ``model.train_info``
    filled in, and the training loss of every step.

    Parameters
    ----------
    config : TinyConfig
    ids : 1-D integer tensor or sequence of ints
        The training token stream (e.g. :func:`fastnips.data.text.docstring_token_ids`), all ids < vocab.
    steps : int
        Optimizer steps, >= 1.
    """
    ids = torch.as_tensor(ids)
    if ids.dim() != 1 or ids.dtype.is_floating_point or ids.dtype == torch.bool:
        raise ValueError(f"train_tiny: ids must be a 1-D integer tensor, got {ids.dtype} {tuple(ids.shape)}")
    ids = ids.long()
    seqlen = config.max_seq if seqlen is None else seqlen
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"train_tiny: steps must be a positive int, got {steps!r}")
    if batch_size < 1 or seqlen < 2:
        raise ValueError("train_tiny: need batch_size >= 1 and seqlen >= 2")
    if ids.numel() < seqlen + 1:
        raise ValueError(f"train_tiny: {ids.numel()} tokens are fewer than one window of {seqlen + 1}")
    if int(ids.min()) < 0 or int(ids.max()) >= config.vocab:
        raise ValueError(f"train_tiny: token ids must lie in [0, {config.vocab})")
    warmup = min(100, steps // 10) if warmup is None else warmup
    t0 = time.perf_counter()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = TinyDecoder(config)
    gen = torch.Generator().manual_seed(seed)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=lr, betas=betas)

    def lr_at(step: int) -> float:  # step counts from 0
        if step < warmup:
            return lr * (step + 1) / warmup
        progress = (step - warmup) / max(1, steps - warmup)
        return lr * (min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))

    offsets = torch.arange(seqlen + 1)
    losses: list[float] = []
    model.train()
    for step in range(steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        start = torch.randint(0, ids.numel() - seqlen, (batch_size,), generator=gen)
        batch = ids[start[:, None] + offsets]
        out = model(batch, labels=batch)
        opt.zero_grad(set_to_none=True)
        out.loss.backward()
        if grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        opt.step()
        losses.append(float(out.loss.detach()))
        if log_every and (step + 1) % log_every == 0:
            log(f"step {step + 1}/{steps}  loss {losses[-1]:.4f}  lr {lr_at(step):.2e}  "
                f"{time.perf_counter() - t0:.0f}s")
    model.eval()
    model.train_info = {"seed": seed, "steps": steps, "batch_size": batch_size, "seqlen": seqlen, "lr": lr,
                        "tokens": steps * batch_size * seqlen, "final_train_loss": losses[-1],
                        "seconds": time.perf_counter() - t0, "torch": str(torch.__version__),
                        "threads": torch.get_num_threads()}
    return model, losses


# ---------------------------------------------------------------------------------------------------
# checkpoints


def save_tiny(model: TinyDecoder, path: str | os.PathLike, *, info: dict | None = None, half: bool = True) -> None:
    """Write ``{"format", "config", "state_dict" (fp16 when half), "info"}`` with ``torch.save``.

    ``info`` (default ``model.train_info``) must hold only plain Python values (loadable with
    ``weights_only=True``).
    """
    sd = {k: (v.detach().to("cpu", torch.float16 if half else torch.float32)).clone()
          for k, v in model.state_dict().items()}
    torch.save({"format": CHECKPOINT_FORMAT, "config": model.config.to_dict(), "state_dict": sd,
                "info": dict(model.train_info if info is None else info)}, Path(path))


def load_tiny(path: str | os.PathLike | None = None, *, dtype: torch.dtype = torch.float32):
    """The shipped byte-level tiny decoder (or the checkpoint at ``path``): ``(model, ByteTokenizer)``.

    The model is in eval mode, in ``dtype`` (float32 by default; the file stores fp16), on the CPU, with the
    checkpoint's training facts in ``model.train_info``.
    """
    from ..data.text import ByteTokenizer

    if path is None:
        from importlib.resources import as_file, files

        with as_file(files("fastnips.data").joinpath("tiny_decoder.pt")) as p:
            if not p.is_file():
                raise FileNotFoundError(f"load_tiny: the shipped checkpoint {p} is missing "
                                        "(bench/prune/train_tiny.py makes it)")
            ckpt = torch.load(p, map_location="cpu", weights_only=True)
    else:
        ckpt = torch.load(Path(path), map_location="cpu", weights_only=True)
    if not isinstance(ckpt, dict) or ckpt.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"load_tiny: not a {CHECKPOINT_FORMAT} checkpoint")
    model = TinyDecoder(TinyConfig.from_dict(ckpt["config"]))
    model.load_state_dict({k: v.to(torch.float32) for k, v in ckpt["state_dict"].items()})
    model.train_info = dict(ckpt.get("info", {}))
    return model.to(dtype).eval(), ByteTokenizer()
