r"""Per-layer sparsity: which linears are pruned, and how much each.

The model-level criteria (:func:`fastnips.prune.magnitude`, :func:`~fastnips.prune.wanda`,
:func:`~fastnips.prune.sparsegpt`, :func:`~fastnips.prune.prune_and_reconstruct`) take ``per_layer``, a mapping
of qualified linear names to a sparsity (float in [0, 1)) or an :class:`~fastnips.prune.NM` pattern; linears it
does not name stay dense. Two ways to build one:

* :func:`layer_profile` -- a uniform target over the linears selected by ``include`` / ``ignore`` (shell-style
  patterns on the qualified names, :mod:`fnmatch`), with per-pattern ``overrides`` (a user dict);
* :func:`owl_profile` -- OWL, outlier-weighted layerwise sparsity (Yin et al., "Outlier Weighed Layerwise
  Sparsity (OWL): A Missing Secret Sauce for Pruning LLMs to High Sparsity", arXiv 2310.05175): block
  :math:`\ell` gets density :math:`1 - s_\ell` proportional to its share of outliers, the Wanda scores
  :math:`|W_{ij}|\,\|X_{:,j}\|_2` above ``m`` times the block's mean score. With :math:`D_\ell` the outlier
  ratio, :math:`\tilde D_\ell = 2\lambda (D_\ell - \min D)/(\max D - \min D)` and density
  :math:`\tilde D_\ell - \mathrm{mean}(\tilde D) + (1 - s)`, so densities span :math:`2\lambda` around
  :math:`1 - s` and their mean is :math:`1 - s` (the paper's ``Lamda`` and ``Hyper_m``; defaults
  :math:`\lambda = 0.08`, m = 5, its LLaMA settings). Choices the paper leaves open: the statistics come
  from the dense model (every block sees dense inputs; as its code does); all blocks with the same outlier
  ratio (max = min) get the uniform sparsity; a block's sparsity is clipped to [0, 0.99].
"""

from __future__ import annotations

import fnmatch
import numbers
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import torch
from torch import nn

from .masks import NM

if TYPE_CHECKING:
    from .calib import Calibration

__all__ = ["check_per_layer", "check_per_layer_names", "layer_profile", "owl_profile"]


def _target(name: str, v):
    if isinstance(v, NM):
        return v
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0.0 <= float(v) < 1.0:
        raise ValueError(f"per_layer[{name!r}] must be a sparsity in [0, 1) or an NM(keep, group), got {v!r}")
    return float(v)


def check_per_layer(per_layer) -> dict:
    """``per_layer`` as a dict of str -> float or NM, every value checked (ValueError / TypeError naming it)."""
    if not isinstance(per_layer, Mapping):
        raise TypeError(f"per_layer must be a mapping of linear name -> sparsity or NM, got {type(per_layer).__name__}")
    out = {}
    for k, v in per_layer.items():
        if not isinstance(k, str):
            raise TypeError(f"per_layer keys must be qualified linear names (str), got {k!r}")
        out[k] = _target(k, v)
    return out


def check_per_layer_names(model: nn.Module, per_layer: Mapping | None) -> None:
    """Every name of ``per_layer`` must be a linear of the decoder blocks (a typo would silently stay dense)."""
    if per_layer is None:
        return
    from .criteria import block_linears

    unknown = sorted(set(per_layer) - set(block_linears(model)))
    if unknown:
        raise ValueError(f"per_layer names layers that are not linears of the decoder blocks: {unknown[:5]}")


def _patterns(name: str, pats) -> list[str]:
    if pats is None:
        return []
    if isinstance(pats, str):
        return [pats]
    pats = list(pats)
    if not all(isinstance(p, str) for p in pats):
        raise TypeError(f"{name} must be a pattern or a list of patterns (str), got {pats!r}")
    return pats


def _selected(model: nn.Module, include, ignore) -> list[str]:
    from .criteria import block_linears

    inc, ign = _patterns("include", include), _patterns("ignore", ignore)
    names = list(block_linears(model))
    for label, pats in (("include", inc), ("ignore", ign)):
        for p in pats:
            if not any(fnmatch.fnmatchcase(n, p) for n in names):
                raise ValueError(f"{label} pattern {p!r} matches no linear of the decoder blocks "
                                 f"(names look like {names[0]!r})")
    return [n for n in names if (not inc or any(fnmatch.fnmatchcase(n, p) for p in inc))
            and not any(fnmatch.fnmatchcase(n, p) for p in ign)]


