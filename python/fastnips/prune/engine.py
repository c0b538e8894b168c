r"""The window-by-window engine shared by the criteria, :func:`~fastnips.prune.reconstruct` and
:func:`~fastnips.prune.prune_and_reconstruct` (the steps: :mod:`fastnips.prune.reconstruction`).

:class:`_Reconstructor` holds the settings of one run and handles one *group* of windows at a time (one
block, or the attention/MLP halves or the single matrices of one block, or one multi-block window), in the
way SparseGPT keeps one state object per layer instead of a many-argument function:

1. :meth:`~_Reconstructor.targets` -- the dense window outputs :math:`Y` on the dense chain (per window and
   batch; for matrix windows every linear's input and output in the dense block);
2. :meth:`~_Reconstructor.prune` -- the criterion (or the given masks) block by block;
3. :meth:`~_Reconstructor.fit_windows` / :meth:`~_Reconstructor.fit_matrices` -- AdamW on
   :math:`\mathrm{MSE}(f_\theta(X), Y)` per window (:func:`_train_window`), then advance both chains.

While a window trains, its pruned linears are :class:`~fastnips.prune.MaskedLinear` layers (or carry masked
LoRA adapters); afterwards they are plain ``nn.Linear`` layers with exact zeros.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import NamedTuple

import torch
from torch import nn

from .arch import Window, _Stop, attn_forward, call_block, linear_names, mlp_forward
from .criteria import Criterion, StatsCollector
from .masked import MaskedLinear, MaskedLoRALinear
from .surgery import keep_masks

__all__ = ["Report", "WindowReport"]


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
    """Reset the process's peak resident set (Linux) and return it, or None."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None
    return _rss_peak()


def _rss_peak():
    """The process's peak resident set in bytes (Linux), or None."""
    try:
        with open("/proc/self/status") as f:
            return next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:")), None)
    except OSError:
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


class _Data(NamedTuple):
    """A window's training data, per batch: inputs, keyword arguments of the window's forward, targets."""

    xs: list
    kws: list
    ys: list


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


def _mean_loss(fwd, data: _Data, loss, device) -> float:
    with torch.no_grad():
        tot = n = 0
        for x, kw, y in zip(*data):
            tot += float(loss(fwd(x.to(device), _to(kw, device)), y.to(device))) * x.shape[0]
            n += x.shape[0]
    return tot / max(n, 1)


def _set_modules(model, new: dict):
    for name, mod in new.items():
        parent, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent) if parent else model, child, mod)


@contextlib.contextmanager
def _masked_window(model: nn.Module, w: Window, peft, gen):
    """Swap the window's linears for masked layers (mask: the current zero pattern), with masked LoRA adapters
    when ``peft`` is a LoRA; yield (trainable parameters, layers whose masks an optimiser step must keep).
    Afterwards the adapters are merged and plain ``nn.Linear`` layers put back."""
    swapped = {}
    for n in w.linears:
        lin = model.get_submodule(n)
        swapped[n] = MaskedLinear.from_linear(lin, lin.weight.detach() != 0)
    _set_modules(model, swapped)
    lora = None
    try:
        if peft is not None:
            lora = {n: MaskedLoRALinear(m, peft, generator=gen) for n, m in swapped.items()}
            _set_modules(model, lora)
            yield [p for m in lora.values() for p in (m.lora_A, m.lora_B)], []
        else:
            yield list(w.parameters()), list(swapped.values())  # the masked layers took over these Parameters
    finally:
        if lora is not None:
            swapped = {n: m.merge() for n, m in lora.items()}
            _set_modules(model, swapped)
        _set_modules(model, {n: m.to_linear() for n, m in swapped.items()})


def _adamw(fwd, data: _Data, params, kept, train: _Train, device, gen, loss, name: str) -> int:
    """``train.epochs`` epochs of AdamW with linear warm-up and decay; returns the number of steps."""
    n_batches = len(data.xs)
    total = train.epochs * n_batches
    if total == 0 or not params:
        return 0
    opt = torch.optim.AdamW(params, lr=train.lr, weight_decay=train.weight_decay)
    handle = keep_masks(opt, kept)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, _lr_lambda(total, train.warmup))
    steps = 0
    for _ in range(train.epochs):
        for j in torch.randperm(n_batches, generator=gen).tolist():
            opt.zero_grad(set_to_none=True)
            lv = loss(fwd(data.xs[j].to(device), _to(data.kws[j], device)), data.ys[j].to(device))
            if not torch.isfinite(lv):
                raise FloatingPointError(f"window {name}: loss became {float(lv)} (lower lr?)")
            lv.backward()
            opt.step()
            sched.step()
            steps += 1
    handle.remove()
    return steps


