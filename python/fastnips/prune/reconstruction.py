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
from dataclasses import dataclass, field

import torch
from torch import nn

from .arch import Window, attn_forward, call_block, capture_block_inputs, decoder_blocks, mlp_forward, windows
from .calib import Calibration
from .criteria import Criterion, StatsCollector

__all__ = ["Report", "WindowReport", "prune_and_reconstruct", "reconstruct", "retrain"]

INPUTS = ("dense", "sparse")
LOSSES = ("mse", "mse_normalized")


@dataclass
class WindowReport:
    """One window: loss before/after on the calibration (and validation) inputs, training steps, seconds, and
    ``peak_bytes``, the memory the window's reconstruction added at its peak (see ``_Peak``)."""

    name: str
    loss_before: float = float("nan")
    loss_after: float = float("nan")
    val_before: float = float("nan")
    val_after: float = float("nan")
    steps: int = 0
    seconds: float = 0.0
    peak_bytes: int | None = None


@dataclass
class Report:
    """What a pruning / reconstruction run did: masks, one :class:`WindowReport` per window, total time."""

    masks: dict = field(default_factory=dict)
    windows: list = field(default_factory=list)
    seconds: float = 0.0

    def table(self) -> str:
        """A plain-text table, one row per window."""
        head = f"{'window':<24} {'loss before':>12} {'loss after':>12} {'val before':>11} {'val after':>11} " \
               f"{'steps':>6} {'s':>7} {'+peak MiB':>9}"
        rows = [head, "-" * len(head)]
        for w in self.windows:
            peak = "" if w.peak_bytes is None else f"{w.peak_bytes / 2**20:.1f}"
            rows.append(f"{w.name:<24} {w.loss_before:>12.4g} {w.loss_after:>12.4g} {w.val_before:>11.4g} "
                        f"{w.val_after:>11.4g} {w.steps:>6} {w.seconds:>7.2f} {peak:>9}")
        return "\n".join(rows)


# ----------------------------------------------------------------------------------------------------------
# peak memory of a window


