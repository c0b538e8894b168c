"""Builders shared by the masked-layer tests (test_masked.py, test_masked_lora.py)."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from fastnips.prune.masked import LoRA, MaskedLinear, MaskedLoRALinear


def rand_mask(rows, cols, p=0.5, seed=0):
    return torch.rand(rows, cols, generator=torch.Generator().manual_seed(seed)) >= p


def layer(d_in=12, d_out=7, bias=True, dtype=torch.float32, seed=0, p=0.5):
    torch.manual_seed(seed)
    lin = nn.Linear(d_in, d_out, bias=bias, dtype=dtype)
    mask = rand_mask(d_out, d_in, p, seed)
    return lin, mask


def lora_layer(d_in=12, d_out=7, r=3, alpha=6.0, masked=True, dtype=torch.float64, seed=0):
    lin, mask = layer(d_in, d_out, dtype=dtype, seed=seed)
    ml = MaskedLinear.from_linear(lin, mask)
    lo = MaskedLoRALinear(ml, LoRA(r, alpha, masked), generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        lo.lora_B.normal_(generator=torch.Generator().manual_seed(seed + 1))
    return lo, mask


def lora_oracle(lo, x, mask):
    D = lo.lora_B @ lo.lora_A
    if lo.lora.masked:
        D = D * mask
    return F.linear(x, lo.weight + lo.scale * D, lo.bias)


class NewStorages(TorchDispatchMode):
    """Records the bytes of every tensor storage an op creates (views of inputs are not counted)."""

    def __init__(self):
        super().__init__()
        self.sizes = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        ins = {t.untyped_storage().data_ptr() for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)}
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in ins:
                self.sizes.append((t.untyped_storage().nbytes(), str(func)))
        return out
