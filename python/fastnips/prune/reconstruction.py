r"""Local reconstruction after pruning (Wagner, Roux, Zimmer, Pokutta, "A Free Lunch in LLM Compression:
Revisiting Retraining after Pruning", arXiv 2510.14444), and the global retraining baseline.

The decoder is cut into windows (:func:`fastnips.prune.arch.windows`): single matrices, the attention and
MLP halves of each block, one block or ``Blocks(k)``. Window by window, in order:

1. **Dense targets.** The still-dense window (or the matching window of ``dense=``) is run on the *dense
   chain* (the dense model's hidden state at the window's input) and its output :math:`Y` is kept.
2. **Prune** (:func:`prune_and_reconstruct`) or **apply the given masks** (:func:`reconstruct`). Pruning
   statistics come from the sparse chain by default, block by block as in the reference Wanda/SparseGPT.
3. **Reconstruct.** The window's parameters (all of them, or masked-LoRA adapters ``peft=LoRA(r, alpha)``)
   are trained with AdamW on :math:`\mathrm{MSE}(f_\theta(X), Y)`, 10 % linear warm-up then linear decay,
   where :math:`X` is the window's input on the dense chain (``inputs="dense"``, the paper's default) or
   on the sparse chain (``inputs="sparse"``: the output of the already pruned and reconstructed windows).
4. **Advance** both chains: dense by :math:`Y`, sparse by the reconstructed window.

The mask never changes: during training every pruned linear is a
:class:`~fastnips.prune.masked.MaskedLinear`, whose weight gradient is masked and whose pruned weights an
optimiser post-step hook re-zeroes (weight decay included); LoRA adapters are masked and merged into the
sparse weights. Afterwards the layers are plain ``nn.Linear`` again, with exact zeros.

Memory follows the window: only the window's parameters get gradients and optimiser state, and the chains'
hidden states (``n x seqlen x d`` each) live on ``store`` (CPU by default) and move to ``device`` one batch at
a time. With ``device`` set to an accelerator while the model lives on the CPU, each window is moved to the
device for its reconstruction and back afterwards (offloading).

Choices the paper leaves open, made here
----------------------------------------
* Matrix windows train one linear on its own input (dense chain: the dense model's input of that linear,
  bit for bit; sparse chain: the input produced by the block's already reconstructed matrices), against the
  dense model's output of that linear; norms are not trained in matrix mode.
* Pruning is per block (all linears of a block share one statistics pass), also for attention/MLP and
  matrix windows; the reconstruction window is what changes. ``prune_and_reconstruct(..., epochs=0)``
  therefore gives exactly the masks of the criterion run alone.
* Loss: mean squared error over all elements of the window's output (``loss="mse"``), or normalised by the
  target's mean square (``"mse_normalized"``), as in the paper's code.
"""

from __future__ import annotations

import math
import time
from contextlib import nullcontext
from typing import TYPE_CHECKING

import torch
from torch import nn

from .arch import Blocks, capture_block_inputs, conv_masks, decoder_blocks, linear_view, windows
from .calib import Calibration
from .criteria import Criterion
from .engine import Report, WindowReport, _Chains, _lr_lambda, _Reconstructor, _set_modules, _Train
from .profiles import check_per_layer_names

if TYPE_CHECKING:
    from .masked import LoRA
    from .masks import NM

__all__ = ["Report", "WindowReport", "prune_and_reconstruct", "reconstruct", "retrain"]

INPUTS = ("dense", "sparse")
LOSSES = ("mse", "mse_normalized")


# ----------------------------------------------------------------------------------------------------------
# the driver shared by the criteria, reconstruct and prune_and_reconstruct


def _check_choice(name, value, allowed):
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")


def _check_masks(model: nn.Module, masks: dict) -> None:
    from .criteria import block_linears

    lin = block_linears(model)
    unknown = sorted(set(masks) - set(lin))
    if unknown:
        raise ValueError(f"masks name layers that are not linears of the decoder blocks: {unknown[:5]}")
    for n, m in masks.items():
        if not isinstance(m, torch.Tensor) or m.dtype != torch.bool or m.shape != lin[n].weight.shape:
            raise ValueError(f"masks[{n!r}] must be a bool tensor of shape {tuple(lin[n].weight.shape)}")