class _Peak:
    """Peak memory a window adds to what was in use when it started: the CUDA allocator's peak on a GPU, else
    the rise of the process's peak resident set (Linux; memory the allocator had cached and reuses does not
    show, so on the CPU this is a lower bound). None where neither can be read."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def __enter__(self):
        self.value = None
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            self.base = torch.cuda.memory_allocated()
        else:
            self.base = _rss_reset()
        return self

    def __exit__(self, *exc):
        if self.cuda:
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated()
        else:
            peak = _rss_peak()
        self.value = None if peak is None or self.base is None else max(0, peak - self.base)
        return False


def _rss_reset():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return _rss_peak()
    except OSError:
        return None


def _rss_peak():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


# ----------------------------------------------------------------------------------------------------------
# the training loop of one window


@dataclass(frozen=True)
class _Train:
    epochs: int
    lr: float
    batch_size: int
    weight_decay: float
    warmup: float
    loss: str
    peft: object
    seed: int


def _lr_lambda(total: int, warmup: float):
    w = max(1, round(warmup * total)) if warmup > 0 else 0

    def f(step):
        if step < w:
            return (step + 1) / w
        return max(0.0, (total - step) / max(1, total - w))

    return f


def _loss_fn(kind: str):
    if kind == "mse":
        return lambda y, t: torch.mean((y - t) ** 2)
    return lambda y, t: torch.mean((y - t) ** 2) / torch.mean(t**2).clamp_min(1e-12)


def _to(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, tuple):
        return tuple(_to(o, device) for o in obj)
    if isinstance(obj, list):
        return [_to(o, device) for o in obj]
    if isinstance(obj, dict):
        return {k: _to(v, device) for k, v in obj.items()}
    return obj


def _mean_loss(fwd, xs, kws, ys, loss, device) -> float:
    with torch.no_grad():
        tot = n = 0
        for x, kw, y in zip(xs, kws, ys):
            tot += float(loss(fwd(x.to(device), _to(kw, device)), y.to(device))) * x.shape[0]
            n += x.shape[0]
    return tot / max(n, 1)


# ----------------------------------------------------------------------------------------------------------
# the engine shared by the criteria, reconstruct and prune_and_reconstruct


class _Chains:
    """Hidden states at the current window boundary: dense chain, sparse chain, keyword args per batch."""

    def __init__(self, caps, need_sparse: bool):
        self.kw = [kw for _, kw in caps]
        self.dense = [h for h, _ in caps]
        self.sparse = [h.clone() for h in self.dense] if need_sparse else None


class _Live:
    """Modules by qualified name, looked up when asked: windows swap linears for masked ones and back."""

    def __init__(self, model: nn.Module):
        self.model = model

    def __getitem__(self, name: str) -> nn.Module:
        return self.model.get_submodule(name)


def _check_choice(name, value, allowed):
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")


def _run(model: nn.Module, calib: Calibration, *, window="block", criterion: Criterion | None = None,
         masks: dict | None = None, train: _Train | None = None, inputs: str = "dense", propagate: str = "sparse",
         dense: nn.Module | None = None, batch_size: int = 8, validation: Calibration | None = None,
         device=None, store="cpu", restore: bool = False, progress: bool = False) -> Report:
    """Process the decoder window by window; see the module docstring. Returns a :class:`Report`."""
    if not isinstance(calib, Calibration):
        raise TypeError(f"calib must be a fastnips.prune.Calibration, got {type(calib).__name__}")
    _check_choice("inputs", inputs, INPUTS)
    _check_choice("propagate", propagate, INPUTS)
    calib.check_model(model)
    if validation is not None:
        if not isinstance(validation, Calibration):
            raise TypeError(f"validation must be a Calibration, got {type(validation).__name__}")
        validation.check_model(model)
    wins = windows(model, window)
    prefix, blocks = decoder_blocks(model)
    dense_blocks = None
    if dense is not None:
        _, dense_blocks = decoder_blocks(dense)
        if len(dense_blocks) != len(blocks):
            raise ValueError(f"dense has {len(dense_blocks)} blocks, model has {len(blocks)}")
    home = next(model.parameters()).device
    device = home if device is None else torch.device(device)
    mods = _Live(model)
    if masks is not None:
        from .criteria import block_linears

        lin = block_linears(model)
        unknown = sorted(set(masks) - set(lin))
        if unknown:
            raise ValueError(f"masks name layers that are not linears of the decoder blocks: {unknown[:5]}")
        for n, m in masks.items():
            if not isinstance(m, torch.Tensor) or m.dtype != torch.bool or m.shape != lin[n].weight.shape:
                raise ValueError(f"masks[{n!r}] must be a bool tensor of shape {tuple(lin[n].weight.shape)}")

    was_training = model.training
    flags = {id(p): p.requires_grad for p in model.parameters()}
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    t_start = time.perf_counter()
    need_sparse = inputs == "sparse" or (criterion is not None and propagate == "sparse") or train is None
    report = Report()
    src = dense if dense is not None else model
    chains = _Chains(capture_block_inputs(src, calib.batches(batch_size), device=home, store=store), need_sparse)
    vchains = None
    if validation is not None:
        vchains = _Chains(capture_block_inputs(src, validation.batches(batch_size), device=home, store=store),
                          inputs == "sparse")
    bar = _progress(len(wins), progress)
    try:
        gen = torch.Generator().manual_seed(train.seed if train is not None else 0)
        i = 0
        while i < len(wins):
            w = wins[i]
            group = [w]
            if w.kind in ("attn", "mlp", "matrix"):  # all windows of this block go together
                while i + len(group) < len(wins) and wins[i + len(group)].first == w.first:
                    group.append(wins[i + len(group)])
            _process(model, prefix, blocks, dense_blocks, group, chains, vchains, criterion, masks, train, inputs,
                     propagate, device, home, mods, report, gen, restore)
            i += len(group)
            bar(len(group), group[-1].name)
    finally:
        bar(0, None, close=True)
        for p in model.parameters():
            p.requires_grad_(flags.get(id(p), True))
        model.train(was_training)
    report.seconds = time.perf_counter() - t_start
    return report


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


def _linears_of(group: list[Window], mods) -> dict[str, nn.Linear]:
    return {n: mods[n] for w in group for n in w.linears}


def _blocks_range(group):
    return range(group[0].first, group[-1].last)


def _prune_blocks(blocks, rng, chain, kws, criterion, masks, mods, prefix_of, device, result_masks):
    """Prune blocks ``rng`` in order; statistics from ``chain``, advanced through each pruned block."""
    from .arch import linear_names

    h = chain
    for b in rng:
        blk = blocks[b]
        names = linear_names(blk, prefix_of(b))
        lin = {n: mods[n] for n in names}
        if criterion is not None:
            stats = None
            if criterion.needs_stats:
                col = StatsCollector(lin, hessian=criterion.needs_hessian)
                try:
                    with torch.no_grad():
                        for x, kw in zip(h, kws):
                            col.next_batch()
                            call_block(blk, x.to(device), _to(kw, device))
                finally:
                    col.remove()
                stats = col.by_name
            factors: dict = {}  # one Hessian factorisation per distinct input (SparseGPT)
            for n, m in lin.items():
                result_masks[n] = criterion.prune_(m, None if stats is None else stats[n], factors).to("cpu")
        else:
            with torch.no_grad():
                for n, m in lin.items():
                    if n in masks:
                        m.weight.mul_(masks[n].to(m.weight.device))
                        result_masks[n] = masks[n]
        if b != rng[-1]:  # statistics of the next block of a multi-block window see this block pruned
            with torch.no_grad():
                h = [call_block(blk, x.to(device), _to(kw, device)).to(x.device) for x, kw in zip(h, kws)]


def _process(model, prefix, blocks, dense_blocks, group, chains, vchains, criterion, masks, train, inputs, propagate,
             device, home, mods, report, gen, restore):
    def prefix_of(b):
        return f"{prefix}.{b}"

    rng = _blocks_range(group)
    kind = group[0].kind
    dblocks = dense_blocks if dense_blocks is not None else blocks
    for b in rng:  # offload: the window's blocks to the compute device
        blocks[b].to(device)
        if dense_blocks is not None:
            dense_blocks[b].to(device)
    saved = {n: m.weight.detach().clone() for n, m in _linears_of(group, mods).items()} if restore else None

    # 1. dense targets at every window boundary of the group (before anything in it is pruned)
    def dense_outputs(ch):
        if ch is None:
            return None
        outs = []  # per window: list over batches
        lin_io = {}
        with torch.no_grad():
            if kind == "blocks":
                ys = []
                for x, kw in zip(ch.dense, ch.kw):
                    y = x.to(device)
                    for b in rng:
                        y = call_block(dblocks[b], y, _to(kw, device))
                    ys.append(y.to(x.device))
                outs.append(ys)
            elif kind in ("attn", "mlp"):
                blk = dblocks[group[0].first]
                ya, ym = [], []
                for x, kw in zip(ch.dense, ch.kw):
                    a = attn_forward(blk, x.to(device), _to(kw, device))
                    ya.append(a.to(x.device))
                    ym.append(mlp_forward(blk, a).to(x.device))
                outs = [ya, ym]
            else:  # matrix: capture every linear's input and output in the dense block
                blk = dblocks[group[0].first]
                order, ys = [], []
                hooks = []
                dmods = dict(blk.named_modules())
                for n, m in dmods.items():
                    if isinstance(m, nn.Linear):
                        def hook(_m, inp, out, n=n):
                            if n not in lin_io:
                                order.append(n)
                                lin_io[n] = ([], [])
                            lin_io[n][0].append(inp[0].detach().to("cpu"))
                            lin_io[n][1].append(out.detach().to("cpu"))
                        hooks.append(m.register_forward_hook(hook))
                try:
                    for x, kw in zip(ch.dense, ch.kw):
                        ys.append(call_block(blk, x.to(device), _to(kw, device)).to(x.device))
                finally:
                    for hk in hooks:
                        hk.remove()
                outs = [ys]
                lin_io["__order__"] = order
        return outs, lin_io

    need_targets = train is not None or propagate == "dense"
    targets, lin_io = dense_outputs(chains) if need_targets else (None, None)
    vtargets, vlin_io = dense_outputs(vchains) if vchains is not None else (None, None)

    # 2. prune (or apply the given masks) block by block, statistics from the chosen chain
    stat_chain = chains.sparse if propagate == "sparse" and chains.sparse is not None else chains.dense
    _prune_blocks(blocks, rng, stat_chain, chains.kw, criterion, masks, mods, prefix_of, device, report.masks)

    # 3. reconstruct, window by window, and 4. advance the chains
    def sparse_forward(w, ch_list, kws, lin_name=None):
        """The current model's window on ``ch_list`` (no grad)."""
        with torch.no_grad():
            return [_window_fn(model, blocks, w)(x.to(device), _to(kw, device)).to(x.device)
                    for x, kw in zip(ch_list, kws)]

    if kind in ("blocks", "attn", "mlp"):
        for wi, w in enumerate(group):
            rep = WindowReport(w.name)
            t0 = time.perf_counter()
            xs = (chains.dense if inputs == "dense" else chains.sparse) if train is not None else None
            if train is not None:
                vx = None
                if vchains is not None:
                    vx = vchains.dense if inputs == "dense" else vchains.sparse
                with _Peak(device) as pk:
                    _train_window(model, w, _window_fn(model, blocks, w), xs, chains.kw, targets[wi], train,
                                  device, mods, rep, gen, vx, None if vchains is None else vchains.kw,
                                  None if vtargets is None else vtargets[wi])
                rep.peak_bytes = pk.value
            # advance
            new_sparse = None
            if chains.sparse is not None:
                new_sparse = sparse_forward(w, chains.sparse, chains.kw)
            if vchains is not None and vchains.sparse is not None:
                vchains.sparse = sparse_forward(w, vchains.sparse, vchains.kw)
            if targets is not None:
                chains.dense = targets[wi]
            if vchains is not None:
                vchains.dense = vtargets[wi]
            if new_sparse is not None:
                chains.sparse = new_sparse
            rep.seconds = time.perf_counter() - t0
            if train is not None:
                report.windows.append(rep)
    else:  # matrix windows of one block
        b = group[0].first
        blk = blocks[b]
        order = lin_io["__order__"]
        by_name = {w.linears[0]: w for w in group}
        short = {f"{prefix_of(b)}.{n}": n for n in order}
        for full, n in short.items():
            w = by_name[full]
            rep = WindowReport(w.name)
            t0 = time.perf_counter()
            if train is not None:
                lin = mods[full]
                if inputs == "dense":
                    xs = lin_io[n][0]
                    vx = None if vlin_io is None else vlin_io[n][0]
                else:
                    xs = _capture_input(blk, lin, chains.sparse, chains.kw, device)
                    vx = None if vchains is None else _capture_input(blk, lin, vchains.sparse, vchains.kw, device)
                with _Peak(device) as pk:
                    _train_window(model, w, lambda x, kw, full=full: model.get_submodule(full)(x), xs,
                                  [{}] * len(xs), lin_io[n][1], train, device, mods, rep, gen, vx,
                                  None if vx is None else [{}] * len(vx), None if vlin_io is None else vlin_io[n][1])
                rep.peak_bytes = pk.value
            rep.seconds = time.perf_counter() - t0
            if train is not None:
                report.windows.append(rep)
        if chains.sparse is not None:
            with torch.no_grad():
                chains.sparse = [call_block(blk, x.to(device), _to(kw, device)).to(x.device)
                                 for x, kw in zip(chains.sparse, chains.kw)]
            if vchains is not None and vchains.sparse is not None:
                vchains.sparse = [call_block(blk, x.to(device), _to(kw, device)).to(x.device)
                                  for x, kw in zip(vchains.sparse, vchains.kw)]
        chains.dense = targets[0]
        if vchains is not None:
            vchains.dense = vtargets[0]
    if saved is not None:
        with torch.no_grad():
            for n, wt in saved.items():
                mods[n].weight.copy_(wt)
    for b in rng:
        blocks[b].to(home)
        if dense_blocks is not None:
            dense_blocks[b].to(home)


