r"""Model surgery for masked layers: swap ``nn.Linear`` modules for :class:`~fastnips.prune.masked.MaskedLinear`
(and back), add and merge masked LoRA adapters, keep masks through optimiser steps, report sparsity.

Every function here changes the model in place and returns it: a module is replaced in every parent that
holds it (a module shared by two parents is replaced in both), and a bad argument is reported before any
module is replaced.

Examples
--------
>>> import torch
>>> from torch import nn
>>> from fastnips.prune import apply_masks, masks_of, strip_masks
>>> model = nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 2))
>>> mask = torch.arange(32).reshape(4, 8) % 2 == 0
>>> _ = apply_masks(model, {"0": mask})
>>> type(model[0]).__name__, bool((masks_of(model)["0"] == mask).all())
('MaskedLinear', True)
>>> type(strip_masks(model)[0]).__name__, float((model[0].weight == 0).float().mean())
('Linear', 0.5)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import torch
from torch import nn

from .masked import LoRA, MaskedLinear, MaskedLoRALinear, check_backend_name, check_mask

__all__ = ["SparsityRow", "add_lora", "apply_masks", "keep_masks", "masks_of", "merge_lora", "sparsity_report",
           "strip_masks"]

_MASKED = (MaskedLinear, MaskedLoRALinear)


def _parents(model: nn.Module) -> dict[int, list[tuple[nn.Module, str, str]]]:
    """id(module) -> every (parent, attribute, qualified name) that holds it (shared modules appear twice)."""
    out: dict[int, list] = {}
    for pname, parent in model.named_modules(remove_duplicate=False):
        for cname, child in parent._modules.items():
            if child is not None:
                out.setdefault(id(child), []).append((parent, cname, f"{pname}.{cname}" if pname else cname))
    return out


def _replace(model: nn.Module, parents, old: nn.Module, new: nn.Module, name: str) -> None:
    holders = parents.get(id(old), [])
    if not holders:
        raise ValueError(f"cannot replace {name!r}: it is the model itself (wrap it in a container, or use "
                         "MaskedLinear.from_linear)")
    for parent, cname, _ in holders:
        setattr(parent, cname, new)


def _lookup(model: nn.Module, name) -> nn.Module:
    if not isinstance(name, str):
        raise TypeError(f"module names must be strings (as in model.named_modules()), got {name!r}")
    try:
        return model.get_submodule(name)
    except AttributeError:
        raise ValueError(f"no module named {name!r} in the model (names as in model.named_modules(), e.g. "
                         f"{[n for n, _ in model.named_modules()][1:4]})") from None


def apply_masks(model: nn.Module, masks: dict[str, torch.Tensor], *, check: bool = True,
                backend: str = "auto") -> nn.Module:
    """Replace, in place, each named ``nn.Linear`` by a :class:`MaskedLinear` with its mask.

    Parameters
    ----------
    model : nn.Module
    masks : dict[str, torch.Tensor of bool]
        Module name (as in ``model.named_modules()``) -> keep-mask (out_features, in_features). A name that
        is already a :class:`MaskedLinear` gets the new mask (:meth:`MaskedLinear.set_mask_`).
    check : bool, default True
        Validate every entry before replacing any module, so a bad entry leaves the model untouched. With
        False, entries are validated one by one as they are applied.
    backend : {"auto", "reference", "triton"}
        Of the new layers' masked products (:mod:`fastnips.prune.masked_ops`).

    Returns
    -------
    nn.Module
        ``model`` itself.

    Raises
    ------
    ValueError
        An unknown name; a mask of the wrong shape; the model itself named (it cannot be replaced in
        place); a weight tied to another parameter (masking it would prune the other one too); the
        ``out_proj`` of an ``nn.MultiheadAttention`` (its forward bypasses the submodule).
    TypeError
        A named module that is not an ``nn.Linear``/:class:`MaskedLinear`; a non-bool mask.
    """
    if not isinstance(masks, dict):
        raise TypeError(f"masks must be a dict of module name -> bool mask, got {type(masks).__name__}")
    check_backend_name(backend)
    parents = _parents(model)

    def validate(name, mask):
        mod = _lookup(model, name)
        if isinstance(mod, MaskedLoRALinear):
            raise TypeError(f"module {name!r} is a MaskedLoRALinear: merge_lora first")
        if not isinstance(mod, nn.Linear | MaskedLinear):
            raise TypeError(f"module {name!r} is a {type(mod).__name__}, not an nn.Linear")
        if mod is model:
            raise ValueError(f"cannot replace {name!r}: it is the model itself (wrap it in a container, or use "
                             "MaskedLinear.from_linear)")
        for parent, _, _ in parents.get(id(mod), []):
            if isinstance(parent, nn.MultiheadAttention):
                raise ValueError(f"module {name!r} is the out_proj of an nn.MultiheadAttention, whose forward reads "
                                 "its weight directly: a mask there would not be applied")
        try:
            check_mask(mask, mod.weight, where=f"module {name!r}: ")
        except TypeError as e:
            raise TypeError(f"module {name!r}: {e}") from None
        if not isinstance(mod, MaskedLinear):
            own = {f"{q}.weight" for _, _, q in parents.get(id(mod), [])}
            tied = [n for n, p in model.named_parameters(remove_duplicate=False) if p is mod.weight and n not in own]
            if tied:
                raise ValueError(f"the weight of module {name!r} is tied to {tied}: masking it would prune those "
                                 "too (untie the weights, or leave this module out)")
        return mod

    def validate_once(name, mask, seen):
        mod = validate(name, mask)
        if id(mod) in seen:
            raise ValueError(f"module {name!r} is the same module as {seen[id(mod)]!r}: give one mask for it")
        seen[id(mod)] = name
        return mod

    seen: dict[int, str] = {}
    if check:
        mods = {name: validate_once(name, mask, seen) for name, mask in masks.items()}
        seen = {}
    for name, mask in masks.items():
        mod = mods[name] if check else validate_once(name, mask, seen)
        if isinstance(mod, MaskedLinear):
            mod.set_mask_(mask)
        else:
            _replace(model, parents, mod, MaskedLinear.from_linear(mod, mask, backend=backend), name)
    return model


def strip_masks(model: nn.Module) -> nn.Module:
    """Replace, in place, every :class:`MaskedLinear` by an ``nn.Linear`` with the same Parameters, and
    every :class:`MaskedLoRALinear` by its merged layer (:meth:`MaskedLoRALinear.merge`) made plain.
    Returns ``model``. The pruned weights stay 0.0; the masks are gone."""
    parents = _parents(model)
    for name, mod in list(model.named_modules()):
        if isinstance(mod, MaskedLoRALinear):
            merged = mod.merge()
            new = merged.to_linear() if isinstance(merged, MaskedLinear) else merged
        elif isinstance(mod, MaskedLinear):
            new = mod.to_linear()
        else:
            continue
        _replace(model, parents, mod, new, name)
    return model


def add_lora(model: nn.Module, lora: LoRA | None = None, names: Iterable[str] | None = None, *,
             generator: torch.Generator | None = None) -> nn.Module:
    """Replace, in place, :class:`MaskedLinear` layers by :class:`MaskedLoRALinear` (base frozen, A and B
    trainable). Only converts: the ``requires_grad`` of every other parameter of the model is left as it is,
    so the caller decides what trains (e.g. ``model.requires_grad_(False)`` first, then ``add_lora``, to
    train the LoRA factors alone, as the reference code's ``SelectivePEFT``).

    Parameters
    ----------
    model : nn.Module
    lora : LoRA, default LoRA() (r=16, alpha=32, masked)
    names : iterable of str, optional
        The layers to convert (default: every MaskedLinear).
    generator : torch.Generator, optional
        For the init of the A factors (in ``named_modules`` order).

    Returns
    -------
    nn.Module
        ``model``, holding the new :class:`MaskedLoRALinear` layers.

    Raises
    ------
    ValueError, TypeError
        An unknown name, or a named module that is not a MaskedLinear.
    """
    lora = LoRA() if lora is None else lora
    if not isinstance(lora, LoRA):
        raise TypeError(f"lora must be a LoRA config, got {type(lora).__name__}")
    if names is None:
        todo = [(n, m) for n, m in model.named_modules() if type(m) is MaskedLinear]
    else:
        if isinstance(names, str):
            raise TypeError("names must be an iterable of module names, not one string")
        todo = []
        for n in names:
            m = _lookup(model, n)
            if not isinstance(m, MaskedLinear):
                raise TypeError(f"module {n!r} is a {type(m).__name__}, not a MaskedLinear (apply_masks first)")
            todo.append((n, m))
    parents = _parents(model)
    for n, m in todo:
        _replace(model, parents, m, MaskedLoRALinear(m, lora, generator=generator), n)
    return model


def merge_lora(model: nn.Module) -> nn.Module:
    """Replace, in place, every :class:`MaskedLoRALinear` by its merged layer (:meth:`MaskedLoRALinear.merge`:
    a :class:`MaskedLinear`, or a dense ``nn.Linear`` with a warning for unmasked LoRA). Returns ``model``."""
    parents = _parents(model)
    for name, mod in list(model.named_modules()):
        if isinstance(mod, MaskedLoRALinear):
            _replace(model, parents, mod, mod.merge(), name)
    return model


def masks_of(model: nn.Module) -> dict[str, torch.Tensor]:
    """Module name -> bool keep-mask (unpacked) of every :class:`MaskedLinear` and :class:`MaskedLoRALinear`."""
    return {n: m.mask for n, m in model.named_modules() if isinstance(m, _MASKED)}


def keep_masks(optimizer: torch.optim.Optimizer, model_or_modules: nn.Module | Iterable[nn.Module]):
    """After every ``optimizer.step()``, re-zero the pruned entries (:meth:`MaskedLinear.enforce_`) of the
    masked layers whose weight this optimizer updates.

    The layers are looked up at every step (so layers added later by :func:`apply_masks` or
    :func:`add_lora` count); a masked layer whose weight is not among the optimizer's parameters cannot
    change through it and is skipped (one pass over each trained weight per step, not over the model).

    Parameters
    ----------
    optimizer : torch.optim.Optimizer
    model_or_modules : nn.Module or iterable of nn.Module
        Searched recursively for masked layers.

    Returns
    -------
    torch.utils.hooks.RemovableHandle
        ``handle.remove()`` stops it.
    """
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
    roots = [model_or_modules] if isinstance(model_or_modules, nn.Module) else list(model_or_modules)
    for r in roots:
        if not isinstance(r, nn.Module):
            raise TypeError(f"keep_masks takes a model or modules, got {type(r).__name__}")

    def hook(opt, args, kwargs):
        params = {id(p) for g in opt.param_groups for p in g["params"]}
        seen = set()
        for root in roots:
            for m in root.modules():
                if isinstance(m, _MASKED) and id(m) not in seen and id(m.weight) in params:
                    seen.add(id(m))
                    m.enforce_()

    return optimizer.register_step_post_hook(hook)


class SparsityRow(NamedTuple):
    """One row of :func:`sparsity_report`."""

    name: str
    shape: tuple[int, int]
    sparsity: float


def sparsity_report(model: nn.Module) -> list[SparsityRow]:
    """(name, (out, in), sparsity) for every linear layer: masked layers report their mask's fraction of
    pruned entries, plain ``nn.Linear`` layers their fraction of exact zeros. In ``named_modules`` order."""
    rows = []
    for name, m in model.named_modules():
        if isinstance(m, _MASKED):
            rows.append(SparsityRow(name, (m.out_features, m.in_features), m.sparsity))
        elif isinstance(m, nn.Linear):
            w = m.weight.detach()
            rows.append(SparsityRow(name, tuple(w.shape), float((w == 0).sum()) / max(w.numel(), 1)))
    return rows