def layer_profile(model: nn.Module, target: float | NM, *, include: str | Iterable[str] | None = None,
                  ignore: str | Iterable[str] | None = None,
                  overrides: Mapping[str, float | NM] | None = None) -> dict[str, float | NM]:
    """A ``per_layer`` mapping: ``target`` for the selected linears, ``overrides`` where their patterns match.

    Parameters
    ----------
    model : torch.nn.Module
    target : float in [0, 1) or NM
        The sparsity (or N:M pattern) of every selected linear.
    include, ignore : str or list of str, optional
        Shell-style patterns (:func:`fnmatch.fnmatchcase`) on qualified linear names: keep the linears matching
        an ``include`` pattern (all when None), then drop those matching an ``ignore`` pattern. A pattern that
        matches nothing raises (a typo would otherwise prune everything or nothing).
    overrides : mapping of pattern to float or NM, optional
        Per-pattern targets for selected linears; the last matching pattern wins.

    Returns
    -------
    dict[str, float | NM]

    Examples
    --------
    >>> from fastnips.prune import layer_profile, load_causal_lm
    >>> model, _ = load_causal_lm("tiny")
    >>> p = layer_profile(model, 0.5, ignore="*.self_attn.*", overrides={"*.0.mlp.*": 0.3})
    >>> sorted(set(p.values())), all("self_attn" not in n for n in p)
    ([0.3, 0.5], True)
    """
    target = _target("target", target)
    over = check_per_layer(overrides or {})
    out = {}
    for n in _selected(model, include, ignore):
        out[n] = target
        for p, v in over.items():
            if fnmatch.fnmatchcase(n, p):
                out[n] = v
    return out


def owl_profile(model: nn.Module, calib: Calibration, sparsity: float, *, lam: float = 0.08, m: float = 5.0,
                include: str | Iterable[str] | None = None, ignore: str | Iterable[str] | None = None,
                batch_size: int = 8) -> dict[str, float]:
    r"""OWL layerwise sparsities (see the module docstring) for the selected linears, one value per block.

    Parameters
    ----------
    model : torch.nn.Module
    calib : Calibration
    sparsity : float in [0, 1)
        The mean target sparsity over blocks.
    lam : float in [0, 0.5], default 0.08
        Half the spread of the block sparsities (the paper's :math:`\lambda`).
    m : float > 0, default 5
        Outlier threshold as a multiple of the block's mean Wanda score (the paper's M).
    include, ignore
        As in :func:`layer_profile`; the outlier ratio of a block counts its selected linears.
    batch_size : int

    Returns
    -------
    dict[str, float]
        Sparsity by qualified linear name (the same within a block).
    """
    from .arch import call_block, capture_block_inputs, decoder_blocks, linear_view
    from .criteria import StatsCollector
    from .engine import _to
    from .masks import wanda_scores

    s = _target("sparsity", sparsity)
    if isinstance(s, NM):
        raise ValueError("owl_profile allocates unstructured sparsity; got an NM pattern")
    if not 0.0 <= float(lam) <= 0.5 or not float(m) > 0:
        raise ValueError(f"lam must be in [0, 0.5] and m > 0, got lam={lam!r}, m={m!r}")
    names = _selected(model, include, ignore)
    ratios: list[float] = []
    per_block: list[list[str]] = []
    with linear_view(model), torch.no_grad():
        prefix, blocks = decoder_blocks(model)
        dev = next(model.parameters()).device
        h = capture_block_inputs(model, calib.batches(batch_size), device=dev)
        for b, blk in enumerate(blocks):
            mine = [n for n in names if n.startswith(f"{prefix}.{b}.")]
            lin = {n: model.get_submodule(n) for n in mine}
            col = StatsCollector(lin, hessian=False)
            try:  # one dense pass: the statistics of this block and the inputs of the next
                nxt = []
                for x, kw in h:
                    col.next_batch()
                    nxt.append((call_block(blk, x.to(dev), _to(kw, dev)).to(x.device), kw))
            finally:
                col.remove()
            h = nxt
            if mine:
                sc = torch.cat([wanda_scores(lin[n].weight.float(), col.by_name[n].norms()).flatten() for n in mine])
                ratios.append(float((sc > m * sc.mean()).double().mean()))
                per_block.append(mine)
    D = torch.tensor(ratios, dtype=torch.float64)
    spread = float(D.max() - D.min()) if len(D) else 0.0
    dens = (D - D.min()) * (2 * float(lam) / spread) if spread > 0 else torch.zeros_like(D)
    dens = dens - dens.mean() + (1.0 - s)
    return {n: min(max(1.0 - float(d), 0.0), 0.99) for d, mine in zip(dens, per_block) for n in mine}
