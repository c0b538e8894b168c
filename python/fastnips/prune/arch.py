r"""What the pruning and reconstruction code needs to know about a decoder: where its blocks are, how to
call one, and how a block splits into attention and MLP windows.

* **Blocks.** The decoder blocks are the longest ``nn.ModuleList`` of same-class modules that contain
  linear layers (``model.model.layers`` in Hugging Face Llama, Mistral, Qwen2, SmolLM and
  :class:`fastnips.prune.tiny.TinyDecoder`; ``transformer.h`` in GPT-2 style models).
* **Linear layers** are ``nn.Linear`` and transformers' ``Conv1D`` (GPT-2, GPT-Neo's ancestors, DistilGPT2:
  :math:`y = x W + b` with W stored (in_features, out_features), the transpose of ``nn.Linear``). The
  model-level functions (criteria, reconstruction, retraining) run with every ``Conv1D`` of the blocks swapped
  for an equivalent ``nn.Linear`` (:func:`linear_view`) and swapped back at the end, the updated weights
  copied back transposed; the masks they take and return have the shape of each module's own weight, so a
  ``Conv1D``'s mask is (in_features, out_features). The reference SparseGPT code handles ``Conv1D`` the same
  way, by transposing its weight.
* **Inputs of block 0** are captured generically: a pre-hook on block 0 records its hidden state and *every*
  keyword argument the model passes (``attention_mask``, ``position_ids``, ``position_embeddings``, ...) and
  stops the forward pass. Recording all keywords rather than a fixed list survives transformers' changes of
  the block signature (``position_embeddings`` arrived in 4.43; intel/intel-npu-acceleration-library#105).
* **Attention / MLP windows** need a Llama-style block (``input_layernorm``, ``self_attn``,
  ``post_attention_layernorm``, ``mlp``, pre-norm residuals). Each window includes its norm and its residual
  add, as in the paper's code, so every window ends in a non-linear sub-module. Other block layouts support
  ``window="block"``, ``Blocks(k)`` and ``"matrix"``.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import nn

__all__ = ["Blocks", "Window", "call_block", "capture_block_inputs", "decoder_blocks", "is_conv1d", "linear_names",
           "linear_view", "windows"]

WINDOWS = ("matrix", "attn_mlp", "block")


@dataclass(frozen=True)
class Blocks:
    """A reconstruction window of ``k`` consecutive decoder blocks (``Blocks(1)`` is ``window="block"``)."""

    k: int

    def __post_init__(self):
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ValueError(f"Blocks(k) needs an int k >= 1, got {self.k!r}")


class _Stop(Exception):
    """Raised by a capture hook to end a forward pass early."""


def decoder_blocks(model: nn.Module) -> tuple[str, nn.ModuleList]:
    """(qualified name, module list) of the model's decoder blocks.

    Raises
    ------
    ValueError
        When no ``nn.ModuleList`` of same-class modules holding ``nn.Linear`` layers exists.
    """
    best = None
    for name, mod in model.named_modules():
        if not isinstance(mod, nn.ModuleList) or len(mod) == 0:
            continue
        kinds = {type(m) for m in mod}
        if len(kinds) != 1 or not any(_is_linear(x) for x in mod[0].modules()):
            continue
        if best is None or len(mod) > len(best[1]):
            best = (name, mod)
    if best is None:
        raise ValueError(f"{type(model).__name__} has no list of decoder blocks with nn.Linear layers "
                         "(expected e.g. model.model.layers)")
    return best


def is_conv1d(m: nn.Module) -> bool:
    """Whether ``m`` is transformers' ``Conv1D`` (a linear layer with its weight stored (in, out))."""
    return type(m).__name__ == "Conv1D" and type(m).__module__.startswith("transformers") and hasattr(m, "nf")


def _is_linear(m: nn.Module) -> bool:
    return isinstance(m, nn.Linear) or is_conv1d(m)