def _window_fn(model, blocks, w: Window):
    if w.kind == "blocks":
        def fn(x, kw):
            for b in range(w.first, w.last):
                x = call_block(blocks[b], x, kw)
            return x
        return fn
    blk = blocks[w.first]
    if w.kind == "attn":
        return lambda x, kw: attn_forward(blk, x, kw)
    if w.kind == "mlp":
        return lambda x, kw: mlp_forward(blk, x)
    raise AssertionError(w.kind)


def _capture_input(blk, lin, xs, kws, device):
    """The input of ``lin`` when the block (current weights) runs on ``xs``, per batch."""
    from .arch import _Stop

    got = []

    def hook(_m, inp):
        got.append(inp[0].detach().to("cpu"))
        raise _Stop

    h = lin.register_forward_pre_hook(hook)
    try:
        with torch.no_grad():
            for x, kw in zip(xs, kws):
                try:
                    call_block(blk, x.to(device), _to(kw, device))
                except _Stop:
                    pass
    finally:
        h.remove()
    return got


def _train_window(model, w: Window, fwd, xs, kws, ys, train: _Train, device, mods, rep: WindowReport, gen,
                  vx=None, vkws=None, vys=None):
    """Train the window's parameters (or its LoRA adapters) on MSE(fwd(x), y); the masks stay fixed."""
    from .masked import MaskedLinear, MaskedLoRALinear, keep_masks

    loss = _loss_fn(train.loss)
    lora = None
    # masked layers for the window's linears (the mask is the current zero pattern)
    swapped = {}
    for n in w.linears:
        lin = mods[n]
        mask = lin.weight.detach() != 0
        swapped[n] = MaskedLinear.from_linear(lin, mask)
    _set_modules(model, swapped)
    try:
        if train.peft is not None:
            lora = {n: MaskedLoRALinear(m, train.peft, generator=gen) for n, m in swapped.items()}
            _set_modules(model, lora)
            params = [p for m in lora.values() for p in (m.lora_A, m.lora_B)]
        else:
            params = list(w.parameters())  # the masked layers took over these same Parameters
        for p in params:
            p.requires_grad_(True)
        rep.loss_before = _mean_loss(fwd, xs, kws, ys, loss, device)
        if vx is not None:
            rep.val_before = _mean_loss(fwd, vx, vkws, vys, loss, device)
        n_batches = len(xs)
        total = train.epochs * n_batches
        if total > 0 and params:
            opt = torch.optim.AdamW(params, lr=train.lr, weight_decay=train.weight_decay)
            handle = keep_masks(opt, list(swapped.values()) if lora is None else [])
            sched = torch.optim.lr_scheduler.LambdaLR(opt, _lr_lambda(total, train.warmup))
            for _ in range(train.epochs):
                for j in torch.randperm(n_batches, generator=gen).tolist():
                    opt.zero_grad(set_to_none=True)
                    out = fwd(xs[j].to(device), _to(kws[j], device))
                    lv = loss(out, ys[j].to(device))
                    if not torch.isfinite(lv):
                        raise FloatingPointError(f"window {w.name}: loss became {float(lv)} (lower lr?)")
                    lv.backward()
                    opt.step()
                    sched.step()
                    rep.steps += 1
            handle.remove()
        for p in params:
            p.requires_grad_(False)
        rep.loss_after = _mean_loss(fwd, xs, kws, ys, loss, device)
        if vx is not None:
            rep.val_after = _mean_loss(fwd, vx, vkws, vys, loss, device)
    finally:
        if lora is not None:
            merged = {n: m.merge() for n, m in lora.items()}
            _set_modules(model, merged)
            swapped = merged
        _set_modules(model, {n: m.to_linear() for n, m in swapped.items()})


