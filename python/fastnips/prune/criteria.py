r"""Pruning criteria over a model's linear layers: magnitude, Wanda and SparseGPT.

Which layers: every ``nn.Linear`` (and transformers ``Conv1D``, GPT-2 family: see :mod:`fastnips.prune.arch`)
inside the decoder blocks (:func:`fastnips.prune.arch.decoder_blocks`); embeddings and ``lm_head`` stay dense,
as in the reference tools.

Statistics, once per distinct input
-----------------------------------
Wanda needs :math:`\|X_{:,j}\|_2^2` per input feature and SparseGPT the Hessian
:math:`H = \tfrac{2}{n}\sum_t x_t x_t^\top` of each linear's input. Linears that read the *same* tensor
(``q/k/v_proj``; ``gate/up_proj``) share one :class:`InputStats`: the forward hooks key the statistics by the
input tensor, so attention's three projections cost one pass, not three. Wanda's statistic equals
``diag(H)/2`` of SparseGPT's Hessian (up to the token count). Hooks return ``None``: PyTorch treats any
other return value of a forward hook as a replacement output.

Propagation
-----------
As in the reference Wanda and SparseGPT, blocks are pruned in order, and the statistics of block ``i`` come
from calibration inputs run through the *already pruned* blocks ``0..i-1`` (``propagate="sparse"``;
``"dense"`` uses the dense model's activations instead). Within a block every linear sees the statistics of
one pre-pruning pass of that block.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import nn

from .arch import conv_masks, decoder_blocks, linear_names, linear_view
from .masks import NM, magnitude_scores, prune_weight_, select_mask
from .profiles import check_per_layer_names

if TYPE_CHECKING:
    from .calib import Calibration

__all__ = ["CRITERIA", "InputStats", "StatsCollector", "magnitude", "sparsegpt", "wanda"]

CRITERIA = ("magnitude", "wanda", "sparsegpt")


class InputStats:
    """Running statistics of one input feature space: squared column norms and (optionally) the Hessian."""

    def __init__(self, d: int, hessian: bool, device: torch.device | str | None = None):
        self.d = d
        self.tokens = 0
        self.passes = 0
        self.sq = torch.zeros(d, dtype=torch.float64, device=device)
        self._xtx = torch.zeros(d, d, dtype=torch.float32, device=device) if hessian else None

    def add(self, x: torch.Tensor) -> None:
        """Accumulate the tokens of ``x``, shape (..., d)."""
        x2 = x.detach().reshape(-1, self.d).float()
        self.tokens += x2.shape[0]
        self.passes += 1
        self.sq += x2.square().sum(0, dtype=torch.float64)
        if self._xtx is not None:
            self._xtx.addmm_(x2.t(), x2)

    def norms(self) -> torch.Tensor:
        """:math:`\\|X_{:,j}\\|_2` over all tokens seen, float32."""
        return self.sq.sqrt().float()

    def hessian(self) -> torch.Tensor:
        """:math:`H = \\tfrac{2}{n} X^\\top X` over the ``n`` tokens seen (float64)."""
        if self._xtx is None:
            raise RuntimeError("this InputStats was created without a Hessian")
        if self.tokens == 0:
            raise RuntimeError("no tokens were seen")
        return self._xtx.double() * (2.0 / self.tokens)


class StatsCollector:
    """Forward hooks on the linears of one block that fill one :class:`InputStats` per distinct input.

    Call :meth:`next_batch` before each forward pass of the block; linears whose input is the tensor an
    earlier linear already recorded in this pass share that linear's statistics.
    """

    def __init__(self, modules: dict[str, nn.Linear], hessian: bool):
        self.by_name: dict[str, InputStats] = {}
        self._seen: dict[tuple, InputStats] = {}
        self._handles = []
        for name, mod in modules.items():
            self._handles.append(mod.register_forward_hook(self._hook(name, hessian)))

    def _hook(self, name: str, hessian: bool):
        def hook(_mod, inp, _out):
            x = inp[0]
            key = (x.data_ptr(), tuple(x.shape), x.dtype, x._version)
            hit = self._seen.get(key)
            if hit is None:
                st = self.by_name.get(name) or InputStats(x.shape[-1], hessian, device=x.device)
                st.add(x)
                # keep x alive for the pass: a freed input's address can be reused by a later, different
                # input of the same shape (e.g. the MLP's norm output after attention's), which must not match
                self._seen[key] = (x, st)
            else:
                st = hit[1]
            self.by_name.setdefault(name, st)
            # returns None: a returned value would replace the layer's output

        return hook

    def next_batch(self) -> None:
        """Start a new forward pass (forget which inputs were already recorded)."""
        self._seen = {}

    def remove(self) -> None:
        """Remove the hooks."""
        for h in self._handles:
            h.remove()
        self._handles = []

    @property
    def distinct(self) -> int:
        """Number of distinct :class:`InputStats` (inputs) recorded."""
        return len({id(s) for s in self.by_name.values()})


@dataclass(frozen=True)
class Criterion:
    """A criterion and its mask spec: how one linear of a block is pruned given its input statistics."""

    name: str
    sparsity: float | None = None
    pattern: NM | None = None
    scope: str | None = None  # None: the criterion's own ("block" for sparsegpt, "row" otherwise)
    blocksize: int = 128
    percdamp: float = 0.01
    backend: str = "auto"
    per_layer: Mapping | None = None  # qualified linear name -> sparsity or NM; other linears stay dense

    def __post_init__(self):
        if self.name not in CRITERIA:
            raise ValueError(f"criterion must be one of {CRITERIA}, got {self.name!r}")
        if self.per_layer is not None:
            from .profiles import check_per_layer

            if self.sparsity is not None or self.pattern is not None:
                raise ValueError("give per_layer or sparsity/pattern, not both")
            object.__setattr__(self, "per_layer", check_per_layer(self.per_layer))
            if self.scope is None:
                object.__setattr__(self, "scope", "block" if self.name == "sparsegpt" else "row")
            return
        if self.scope is None:
            object.__setattr__(self, "scope", "block" if self.name == "sparsegpt" else "row")
        if (self.sparsity is None) == (self.pattern is None):
            raise ValueError("give exactly one of sparsity (unstructured) or pattern (an NM(keep, group))")
        if self.pattern is not None and not isinstance(self.pattern, NM):
            raise TypeError(f"pattern must be an NM(keep, group), got {self.pattern!r}")
        if self.sparsity is not None:
            s = self.sparsity
            if isinstance(s, bool) or not isinstance(s, (int, float)) or not 0.0 <= float(s) < 1.0:
                raise ValueError(f"sparsity must be a float in [0, 1), got {s!r}")

    @property
    def needs_stats(self) -> bool:
        return self.name != "magnitude"

    @property
    def needs_hessian(self) -> bool:
        return self.name == "sparsegpt"

    def prune_(self, linear: nn.Linear, stats: InputStats | None, factors: dict | None = None,
               name: str | None = None) -> torch.Tensor:
        """Prune ``linear.weight`` in place (SparseGPT also updates the kept weights); return the keep-mask.

        ``factors`` (SparseGPT): a dict shared by the linears of one block, so that those reading the same
        input (one :class:`InputStats`) reuse one Hessian factorisation. ``name``: the qualified name, looked
        up in ``per_layer`` (a linear it does not list is left dense: an all-True mask).
        """
        w = linear.weight
        spec = dict(sparsity=self.sparsity, pattern=self.pattern, scope=self.scope)
        if self.per_layer is not None:
            target = self.per_layer.get(name)
            if target is None:
                return torch.ones(w.shape, dtype=torch.bool, device=w.device)
            spec = dict(sparsity=None, pattern=target, scope=self.scope) if isinstance(target, NM) else dict(
                sparsity=target, pattern=None, scope=self.scope)
        with torch.no_grad():
            if self.name == "sparsegpt":
                from .sparsegpt_layer import sparsegpt_prune_

                key = id(stats)
                shared = {} if factors is None else factors.get(key, {})
                res = sparsegpt_prune_(w.data, stats.hessian(), blocksize=self.blocksize, percdamp=self.percdamp,
                                       backend=self.backend, **shared, **spec)
                if factors is not None:
                    factors[key] = {"hinv": res.hinv} if res.hinv is not None else {"factor": res.factor}
                return res.mask
            return prune_weight_(w.data, criterion=self.name, input_norms=None if stats is None else stats.norms(),
                                 backend=self.backend, **spec)


def block_linears(model: nn.Module) -> dict[str, nn.Module]:
    """Every linear layer (``nn.Linear``, transformers ``Conv1D``) inside the decoder blocks, by qualified name."""
    prefix, blocks = decoder_blocks(model)
    mods = dict(model.named_modules())
    return {n: mods[n] for i, b in enumerate(blocks) for n in linear_names(b, f"{prefix}.{i}")}


def magnitude(model: nn.Module, *, sparsity: float | None = None, pattern: NM | None = None, scope: str = "row",
              inplace: bool = True, backend: str = "auto",
              per_layer: Mapping[str, float | NM] | None = None) -> dict[str, torch.Tensor]:
    """Magnitude pruning of every linear in the decoder blocks: prune the smallest :math:`|W_{ij}|`.

    Parameters
    ----------
    model : torch.nn.Module
        A decoder (Hugging Face causal LM, :class:`~fastnips.prune.tiny.TinyDecoder`, ...).
    sparsity, pattern, scope
        As in :func:`fastnips.prune.select_mask`: exact counts, index tie-breaking.
    inplace : bool, default True
        Zero the pruned weights; ``False`` leaves the model untouched and only returns the masks.
    backend : {"auto", "reference", "cpp"}
    per_layer : mapping of str to float or NM, optional
        Instead of ``sparsity`` / ``pattern``: the target of each linear by qualified name (e.g. from
        :func:`fastnips.prune.layer_profile` or :func:`fastnips.prune.owl_profile`); linears it
        does not name stay dense.

    Returns
    -------
    dict[str, torch.Tensor]
        Keep-masks (bool, True = kept) by qualified linear name.
    """
    crit = Criterion("magnitude", sparsity, pattern, scope, backend=backend, per_layer=per_layer)
    check_per_layer_names(model, crit.per_layer)
    masks = {}
    with linear_view(model) as (convs, _):
        for name, lin in block_linears(model).items():
            if inplace or per_layer is not None:
                if not inplace:
                    raise ValueError("per_layer needs inplace=True")
                masks[name] = crit.prune_(lin, None, name=name)
            else:
                masks[name] = select_mask(magnitude_scores(lin.weight), sparsity=sparsity, pattern=pattern,
                                          scope=crit.scope, backend=backend)
    return conv_masks(masks, convs)


def wanda(model: nn.Module, calib: Calibration, *, sparsity: float | None = None, pattern: NM | None = None,
          scope: str = "row", propagate: str = "sparse", batch_size: int = 8, inplace: bool = True,
          backend: str = "auto", progress: bool = False,
          per_layer: Mapping[str, float | NM] | None = None) -> dict[str, torch.Tensor]:
    r"""Wanda (Sun et al., arXiv 2306.11695): prune the smallest :math:`|W_{ij}|\,\|X_{:,j}\|_2`.

    Parameters
    ----------
    model : torch.nn.Module
    calib : Calibration
        The calibration token windows (:meth:`Calibration.from_token_ids`).
    sparsity, pattern, scope
        As in :func:`fastnips.prune.select_mask` (Wanda's own choice is ``scope="row"``).
    propagate : {"sparse", "dense"}
        Whether block ``i``'s statistics come from the pruned blocks before it (the reference) or the dense.
    batch_size : int
        Calibration sequences per forward pass.
    inplace : bool, default True
        ``False`` restores every block's weights after it was used for propagation: the model is unchanged.
    backend : {"auto", "reference", "cpp"}
        Mask selection backend.
    progress : bool
        A progress bar over blocks (tqdm when installed).
    per_layer : mapping of str to float or NM, optional
        As in :func:`magnitude`.

    Returns
    -------
    dict[str, torch.Tensor]
        Keep-masks by qualified linear name.
    """
    from .reconstruction import _run

    crit = Criterion("wanda", sparsity, pattern, scope, backend=backend, per_layer=per_layer)
    return _run(model, calib, window="block", criterion=crit, propagate=propagate, batch_size=batch_size,
                restore=not inplace, progress=progress).masks


def sparsegpt(model: nn.Module, calib: Calibration, *, sparsity: float | None = None, pattern: NM | None = None,
              scope: str = "block", blocksize: int = 128, percdamp: float = 0.01, propagate: str = "sparse",
              batch_size: int = 8, backend: str = "auto", progress: bool = False,
              per_layer: Mapping[str, float | NM] | None = None) -> dict[str, torch.Tensor]:
    r"""SparseGPT (Frantar & Alistarh, arXiv 2301.00774): OBS pruning with weight updates, in place.

    Each linear's weights are pruned column by column with the optimal-brain-surgeon update of the columns
    not yet processed, from the Hessian :math:`H = \tfrac{2}{n}X^\top X` of its input
    (:func:`fastnips.prune.sparsegpt_prune_`, module :mod:`fastnips.prune.sparsegpt_layer`, has the details and the
    exact-count mask rule).

    Parameters are those of :func:`wanda` except ``scope`` plus ``blocksize`` (columns per lazy-update block) and
    ``percdamp`` (diagonal damping as a fraction of mean(diag H)). ``scope="block"`` (the default) selects the
    mask as the reference SparseGPT does, over all rows of each block of ``blocksize`` columns (exact counts);
    ``scope="row"`` gives every row the same count. ``per_layer`` as in :func:`magnitude`. The model is always
    modified in place (the update *is* the method); keep a copy if the dense model is needed, or use
    :func:`prune_and_reconstruct`.
    """
    from .reconstruction import _run

    crit = Criterion("sparsegpt", sparsity, pattern, scope, blocksize=blocksize, percdamp=percdamp, backend=backend,
                     per_layer=per_layer)
    return _run(model, calib, window="block", criterion=crit, propagate=propagate, batch_size=batch_size,
                progress=progress).masks