def _train_window(model, w: Window, fwd, data: _Data, val: _Data | None, train: _Train, device,
                  rep: WindowReport, gen) -> None:
    """Train the window's parameters (or its LoRA adapters) on MSE(fwd(x), y); the masks stay fixed. Fills
    ``rep``'s losses and steps."""
    loss = _loss_fn(train.loss)
    with _masked_window(model, w, train.peft, gen) as (params, kept):
        for p in params:
            p.requires_grad_(True)
        rep.loss_before = _mean_loss(fwd, data, loss, device)
        if val is not None:
            rep.val_before = _mean_loss(fwd, val, loss, device)
        rep.steps += _adamw(fwd, data, params, kept, train, device, gen, loss, w.name)
        for p in params:
            p.requires_grad_(False)
        rep.loss_after = _mean_loss(fwd, data, loss, device)
        if val is not None:
            rep.val_after = _mean_loss(fwd, val, loss, device)


# ----------------------------------------------------------------------------------------------------------
# chains, forwards and captures


class _Chains:
    """Hidden states at the current window boundary: dense chain, sparse chain, keyword args per batch."""

    def __init__(self, caps, need_sparse: bool):
        self.kw = [kw for _, kw in caps]
        self.dense = [h for h, _ in caps]
        self.sparse = [h.clone() for h in self.dense] if need_sparse else None


def _window_fn(blocks, w: Window):
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


def _run_on(fn, xs, kws, device) -> list:
    """``fn`` on every batch (no grad), each result back where its input was."""
    with torch.no_grad():
        return [fn(x.to(device), _to(kw, device)).to(x.device) for x, kw in zip(xs, kws)]


def _capture_input(blk, lin, xs, kws, device):
    """The input of ``lin`` when the block (current weights) runs on ``xs``, per batch."""
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


def _linear_io(blk, xs, kws, device):
    """Run the dense block on every batch, capturing each linear's (inputs, outputs) per batch (on the CPU),
    keyed by its name in the block in call order; returns (block outputs, that dict)."""
    io: dict = {}
    hooks = []
    for n, m in blk.named_modules():
        if isinstance(m, nn.Linear):
            def hook(_m, inp, out, n=n):
                ins, outs = io.setdefault(n, ([], []))
                ins.append(inp[0].detach().to("cpu"))
                outs.append(out.detach().to("cpu"))
            hooks.append(m.register_forward_hook(hook))
    try:
        ys = _run_on(lambda x, kw: call_block(blk, x, kw), xs, kws, device)
    finally:
        for hk in hooks:
            hk.remove()
    return ys, io


class _Targets(NamedTuple):
    """Dense outputs of a group: per window a list over batches; for matrix windows also each linear's
    (inputs, outputs) in the dense block."""

    outs: list
    linears: dict | None = None


# ----------------------------------------------------------------------------------------------------------
# one group of windows