def _check_data(model: nn.Module, calib, validation, inputs: str, propagate: str) -> None:
    if not isinstance(calib, Calibration):
        raise TypeError(f"calib must be a fastnips.prune.Calibration, got {type(calib).__name__}")
    _check_choice("inputs", inputs, INPUTS)
    _check_choice("propagate", propagate, INPUTS)
    calib.check_model(model)
    if validation is not None:
        if not isinstance(validation, Calibration):
            raise TypeError(f"validation must be a Calibration, got {type(validation).__name__}")
        validation.check_model(model)


def _groups(wins: list) -> list[list]:
    """Windows processed together: the attention/MLP halves or the matrices of one block; other windows alone."""
    out, i = [], 0
    while i < len(wins):
        group = [wins[i]]
        if wins[i].kind in ("attn", "mlp", "matrix"):
            while i + len(group) < len(wins) and wins[i + len(group)].first == wins[i].first:
                group.append(wins[i + len(group)])
        out.append(group)
        i += len(group)
    return out


def _run(model: nn.Module, calib: Calibration, *, masks: dict | None = None, dense: nn.Module | None = None,
         **kw) -> Report:
    """:func:`_run_linear` with transformers ``Conv1D`` layers seen as ``nn.Linear`` (:func:`linear_view`); the
    masks in and out have each module's own weight shape."""
    crit = kw.get("criterion")
    check_per_layer_names(model, None if crit is None else crit.per_layer)
    with linear_view(model, masks) as (names, masks), linear_view(dense) if dense is not None else nullcontext():
        rep = _run_linear(model, calib, masks=masks, dense=dense, **kw)
    if names:
        rep.masks = conv_masks(rep.masks, names)
    return rep


def _run_linear(model: nn.Module, calib: Calibration, *, window="block", criterion: Criterion | None = None,
                masks: dict | None = None, train: _Train | None = None, inputs: str = "dense",
                propagate: str = "sparse", dense: nn.Module | None = None, batch_size: int = 8,
                validation: Calibration | None = None, device=None, store="cpu", restore: bool = False,
                progress: bool = False) -> Report:
    """Process the decoder window by window; see the module docstring. Returns a :class:`Report`."""
    _check_data(model, calib, validation, inputs, propagate)
    wins = windows(model, window)
    prefix, blocks = decoder_blocks(model)
    dense_blocks = None
    if dense is not None:
        _, dense_blocks = decoder_blocks(dense)
        if len(dense_blocks) != len(blocks):
            raise ValueError(f"dense has {len(dense_blocks)} blocks, model has {len(blocks)}")
    home = next(model.parameters()).device
    device = home if device is None else torch.device(device)
    if masks is not None:
        _check_masks(model, masks)

    was_training = model.training
    flags = {id(p): p.requires_grad for p in model.parameters()}
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    t_start = time.perf_counter()
    need_sparse = inputs == "sparse" or (criterion is not None and propagate == "sparse") or train is None
    src = dense if dense is not None else model
    chains = _Chains(capture_block_inputs(src, calib.batches(batch_size), device=home, store=store), need_sparse)
    vchains = None
    if validation is not None:
        vchains = _Chains(capture_block_inputs(src, validation.batches(batch_size), device=home, store=store),
                          inputs == "sparse")
    bar = _progress(len(wins), progress)
    try:
        gen = torch.Generator().manual_seed(train.seed if train is not None else 0)
        engine = _Reconstructor(model, prefix, blocks, dense_blocks, criterion, masks, train, inputs, propagate,
                                device, home, Report(), gen, restore)
        for group in _groups(wins):
            engine.process(group, chains, vchains)
            bar(len(group), group[-1].name)
    finally:
        bar(0, None, close=True)
        for p in model.parameters():
            p.requires_grad_(flags.get(id(p), True))
        model.train(was_training)
    engine.report.seconds = time.perf_counter() - t_start
    return engine.report


def _progress(total: int, enabled: bool):
    if not enabled:
        return lambda k, name, close=False: None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        tqdm = None
    if tqdm is not None:
        bar = tqdm(total=total, unit="window", desc="prune")

        def step(k, name, close=False):
            if close:
                bar.close()
            else:
                bar.set_postfix_str(name)
                bar.update(k)

        return step
    done = [0]

    def step(k, name, close=False):
        if not close:
            done[0] += k
            print(f"[{done[0]}/{total}] {name}", flush=True)

    return step


