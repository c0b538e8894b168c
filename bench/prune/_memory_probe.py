"""One memory measurement of one reconstruction step, in a fresh process (run by bench_memory.py).

    python bench/prune/_memory_probe.py METHOD [--d-model 576] [--d-ff 1536] [--layers 4] [--tokens 256]

prints one JSON line. METHOD is one of

* ``dense``        nn.Linear layers, all weights trained (no mask: the yardstick),
* ``masked``       fastnips MaskedLinear (bit-packed mask, masked dW),
* ``torch-prune``  torch.nn.utils.prune.custom_from_mask (weight_orig + float weight_mask + weight),
  the reference implementation's choice,
* ``lora-masked``  fastnips MaskedLoRALinear, r=16 (frozen masked base; (BA) ⊙ M never formed),
* ``lora-materialised``  the reference code's masked LoRA: ``W + s * (B @ A).masked_fill(W == 0, 0)`` formed
  in every forward (``customLayers.py::MaskedLoraLayerEfficient``), r=16.

What is measured (resident set size, so the glibc allocator is made to hand large blocks straight back to
the kernel: ``MALLOC_MMAP_THRESHOLD_=65536``, which also switches off its dynamic threshold;
``MALLOC_ARENA_MAX=1``; one thread):

1. the same method is built and trained for two steps at full size and thrown away first, so the
   libraries' one-time buffers and the code pages it touches (file-backed pages count in RSS) are
   resident before the baseline; ``baseline`` = VmRSS after it (inputs and targets already allocated);
2. the layers are built (dense Linear, seeded) and converted by the method; the masks (50 %, by
   magnitude, per row) are dropped; ``static`` = VmRSS - baseline;
3. AdamW is created and one warm-up step allocates its state; gradients are set to None;
4. the high-water mark is reset (``/proc/self/clear_refs`` = 5) and three steady-state steps (forward,
   MSE, backward, ``optimizer.step()``, ``zero_grad(set_to_none=True)``) run, each measured;
   ``peak`` = max VmHWM - baseline: everything a step needs (weights, buffers, AdamW state, gradients,
   activations, temporaries).

Exact tensor bytes are reported next to it: ``param_bytes`` (+ buffers + tensor attributes such as
torch.prune's computed ``weight`` and the bool mask its forward pre-hook keeps: ``static_tensor_bytes``),
``grad_state_bytes`` (gradients + AdamW state of the trained parameters, which every full-training method
has in the same amount).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import sys

METHODS = ("dense", "masked", "torch-prune", "lora-masked", "lora-materialised")


def rss_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def reset_hwm() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("method", choices=METHODS)
    ap.add_argument("--d-model", type=int, default=576)
    ap.add_argument("--d-ff", type=int, default=1536)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--sparsity", type=float, default=0.5)
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)

    import torch
    import torch.nn.functional as F
    from torch import nn
    from torch.nn.utils import prune as tprune

    from fastnips.prune.masked import LoRA, MaskedLinear, MaskedLoRALinear
    from fastnips.prune.masks import magnitude_scores, select_mask

    torch.set_num_threads(1)
    dims = [a.d_model if k % 2 == 0 else a.d_ff for k in range(a.layers + 1)]
    g = torch.Generator().manual_seed(a.seed)
    x = torch.randn(a.tokens, dims[0], generator=g)
    target = torch.randn(a.tokens, dims[-1], generator=g)

    class MaterialisedLoRA(nn.Module):
        """The reference code's masked LoRA: the full (B @ A) masked by W == 0, in every forward."""

        def __init__(self, lin: nn.Linear, r: int, alpha: float):
            super().__init__()
            self.weight, self.bias = lin.weight, lin.bias
            self.weight.requires_grad_(False)
            self.bias.requires_grad_(False)
            self.lora_A = nn.Parameter(torch.empty(r, lin.in_features))
            self.lora_B = nn.Parameter(torch.zeros(lin.out_features, r))
            nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
            self.s = alpha / r

        def forward(self, x):
            delta = (self.lora_B @ self.lora_A).masked_fill_(self.weight == 0, 0)
            return F.linear(x, self.weight + self.s * delta, self.bias)

    def build(method: str) -> nn.Sequential:
        torch.manual_seed(a.seed)
        mods = []
        for k in range(a.layers):
            lin = nn.Linear(dims[k], dims[k + 1])
            if method != "dense":
                mask = select_mask(magnitude_scores(lin.weight), sparsity=a.sparsity)
                if method == "masked":
                    lin = MaskedLinear.from_linear(lin, mask)
                elif method == "torch-prune":
                    tprune.custom_from_mask(lin, "weight", mask)
                elif method == "lora-masked":
                    lin = MaskedLoRALinear(MaskedLinear.from_linear(lin, mask), LoRA(a.rank, 2 * a.rank))
                elif method == "lora-materialised":
                    with torch.no_grad():
                        lin.weight.mul_(mask)
                    lin = MaterialisedLoRA(lin, a.rank, 2 * a.rank)
                del mask
            mods.append(lin)
            if k < a.layers - 1:
                mods.append(nn.GELU())
        return nn.Sequential(*mods)

    def step(model, opt):
        loss = F.mse_loss(model(x), target)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return float(loss.detach())

    def trainable(model):
        return [p for p in model.parameters() if p.requires_grad]

    # 1. library buffers and code pages first (the same method, full size, thrown away), then the baseline
    warm = build(a.method)
    wopt = torch.optim.AdamW(trainable(warm), lr=1e-4, weight_decay=0.01)
    for _ in range(2):
        step(warm, wopt)
    del warm, wopt
    gc.collect()
    baseline = rss_kib("VmRSS")
    baseline_anon = rss_kib("RssAnon")

    # 2. the layers
    model = build(a.method)
    gc.collect()
    static = rss_kib("VmRSS") - baseline
    static_anon = rss_kib("RssAnon") - baseline_anon

    # 3. optimizer state
    opt = torch.optim.AdamW(trainable(model), lr=1e-4, weight_decay=0.01)
    losses = [step(model, opt)]
    gc.collect()
    with_state = rss_kib("VmRSS") - baseline

    # 4. steady-state steps
    peaks = []
    for _ in range(3):
        gc.collect()
        reset_hwm()
        losses.append(step(model, opt))
        peaks.append(rss_kib("VmHWM") - baseline)

    seen = set()

    def nbytes(t) -> int:
        key = t.untyped_storage().data_ptr()
        if key in seen:
            return 0
        seen.add(key)
        return t.untyped_storage().nbytes()

    param_bytes = sum(nbytes(p) for p in model.parameters())
    static_tensor_bytes = param_bytes + sum(nbytes(b) for b in model.buffers())
    for m in model.modules():  # tensor attributes (torch.prune's computed weight) and those of its hooks
        objs = [m, *m._forward_pre_hooks.values()]  # (torch.prune's hook keeps the bool mask it was given)
        for o in objs:
            for v in vars(o).values():
                if isinstance(v, torch.Tensor):
                    static_tensor_bytes += nbytes(v)
    tr = trainable(model)
    state = sum(t.untyped_storage().nbytes() for s in opt.state.values() for t in s.values()
                if isinstance(t, torch.Tensor) and t.dim() > 0)
    grads = sum(p.numel() * p.element_size() for p in tr)  # set to None now; their size when they exist
    dense_w = sum(dims[k] * dims[k + 1] * 4 for k in range(a.layers))
    out = dict(method=a.method, dims=dims, tokens=a.tokens, dense_weight_bytes=dense_w,
               baseline_kib=baseline, static_bytes=static * 1024, static_anon_bytes=static_anon * 1024,
               with_state_bytes=with_state * 1024,
               peak_bytes=max(peaks) * 1024, peaks_bytes=[p * 1024 for p in peaks], param_bytes=param_bytes,
               static_tensor_bytes=static_tensor_bytes, grad_state_bytes=grads + state,
               trainable_bytes=sum(p.numel() * p.element_size() for p in tr), losses=losses,
               loss_after=float(F.mse_loss(model(x), target).detach()),
               malloc_mmap_threshold=os.environ.get("MALLOC_MMAP_THRESHOLD_"))
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