@dataclass
class _Reconstructor:
    """The settings of one run; :meth:`process` handles one group of windows (module docstring)."""

    model: nn.Module
    prefix: str
    blocks: nn.ModuleList
    dense_blocks: nn.ModuleList | None
    criterion: Criterion | None
    masks: dict | None
    train: _Train | None
    inputs: str
    propagate: str
    device: torch.device
    home: torch.device
    report: Report
    gen: torch.Generator
    restore: bool = False

    @property
    def dblocks(self) -> nn.ModuleList:
        """The blocks that give the dense targets."""
        return self.dense_blocks if self.dense_blocks is not None else self.blocks

    def process(self, group: list[Window], chains: _Chains, vchains: _Chains | None) -> None:
        """Targets, pruning, reconstruction and the advance of the chains for one group of windows."""
        rng = range(group[0].first, group[-1].last)
        self._move(rng, self.device)  # offload: the group's blocks to the compute device
        lin = [n for w in group for n in w.linears]
        saved = {n: self.model.get_submodule(n).weight.detach().clone() for n in lin} if self.restore else None
        need_targets = self.train is not None or self.propagate == "dense"
        targets = self.targets(group, chains) if need_targets else None
        vtargets = self.targets(group, vchains) if vchains is not None else None
        use_sparse = self.propagate == "sparse" and chains.sparse is not None
        self.prune(rng, chains.sparse if use_sparse else chains.dense, chains.kw)
        if group[0].kind == "matrix":
            self.fit_matrices(group, chains, vchains, targets, vtargets)
        else:
            self.fit_windows(group, chains, vchains, targets, vtargets)
        if saved is not None:
            with torch.no_grad():
                for n, wt in saved.items():
                    self.model.get_submodule(n).weight.copy_(wt)
        self._move(rng, self.home)

    def _move(self, rng, device) -> None:
        for b in rng:
            self.blocks[b].to(device)
            if self.dense_blocks is not None:
                self.dense_blocks[b].to(device)

    def targets(self, group: list[Window], ch: _Chains) -> _Targets:
        """The dense outputs at every window boundary of the group, before anything in it is pruned."""
        kind, blk, dev = group[0].kind, self.dblocks[group[0].first], self.device
        if kind == "blocks":
            return _Targets([_run_on(_window_fn(self.dblocks, group[0]), ch.dense, ch.kw, dev)])
        if kind in ("attn", "mlp"):
            ya = _run_on(lambda x, kw: attn_forward(blk, x, kw), ch.dense, ch.kw, dev)
            return _Targets([ya, _run_on(lambda a, kw: mlp_forward(blk, a), ya, ch.kw, dev)])
        ys, io = _linear_io(blk, ch.dense, ch.kw, dev)
        return _Targets([ys], io)

    def prune(self, rng, chain, kws) -> None:
        """Prune blocks ``rng`` in order (or apply the given masks); statistics from ``chain``, advanced
        through each pruned block."""
        h = chain
        for b in rng:
            blk = self.blocks[b]
            lin = {n: self.model.get_submodule(n) for n in linear_names(blk, f"{self.prefix}.{b}")}
            if self.criterion is not None:
                self._prune_block(blk, lin, h, kws)
            else:
                with torch.no_grad():
                    for n, m in lin.items():
                        if n in self.masks:
                            m.weight.mul_(self.masks[n].to(m.weight.device))
                            self.report.masks[n] = self.masks[n]
            if b != rng[-1]:  # statistics of the next block of a multi-block window see this block pruned
                h = _run_on(lambda x, kw, blk=blk: call_block(blk, x, kw), h, kws, self.device)

    def _prune_block(self, blk, lin: dict, h, kws) -> None:
        crit, stats = self.criterion, None
        if crit.needs_stats:
            col = StatsCollector(lin, hessian=crit.needs_hessian)
            try:
                with torch.no_grad():
                    for x, kw in zip(h, kws):
                        col.next_batch()
                        call_block(blk, x.to(self.device), _to(kw, self.device))
            finally:
                col.remove()
            stats = col.by_name
        factors: dict = {}  # one Hessian factorisation per distinct input (SparseGPT)
        for n, m in lin.items():
            self.report.masks[n] = crit.prune_(m, None if stats is None else stats[n], factors, name=n).to("cpu")

    def _fit(self, w: Window, fwd, data: _Data, val: _Data | None, rep: WindowReport) -> None:
        with _Peak(self.device) as pk:
            _train_window(self.model, w, fwd, data, val, self.train, self.device, rep, self.gen)
        rep.peak_bytes = pk.value

    def fit_windows(self, group, chains: _Chains, vchains, targets: _Targets | None, vtargets) -> None:
        """Reconstruct block / attention / MLP windows one after the other, advancing the chains after each."""
        for wi, w in enumerate(group):
            rep = WindowReport(w.name)
            t0 = time.perf_counter()
            fwd = _window_fn(self.blocks, w)
            if self.train is not None:
                pick = (lambda ch: ch.dense) if self.inputs == "dense" else (lambda ch: ch.sparse)
                val = None if vchains is None else _Data(pick(vchains), vchains.kw, vtargets.outs[wi])
                self._fit(w, fwd, _Data(pick(chains), chains.kw, targets.outs[wi]), val, rep)
            new_sparse = None if chains.sparse is None else _run_on(fwd, chains.sparse, chains.kw, self.device)
            if vchains is not None and vchains.sparse is not None:
                vchains.sparse = _run_on(fwd, vchains.sparse, vchains.kw, self.device)
            if targets is not None:
                chains.dense = targets.outs[wi]
            if vchains is not None:
                vchains.dense = vtargets.outs[wi]
            if new_sparse is not None:
                chains.sparse = new_sparse
            rep.seconds = time.perf_counter() - t0
            if self.train is not None:
                self.report.windows.append(rep)

    def _matrix_data(self, blk, lin, n: str, ch: _Chains | None, t: _Targets | None) -> _Data | None:
        """Inputs and targets of the linear ``n`` of a block: inputs from the dense block's capture or from
        the block (current weights) on the sparse chain; targets the dense linear's outputs."""
        if ch is None:
            return None
        xs = t.linears[n][0] if self.inputs == "dense" else _capture_input(blk, lin, ch.sparse, ch.kw, self.device)
        return _Data(xs, [{}] * len(xs), t.linears[n][1])

    def fit_matrices(self, group, chains: _Chains, vchains, targets: _Targets, vtargets) -> None:
        """Reconstruct the single-matrix windows of one block in call order, then advance the chains."""
        b = group[0].first
        blk = self.blocks[b]
        by_name = {w.linears[0]: w for w in group}
        for n in targets.linears:
            full = f"{self.prefix}.{b}.{n}"
            w = by_name[full]
            rep = WindowReport(w.name)
            t0 = time.perf_counter()
            if self.train is not None:
                lin = self.model.get_submodule(full)
                data = self._matrix_data(blk, lin, n, chains, targets)
                val = self._matrix_data(blk, lin, n, vchains, vtargets)
                self._fit(w, lambda x, kw, full=full: self.model.get_submodule(full)(x), data, val, rep)
            rep.seconds = time.perf_counter() - t0
            if self.train is not None:
                self.report.windows.append(rep)
        run = lambda x, kw: call_block(blk, x, kw)
        if chains.sparse is not None:
            chains.sparse = _run_on(run, chains.sparse, chains.kw, self.device)
            if vchains is not None and vchains.sparse is not None:
                vchains.sparse = _run_on(run, vchains.sparse, vchains.kw, self.device)
        chains.dense = targets.outs[0]
        if vchains is not None:
            vchains.dense = vtargets.outs[0]