# ----------------------------------------------------------------------------------------------------------
# public API


def _train_opts(epochs, lr, batch_size, weight_decay, warmup, loss, peft, seed) -> _Train:
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 0:
        raise ValueError(f"epochs must be an int >= 0, got {epochs!r}")
    if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a positive float, got {lr!r}")
    if not (isinstance(weight_decay, (int, float)) and weight_decay >= 0):
        raise ValueError(f"weight_decay must be >= 0, got {weight_decay!r}")
    if not (isinstance(warmup, (int, float)) and 0 <= warmup < 1):
        raise ValueError(f"warmup must be a fraction in [0, 1), got {warmup!r}")
    _check_choice("loss", loss, LOSSES)
    if peft is not None:
        from .masked import LoRA

        if not isinstance(peft, LoRA):
            raise TypeError(f"peft must be None or a fastnips.prune.LoRA, got {peft!r}")
    return _Train(epochs, float(lr), batch_size, float(weight_decay), float(warmup), loss, peft, int(seed))


def reconstruct(model: nn.Module, calib: Calibration, masks: dict, *, window: str | Blocks = "block",
                inputs: str = "dense", dense: nn.Module | None = None, peft: LoRA | None = None, epochs: int = 2,
                lr: float = 1e-4, batch_size: int = 4, weight_decay: float = 0.0, warmup: float = 0.1,
                loss: str = "mse", validation: Calibration | None = None, device: torch.device | str | None = None,
                store: torch.device | str = "cpu", seed: int = 0,
                progress: bool = False) -> Report:
    """Apply ``masks`` and reconstruct the model window by window against the dense model's activations.

    Parameters
    ----------
    model : torch.nn.Module
        The model to prune and reconstruct, in place. Its current weights are the dense reference unless
        ``dense`` is given (then ``model`` may already be pruned, e.g. by SparseGPT's update).
    calib : Calibration
        Reconstruction data (the paper: 128-1024 sequences).
    masks : dict[str, torch.Tensor]
        Keep-masks by linear name (from :func:`magnitude`, :func:`wanda` with ``inplace=False``, ...).
    window : {"matrix", "attn_mlp", "block"} or Blocks(k)
    inputs : {"dense", "sparse"}
        Where each window's inputs come from (the paper's default: the dense chain).
    dense : torch.nn.Module, optional
        A dense copy of the model whose windows give the targets.
    peft : LoRA, optional
        Train masked LoRA adapters (merged into the sparse weights afterwards) instead of all parameters.
    epochs, lr, batch_size, weight_decay, warmup, loss
        AdamW on the window MSE, ``warmup`` fraction of linear warm-up then linear decay to 0.
    validation : Calibration, optional
        Held-out sequences: the report then has the held-out window loss before and after.
    device, store
        Where windows are trained and where the chains' hidden states are kept (offloading).
    seed : int
        Order of the batches; the run is deterministic on the CPU.
    progress : bool
        A progress bar over windows.

    Returns
    -------
    Report
        ``masks`` and a :class:`WindowReport` per window (loss before/after, seconds, peak bytes).
    """
    tr = _train_opts(epochs, lr, batch_size, weight_decay, warmup, loss, peft, seed)
    if not isinstance(masks, dict) or not masks:
        raise ValueError("masks must be a non-empty dict of keep-masks by linear name")
    return _run(model, calib, window=window, masks=masks, train=tr, inputs=inputs, dense=dense,
                batch_size=batch_size, validation=validation, device=device, store=store, progress=progress)