def _set_modules(model, new: dict):
    for name, mod in new.items():
        parent, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent) if parent else model, child, mod)


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


def reconstruct(model: nn.Module, calib: Calibration, masks: dict, *, window="block", inputs: str = "dense",
                dense: nn.Module | None = None, peft=None, epochs: int = 2, lr: float = 1e-4, batch_size: int = 4,
                weight_decay: float = 0.0, warmup: float = 0.1, loss: str = "mse",
                validation: Calibration | None = None, device=None, store="cpu", seed: int = 0,
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
                          sparsity: float | None = None, pattern=None, scope: str = "row", window="block",
                          inputs: str = "dense", propagate: str = "sparse", peft=None, epochs: int = 2,
                          lr: float = 1e-4, batch_size: int = 4, weight_decay: float = 0.0, warmup: float = 0.1,
                          loss: str = "mse", blocksize: int = 128, percdamp: float = 0.01,
                          validation: Calibration | None = None, device=None, store="cpu", seed: int = 0,
                          backend: str = "auto", progress: bool = False) -> Report:
    """Prune and reconstruct interleaved, window by window (the paper's pipeline), in place.

    For each window: dense targets first, then the criterion prunes the window's blocks with statistics
    from the sparse chain (``propagate``), then the window is reconstructed. Parameters as in
    :func:`reconstruct` and :func:`fastnips.prune.wanda` / :func:`fastnips.prune.sparsegpt`.
    ``epochs=0`` prunes only (the masks then equal the criterion's own).
    """
    tr = _train_opts(epochs, lr, batch_size, weight_decay, warmup, loss, peft, seed)
    crit = Criterion(criterion, sparsity, pattern, scope, blocksize=blocksize, percdamp=percdamp, backend=backend)
    return _run(model, calib, window=window, criterion=crit, train=tr, inputs=inputs, propagate=propagate,
                batch_size=batch_size, validation=validation, device=device, store=store, progress=progress)


def retrain(model: nn.Module, calib: Calibration, masks: dict, *, peft=None, epochs: int = 1, lr: float = 1e-4,
            batch_size: int = 4, weight_decay: float = 0.0, warmup: float = 0.1, seed: int = 0,
            progress: bool = False) -> list[float]:
    """Global retraining with fixed masks: next-token cross-entropy of the whole model (the baseline the paper
    compares local reconstruction with). Embeddings, norms and ``lm_head`` train too (``peft=None``), or only
    masked LoRA adapters on the pruned linears. Returns the training loss per step.
    """
    from .masked import MaskedLoRALinear, apply_masks, keep_masks, merge_lora, strip_masks

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

