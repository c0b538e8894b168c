r"""Bit-packed keep-masks: the one bit layout of the masked layers and of the bitmask checkpoint format.

A bool mask :math:`M \in \{0,1\}^{r \times c}` is stored as uint8 ``(r, ceil(c / 8))``: bit ``j % 8`` of
byte ``[o, j // 8]`` is :math:`M_{oj}` (little-endian bit order, as numpy's
``packbits(mask, axis=1, bitorder="little")``), padding bits 0. This is 1/32 of a float32 weight.
Everything here works a block of rows at a time, so every temporary stays within :data:`CHUNK_BYTES`.

Examples
--------
>>> import torch
>>> from fastnips.prune.bits import pack_mask, unpack_mask
>>> m = torch.tensor([[True, False, True, True, False, False, False, False, True]])
>>> pack_mask(m).tolist()
[[13, 1]]
>>> bool((unpack_mask(pack_mask(m), 9) == m).all())
True
"""

from __future__ import annotations

import numbers

import torch
import torch.nn.functional as F

__all__ = ["CHUNK_BYTES", "bit_rows", "check_mask_kind", "count_kept", "mask_rows_", "pack_mask", "pruned_rows",
           "row_blocks", "unpack_mask"]

#: Upper bound, in bytes, of each weight-shaped temporary of the chunked (reference) code: a block of
#: rows of (BA) ⊙ M, of :math:`(dy^\top x) \odot M`, of an unpacked mask. Read at call time (tests
#: change it to check that results do not depend on it).
CHUNK_BYTES = 4 << 20


def row_blocks(rows: int, bytes_per_row: int):
    """(r0, r1) blocks of rows whose temporaries of ``bytes_per_row`` each stay within CHUNK_BYTES."""
    step = max(1, int(CHUNK_BYTES) // max(int(bytes_per_row), 1))
    for r0 in range(0, rows, step):
        yield r0, min(rows, r0 + step)


def check_mask_kind(mask) -> None:
    """Raise unless ``mask`` is a 2-D bool tensor."""
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"mask must be a torch tensor of bool, got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must be a bool tensor (True = kept), got {mask.dtype}; use mask.bool() or "
                        "fastnips.prune.select_mask")
    if mask.dim() != 2:
        raise ValueError(f"mask must be 2-D (out_features, in_features), got shape {tuple(mask.shape)}")


def pack_mask(mask: torch.Tensor) -> torch.Tensor:
    """Pack a bool keep-mask (out, in) into uint8 ``(out, ceil(in / 8))`` (the layout of the module docstring).

    Parameters
    ----------
    mask : torch.Tensor of bool, shape (out, in)

    Returns
    -------
    torch.Tensor of uint8, shape (out, ceil(in / 8)), on the mask's device

    Raises
    ------
    TypeError, ValueError
        Not a bool tensor; not 2-D.
    """
    check_mask_kind(mask)
    rows, cols = (int(v) for v in mask.shape)
    nb = -(-cols // 8)
    out = torch.empty((rows, nb), dtype=torch.uint8, device=mask.device)
    shifts = torch.arange(8, dtype=torch.uint8, device=mask.device)
    for r0, r1 in row_blocks(rows, max(nb * 8, 1) * 2):
        m = mask[r0:r1]
        if cols % 8:
            m = F.pad(m.to(torch.uint8), (0, nb * 8 - cols))
        else:
            m = m.contiguous().view(torch.uint8)
        torch.sum(m.reshape(r1 - r0, nb, 8) << shifts, dim=-1, dtype=torch.uint8, out=out[r0:r1])
    return out


def unpack_mask(bits: torch.Tensor, in_features: int) -> torch.Tensor:
    """The bool keep-mask (out, in_features) of :func:`pack_mask`'s ``bits`` (a full-size tensor)."""
    if not isinstance(bits, torch.Tensor) or bits.dtype != torch.uint8 or bits.dim() != 2:
        raise TypeError("bits must be a 2-D uint8 tensor (out_features, ceil(in_features / 8))")
    if isinstance(in_features, bool) or not isinstance(in_features, numbers.Integral) or in_features < 0 \
            or -(-int(in_features) // 8) != bits.shape[1]:
        raise ValueError(f"in_features={in_features!r} does not fit bits of shape {tuple(bits.shape)}")
    return bit_rows(bits, 0, int(bits.shape[0]))[:, :int(in_features)].contiguous()


def bit_rows(bits: torch.Tensor, r0: int, r1: int, *, pruned: bool = False) -> torch.Tensor:
    """bool (r1 - r0, 8 * bits.shape[1]) of rows r0:r1, padding columns included: True where kept, or where
    pruned with ``pruned=True`` (one uint8 temporary, viewed as bool: no second copy)."""
    shifts = torch.arange(8, dtype=torch.uint8, device=bits.device)
    t = bits[r0:r1].unsqueeze(-1) >> shifts
    t.bitwise_and_(1)
    if pruned:
        t.bitwise_xor_(1)
    return t.view(r1 - r0, int(bits.shape[1]) * 8).view(torch.bool)


def pruned_rows(bits: torch.Tensor, r0: int, r1: int, in_features: int) -> torch.Tensor:
    """bool (r1 - r0, in_features), True where pruned, from rows r0:r1 of the bits."""
    return bit_rows(bits, r0, r1, pruned=True)[:, :in_features]


def mask_rows_(t: torch.Tensor, bits: torch.Tensor) -> torch.Tensor:
    """Zero, in place, the entries of the (out, in) tensor t that the bits prune; returns t."""
    rows, cols = (int(v) for v in t.shape)
    for r0, r1 in row_blocks(rows, cols * 8):  # bound the mask temporary to CHUNK_BYTES / 8
        t[r0:r1].masked_fill_(pruned_rows(bits, r0, r1, cols), 0)
    return t


_POPCOUNT = None


def count_kept(bits: torch.Tensor) -> int:
    """The number of set bits (kept entries)."""
    global _POPCOUNT
    if _POPCOUNT is None:
        _POPCOUNT = torch.tensor([bin(i).count("1") for i in range(256)], dtype=torch.int64)
    table = _POPCOUNT.to(bits.device)
    total = 0
    for r0, r1 in row_blocks(int(bits.shape[0]), int(bits.shape[1]) * 8):
        total += int(table[bits[r0:r1].long()].sum())
    return total