def prune_and_reconstruct(model: nn.Module, calib: Calibration, *, criterion: str = "wanda",
                          sparsity: float | None = None, pattern: NM | None = None, scope: str | None = None,
                          window: str | Blocks = "block", inputs: str = "dense", propagate: str = "sparse",
                          peft: LoRA | None = None, epochs: int = 2,
                          lr: float = 1e-4, batch_size: int = 4, weight_decay: float = 0.0, warmup: float = 0.1,
                          loss: str = "mse", blocksize: int = 128, percdamp: float = 0.01,
                          validation: Calibration | None = None, device: torch.device | str | None = None,
                          store: torch.device | str = "cpu", seed: int = 0,
                          backend: str = "auto", progress: bool = False,
                          per_layer: dict | None = None) -> Report:
    """Prune and reconstruct interleaved, window by window (the paper's pipeline), in place.

    For each window: dense targets first, then the criterion prunes the window's blocks with statistics
    from the sparse chain (``propagate``), then the window is reconstructed. Parameters as in
    :func:`reconstruct` and :func:`fastnips.prune.wanda` / :func:`fastnips.prune.sparsegpt`; ``scope=None`` is
    the criterion's own default (``"block"`` for sparsegpt, ``"row"`` for magnitude and wanda). ``per_layer``
    (instead of ``sparsity`` / ``pattern``): the target of each linear by name, others stay dense
    (:func:`fastnips.prune.layer_profile`, :func:`fastnips.prune.owl_profile`).
    ``epochs=0`` prunes only (the masks then equal the criterion's own).
    """
    tr = _train_opts(epochs, lr, batch_size, weight_decay, warmup, loss, peft, seed)
    crit = Criterion(criterion, sparsity, pattern, scope, blocksize=blocksize, percdamp=percdamp, backend=backend,
                     per_layer=per_layer)
    return _run(model, calib, window=window, criterion=crit, train=tr, inputs=inputs, propagate=propagate,
                batch_size=batch_size, validation=validation, device=device, store=store, progress=progress)


def retrain(model: nn.Module, calib: Calibration, masks: dict, *, peft: LoRA | None = None, epochs: int = 1,
            lr: float = 1e-4, batch_size: int = 4, weight_decay: float = 0.0, warmup: float = 0.1, seed: int = 0,
            progress: bool = False) -> list[float]:
    """Global retraining with fixed masks: next-token cross-entropy of the whole model (the baseline the paper
    compares local reconstruction with). Embeddings, norms and ``lm_head`` train too (``peft=None``), or only
    masked LoRA adapters on the pruned linears. Returns the training loss per step.
    """
    from .masked import MaskedLoRALinear
    from .surgery import apply_masks, keep_masks, merge_lora, strip_masks

    tr = _train_opts(epochs, lr, batch_size, weight_decay, warmup, "mse", peft, seed)
    if not isinstance(calib, Calibration):
        raise TypeError(f"calib must be a fastnips.prune.Calibration, got {type(calib).__name__}")
    calib.check_model(model)
    apply_masks(model, masks)  # zeroes the pruned entries
    flags = {id(p): p.requires_grad for p in model.parameters()}
    was = model.training
    losses = []
    try:
        if peft is not None:
            for p in model.parameters():
                p.requires_grad_(False)
            mods = dict(model.named_modules())
            gen = torch.Generator().manual_seed(tr.seed)
            lora = {n: MaskedLoRALinear(mods[n], peft, generator=gen) for n in masks}
            _set_modules(model, lora)
            params = [p for m in lora.values() for p in (m.lora_A, m.lora_B)]
            for p in params:
                p.requires_grad_(True)
        else:
            params = [p for p in model.parameters()]
            for p in params:
                p.requires_grad_(True)
        model.train()
        dev = next(model.parameters()).device
        batches = calib.batches(batch_size)
        total = tr.epochs * len(batches)
        opt = torch.optim.AdamW(params, lr=tr.lr, weight_decay=tr.weight_decay)
        handle = keep_masks(opt, model)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, _lr_lambda(max(total, 1), tr.warmup))
        gen = torch.Generator().manual_seed(tr.seed + 1)
        bar = _progress(total, progress)
        for _ in range(tr.epochs):
            for j in torch.randperm(len(batches), generator=gen).tolist():
                ids = batches[j].to(dev)
                logits = model(input_ids=ids).logits
                lv = nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(),
                                                 ids[:, 1:].reshape(-1))
                opt.zero_grad(set_to_none=True)
                lv.backward()
                opt.step()
                sched.step()
                losses.append(float(lv.detach()))
                bar(1, f"loss {losses[-1]:.3f}")
        bar(0, None, close=True)
        handle.remove()
        if peft is not None:
            merge_lora(model)
    finally:
        strip_masks(model)
        for p in model.parameters():
            p.requires_grad_(flags.get(id(p), True))
        model.train(was)
    return losses