def linear_names(module: nn.Module, prefix: str = "") -> list[str]:
    """Qualified names of the linear layers (``nn.Linear``, transformers ``Conv1D``) under ``module`` in
    registration order."""
    p = f"{prefix}." if prefix else ""
    return [p + n for n, m in module.named_modules() if _is_linear(m)]


def _to_linear(conv: nn.Module) -> nn.Linear:
    w = conv.weight
    lin = nn.Linear(w.shape[0], w.shape[1], bias=conv.bias is not None, device=w.device, dtype=w.dtype)
    with torch.no_grad():
        lin.weight = nn.Parameter(w.detach().t().contiguous(), requires_grad=w.requires_grad)
    if conv.bias is not None:
        lin.bias = conv.bias  # the same parameter
    return lin


@contextmanager
def linear_view(model: nn.Module, masks: dict | None = None) -> Iterator[tuple[set, dict | None]]:
    """Within the block, every transformers ``Conv1D`` of ``model`` is an equivalent ``nn.Linear``.

    Yields ``(names, masks)``: the qualified names swapped and ``masks`` with those names' masks transposed to
    (out_features, in_features). On exit each ``Conv1D`` is put back with the (possibly pruned and updated)
    linear weight copied into its own weight, transposed; a module at a swapped name that is no longer a plain
    ``nn.Linear`` raises. Models without ``Conv1D`` pass through untouched.
    """
    convs = {n: m for n, m in model.named_modules() if is_conv1d(m)}
    parents = {}
    for name, conv in convs.items():
        parent_name, _, attr = name.rpartition(".")
        parents[name] = (model.get_submodule(parent_name) if parent_name else model, attr)
        setattr(*parents[name], _to_linear(conv))
    if masks is not None and convs:
        masks = {n: (m.t() if n in convs and isinstance(m, torch.Tensor) and m.dim() == 2 else m)
                 for n, m in masks.items()}
    try:
        yield set(convs), masks
    finally:
        for name, conv in convs.items():
            lin = getattr(*parents[name])
            if type(lin) is not nn.Linear:
                raise RuntimeError(f"{name}: expected the nn.Linear standing in for a Conv1D, found "
                                   f"{type(lin).__name__} (strip masks / merge LoRA before leaving)")
            with torch.no_grad():
                conv.weight.copy_(lin.weight.t())
            setattr(*parents[name], conv)


def conv_masks(masks: dict, names: set) -> dict:
    """``masks`` with the masks of the swapped ``Conv1D`` names transposed back to (in, out)."""
    return {n: (m.t().contiguous() if n in names else m) for n, m in masks.items()}


def call_block(block: nn.Module, h: torch.Tensor, kwargs: dict) -> torch.Tensor:
    """Run one decoder block; blocks that return a tuple (older transformers) give their first element."""
    out = block(h, **kwargs)
    return out[0] if isinstance(out, tuple) else out


def _forward_accepts(model: nn.Module, name: str) -> bool:
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


@torch.no_grad()
def capture_block_inputs(model: nn.Module, batches, *, device=None, store="cpu") -> list[tuple[torch.Tensor, dict]]:
    """Hidden states and keyword arguments entering block 0, one entry per batch of token ids.

    Hidden states are kept on ``store`` (the activation offload device); keyword tensors stay where the
    model made them (they are small: position embeddings, masks).
    """
    _, blocks = decoder_blocks(model)
    seen: list[tuple[torch.Tensor, dict]] = []

    def hook(_mod, args, kwargs):
        kw = dict(kwargs)
        h = args[0] if args else kw.pop("hidden_states")
        for k in ("use_cache", "cache", "past_key_values", "past_key_value"):
            kw.pop(k, None)
        seen.append((h.detach().to(store), kw))
        raise _Stop

    extra = {"use_cache": False} if _forward_accepts(model, "use_cache") else {}
    handle = blocks[0].register_forward_pre_hook(hook, with_kwargs=True)
    try:
        for ids in batches:
            ids = ids.to(device) if device is not None else ids
            try:
                model(input_ids=ids, **extra)
            except _Stop:
                pass
            else:
                raise RuntimeError("block 0 was never called in the model's forward pass")
    finally:
        handle.remove()
    return seen


@dataclass
class Window:
    """One reconstruction window: a contiguous piece of the decoder.

    ``kind`` is ``"blocks"`` (blocks ``first..last-1``), ``"attn"`` / ``"mlp"`` (half of block ``first``) or
    ``"matrix"`` (the linear ``linear`` of block ``first``). ``modules`` hold the window's parameters.
    """

    name: str
    kind: str
    first: int
    last: int
    modules: list = field(default_factory=list)
    linears: list = field(default_factory=list)  # qualified names of the window's nn.Linear layers

    def parameters(self):
        seen = set()
        for m in self.modules:
            for p in m.parameters():
                if id(p) not in seen:
                    seen.add(id(p))
                    yield p


def _llama_parts(block: nn.Module, idx: int):
    need = ("input_layernorm", "self_attn", "post_attention_layernorm", "mlp")
    missing = [a for a in need if not hasattr(block, a)]
    if missing:
        raise ValueError(f"window='attn_mlp' needs Llama-style blocks ({', '.join(need)}); block {idx} "
                         f"({type(block).__name__}) lacks {', '.join(missing)}: use window='block' or Blocks(k)")
    return block.input_layernorm, block.self_attn, block.post_attention_layernorm, block.mlp


def attn_forward(block: nn.Module, h: torch.Tensor, kwargs: dict) -> torch.Tensor:
    """``h + self_attn(input_layernorm(h))``: the attention window of a Llama-style block."""
    out = block.self_attn(hidden_states=block.input_layernorm(h), **kwargs)
    return h + (out[0] if isinstance(out, tuple) else out)


def mlp_forward(block: nn.Module, h: torch.Tensor) -> torch.Tensor:
    """``h + mlp(post_attention_layernorm(h))``: the MLP window of a Llama-style block."""
    return h + block.mlp(block.post_attention_layernorm(h))


def windows(model: nn.Module, window: str | Blocks) -> list[Window]:
    """The partition of the decoder blocks into reconstruction windows, in execution order.

    Every parameter of every block belongs to exactly one window (tested).
    """
    prefix, blocks = decoder_blocks(model)
    if isinstance(window, Blocks):
        k = window.k
    elif window == "block":
        k = 1
    elif window in ("attn_mlp", "matrix"):
        k = None
    else:
        raise ValueError(f"window must be one of {WINDOWS} or Blocks(k), got {window!r}")
    out = []
    if k is not None:
        for a in range(0, len(blocks), k):
            b = min(a + k, len(blocks))
            mods = [blocks[i] for i in range(a, b)]
            lin = [n for i in range(a, b) for n in linear_names(blocks[i], f"{prefix}.{i}")]
            out.append(Window(f"blocks {a}" if b == a + 1 else f"blocks {a}-{b - 1}", "blocks", a, b, mods, lin))
        return out
    for i, blk in enumerate(blocks):
        bp = f"{prefix}.{i}"
        if window == "attn_mlp":
            ln1, attn, ln2, mlp = _llama_parts(blk, i)
            out.append(Window(f"block {i} attn", "attn", i, i + 1, [ln1, attn],
                              linear_names(attn, f"{bp}.self_attn")))
            out.append(Window(f"block {i} mlp", "mlp", i, i + 1, [ln2, mlp], linear_names(mlp, f"{bp}.mlp")))
        else:
            for n, m in blk.named_modules():
                if _is_linear(m):
                    out.append(Window(f"{bp}.{n}", "matrix", i, i + 1, [m], [f"{bp}.{n}"]))
    return out
