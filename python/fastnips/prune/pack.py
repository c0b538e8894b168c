r"""Packed storage of pruned weights: N:M and bitmask formats, packed and unpacked bit for bit.

Two formats for a 2-D weight of shape (rows, cols) with element size :math:`b` bytes:

* **N:M** (:func:`pack_nm`, pattern ``NM(keep, group)``): for every row and group of ``group`` consecutive
  columns, ``keep`` slots holding the group's nonzeros (completed by its lowest zero positions when it has
  fewer, stored as +0) in ascending column order: ``values`` (rows, cols·keep/group) in the weight's dtype,
  ``indices`` (rows, cols·keep/group) **uint8**, the position within the group (0..group-1). Size

  .. math:: \text{rows}\cdot\frac{\text{cols}\cdot\text{keep}}{\text{group}}\,(b + 1) \text{ bytes}
            = \frac{\text{keep}}{\text{group}}\Bigl(1 + \frac{1}{b}\Bigr) \times \text{dense}.

  One byte per index, not the 2 bits a 2:4 index needs (NVIDIA's metadata packs them): 2:4 fp16 here is
  50 % values + 25 % indices = 75 % of dense. Byte indices keep unpacking a plain scatter and suit any
  ``group <= 255``.
* **Bitmask** (:func:`pack_bitmask`): ``values`` 1-D, the nonzeros in row-major order; ``bitmask``
  (rows, ceil(cols/8)) uint8 in the layout of :mod:`fastnips.prune.bits` (bit ``j % 8``, least significant
  first, of byte ``j // 8`` set where column j is nonzero); ``row_offsets`` (rows+1) int64, where each row's
  values start. Size

  .. math:: \text{nnz}\cdot b + \text{rows}\cdot\lceil \text{cols}/8 \rceil + 8(\text{rows}+1) \text{ bytes}.

**Zeros and exactness.** An entry is zero when its value is +0 or -0; zeros are not stored and unpack as
+0, so ``W.mul_(mask)``'s -0.0 entries come back as +0.0. Every other entry (NaN and inf included) round-trips
bit for bit, in float16, bfloat16, float32 and float64. Unpacking checks its input (index ranges and order,
offsets against the bitmask popcounts) and raises a ValueError on a malformed pack.

Backends (:data:`PACK_BACKENDS`): ``reference`` (torch) and ``cpp`` (``csrc/prune/pack.cpp``: raw element
bits, OpenMP over rows); both give identical packs. ``"auto"`` takes ``cpp`` for CPU tensors. Checkpoint
files of packed weights: :mod:`fastnips.prune.checkpoint`.

Examples
--------
>>> import torch
>>> from fastnips.prune import NM, pack_nm, unpack_nm
>>> W = torch.tensor([[0.0, 1.5, 0.0, -2.0, 3.0, 0.0, 0.0, 0.0]])
>>> p = pack_nm(W, NM(2, 4))
>>> p.values.tolist(), p.indices.tolist()
([[1.5, -2.0, 3.0, 0.0]], [[1, 3, 0, 1]])
>>> torch.equal(unpack_nm(p), W)
True
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .. import _backend
from .._compat import moved
from .bits import bit_rows, pack_mask
from .masks import NM

__all__ = ["PACK_BACKENDS", "PackedBitmask", "PackedNM", "pack_bitmask", "pack_nm", "unpack_bitmask", "unpack_nm"]

#: The backends of the packing functions.
PACK_BACKENDS = ("reference", "cpp")
_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_BITS = {2: torch.int16, 4: torch.int32, 8: torch.int64}  # raw-bit views for the cpp kernels


@dataclass(frozen=True)
class PackedNM:
    """An N:M-packed weight (see the module docstring for the layout).

    Attributes
    ----------
    values : torch.Tensor, (rows, cols * keep / group), the weight's dtype
    indices : torch.Tensor of uint8, same shape: position within the group, ascending within each group
    shape : (rows, cols)
    pattern : NM
    """

    values: torch.Tensor
    indices: torch.Tensor
    shape: tuple[int, int]
    pattern: NM

    @property
    def nbytes(self) -> int:
        """Bytes stored: ``rows * cols * keep / group * (itemsize + 1)``."""
        return self.values.numel() * self.values.element_size() + self.indices.numel()


@dataclass(frozen=True)
class PackedBitmask:
    """A bitmask-packed weight (see the module docstring for the layout).

    Attributes
    ----------
    values : torch.Tensor, (nnz,), the weight's dtype: nonzeros in row-major order
    bitmask : torch.Tensor of uint8, (rows, ceil(cols / 8)): little bit order
    row_offsets : torch.Tensor of int64, (rows + 1,)
    shape : (rows, cols)
    """

    values: torch.Tensor
    bitmask: torch.Tensor
    row_offsets: torch.Tensor
    shape: tuple[int, int]

    @property
    def nbytes(self) -> int:
        """Bytes stored: ``nnz * itemsize + rows * ceil(cols / 8) + 8 * (rows + 1)``."""
        return self.values.numel() * self.values.element_size() + self.bitmask.numel() + 8 * self.row_offsets.numel()


# ---------------------------------------------------------------------------------------------------
# pack / unpack


def _weight(weight) -> torch.Tensor:
    if not isinstance(weight, torch.Tensor):
        raise TypeError(f"weight must be a torch tensor, got {type(weight).__name__}")
    if weight.dim() != 2:
        raise ValueError(f"weight must be 2-D (out_features, in_features), got shape {tuple(weight.shape)}")
    if weight.dtype not in _FLOATS:
        raise TypeError(f"weight must be float16, bfloat16, float32 or float64, got {weight.dtype}")
    return weight.detach().contiguous()


def _int_view(t: torch.Tensor) -> torch.Tensor:
    """t's raw element bits as a signed integer tensor of the same width (copies of it are bit-exact)."""
    return t.contiguous().view(_BITS[t.element_size()])


def _bits(t: torch.Tensor):
    """A host numpy view of t's raw element bits."""
    return t.detach().to("cpu").contiguous().view(_BITS[t.element_size()]).numpy()


def _from_bits(a, dtype: torch.dtype, device) -> torch.Tensor:
    return torch.from_numpy(a).view(dtype).to(device)


def _check_pattern(pattern, cols: int) -> NM:
    if not isinstance(pattern, NM):
        raise TypeError(f"pattern must be an NM(keep, group), got {pattern!r}")
    if cols % pattern.group:
        raise ValueError(f"in_features = {cols} is not a multiple of the N:M group {pattern.group}")
    if pattern.group > 255:
        raise ValueError(f"N:M groups larger than 255 do not fit uint8 indices, got {pattern.group}")
    return pattern


def _nm_message(row: int, group: int, nnz: int, pattern: NM) -> str:
    return (f"weight does not follow the N:M pattern (keep {pattern.keep} of {pattern.group}): row {row}, group "
            f"{group} (columns {group * pattern.group}..{(group + 1) * pattern.group - 1}) holds {nnz} nonzeros")


def pack_nm(weight: torch.Tensor, pattern: NM, *, backend: str = "auto") -> PackedNM:
    """Pack a weight that follows ``pattern`` (at most ``keep`` nonzeros per group of ``group`` columns).

    Parameters
    ----------
    weight : torch.Tensor, (rows, cols), float16/bfloat16/float32/float64; cols a multiple of the group
    pattern : NM
    backend : {"auto", "reference", "cpp"}

    Returns
    -------
    PackedNM

    Raises
    ------
    ValueError
        A group with more than ``keep`` nonzeros (the message names the first such row and group), or cols not
        a multiple of the group.
    """
    w = _weight(weight)
    rows, cols = w.shape
    p = _check_pattern(pattern, cols)
    b = _backend.resolve(backend, op="pack_nm", supported=PACK_BACKENDS, like=w)
    if b == "cpp":
        values, idx = _backend.native().prune_pack_nm(_bits(w), p.keep, p.group)
        return PackedNM(_from_bits(values, w.dtype, w.device), torch.from_numpy(idx).to(w.device), (rows, cols), p)
    ng = cols // p.group
    nz = (w != 0).reshape(rows, ng, p.group)
    g = _int_view(w).reshape(rows, ng, p.group)  # moved as raw bits: torch's gather may rewrite NaN payloads
    count = nz.sum(dim=-1)
    bad = count > p.keep
    if bool(bad.any()):
        f = int(bad.reshape(-1).to(torch.uint8).argmax())
        raise ValueError(_nm_message(f // ng, f % ng, int(count.reshape(-1)[f]), p))
    # slots: nonzeros first, then zeros, each by position; keep `keep` of them, in ascending position
    key = (~nz).to(torch.int64) * p.group + torch.arange(p.group, device=w.device)
    pos = torch.sort(torch.sort(key, dim=-1).indices[..., : p.keep], dim=-1).values
    vals = torch.gather(g, -1, pos) * torch.gather(nz, -1, pos)  # completing zeros (+0 or -0) become +0
    return PackedNM(vals.reshape(rows, ng * p.keep).view(w.dtype), pos.to(torch.uint8).reshape(rows, ng * p.keep),
                    (rows, cols), p)


def unpack_nm(packed: PackedNM, *, backend: str = "auto") -> torch.Tensor:
    """The dense weight of a :class:`PackedNM` (+0 outside the stored slots).

    Raises
    ------
    ValueError
        Inconsistent shapes, or indices that are not strictly increasing positions in [0, group) within a group.
    """
    if not isinstance(packed, PackedNM):
        raise TypeError(f"packed must be a PackedNM, got {type(packed).__name__}")
    rows, cols = (int(x) for x in packed.shape)
    p = _check_pattern(packed.pattern, cols)
    pc = cols // p.group * p.keep
    values, idx = packed.values, packed.indices
    if values.dtype not in _FLOATS:
        raise TypeError(f"values must be float16, bfloat16, float32 or float64, got {values.dtype}")
    if idx.dtype != torch.uint8:
        raise TypeError(f"indices must be uint8, got {idx.dtype}")
    if tuple(values.shape) != (rows, pc) or tuple(idx.shape) != (rows, pc):
        raise ValueError(f"values and indices must have shape (rows, in_features * keep / group) = ({rows}, {pc}), "
                         f"got {tuple(values.shape)} and {tuple(idx.shape)}")
    b = _backend.resolve(backend, op="unpack_nm", supported=PACK_BACKENDS, like=values)
    if b == "cpp":
        out = _backend.native().prune_unpack_nm(_bits(values), idx.detach().cpu().contiguous().numpy(), cols, p.keep,
                                                p.group)
        return _from_bits(out, values.dtype, values.device)
    ng = cols // p.group
    pos = idx.reshape(rows, ng, p.keep).to(torch.int64)
    ok = (pos < p.group).all(dim=-1)
    if p.keep > 1:
        ok &= (pos[..., 1:] > pos[..., :-1]).all(dim=-1)
    if not bool(ok.all()):
        f = int((~ok).reshape(-1).to(torch.uint8).argmax())
        raise ValueError(f"indices must be strictly increasing positions in [0, {p.group}) within each group: row "
                         f"{f // ng}, group {f % ng}")
    out = torch.zeros(rows, ng, p.group, dtype=_BITS[values.element_size()], device=values.device)
    out.scatter_(-1, pos, _int_view(values).reshape(rows, ng, p.keep))
    return out.reshape(rows, cols).view(values.dtype)


def pack_bitmask(weight: torch.Tensor, *, backend: str = "auto") -> PackedBitmask:
    """Pack any 2-D float weight as its nonzeros, a bitmask and row offsets (see the module docstring)."""
    w = _weight(weight)
    rows, cols = w.shape
    b = _backend.resolve(backend, op="pack_bitmask", supported=PACK_BACKENDS, like=w)
    if b == "cpp":
        values, bitmask, offsets = _backend.native().prune_pack_bitmask(_bits(w))
        return PackedBitmask(_from_bits(values, w.dtype, w.device), torch.from_numpy(bitmask).to(w.device),
                             torch.from_numpy(offsets).to(w.device), (rows, cols))
    nz = w != 0
    bitmask = pack_mask(nz)
    offsets = torch.zeros(rows + 1, dtype=torch.int64, device=w.device)
    offsets[1:] = torch.cumsum(nz.sum(dim=1), dim=0)
    return PackedBitmask(_int_view(w)[nz].view(w.dtype), bitmask, offsets, (rows, cols))


def unpack_bitmask(packed: PackedBitmask, *, backend: str = "auto") -> torch.Tensor:
    """The dense weight of a :class:`PackedBitmask`.

    Raises
    ------
    ValueError
        Inconsistent shapes; row offsets that do not rise from 0 to ``len(values)`` in steps equal to the
        bitmask's row popcounts; bits set past the last column.
    """
    if not isinstance(packed, PackedBitmask):
        raise TypeError(f"packed must be a PackedBitmask, got {type(packed).__name__}")
    rows, cols = (int(x) for x in packed.shape)
    values, bitmask, offsets = packed.values, packed.bitmask, packed.row_offsets
    nbytes = (cols + 7) // 8
    if values.dtype not in _FLOATS or values.dim() != 1:
        raise TypeError(f"values must be a 1-D float16/bfloat16/float32/float64 tensor, got {values.dtype} with "
                        f"shape {tuple(values.shape)}")
    if bitmask.dtype != torch.uint8 or tuple(bitmask.shape) != (rows, nbytes):
        raise ValueError(f"bitmask must be uint8 of shape (rows, ceil(in_features / 8)) = ({rows}, {nbytes}), got "
                         f"{bitmask.dtype} {tuple(bitmask.shape)}")
    if offsets.dtype != torch.int64 or tuple(offsets.shape) != (rows + 1,):
        raise ValueError(f"row_offsets must be int64 of shape (rows + 1,) = ({rows + 1},), got {offsets.dtype} "
                         f"{tuple(offsets.shape)}")
    b = _backend.resolve(backend, op="unpack_bitmask", supported=PACK_BACKENDS,
                         like=values)
    if b == "cpp":
        out = _backend.native().prune_unpack_bitmask(_bits(values), bitmask.detach().cpu().contiguous().numpy(),
                                                     offsets.detach().cpu().contiguous().numpy(), cols)
        return _from_bits(out, values.dtype, values.device)
    bits = bit_rows(bitmask, 0, rows)  # (rows, 8 * nbytes), padding columns included
    counts = bits.sum(dim=1)
    steps = offsets[1:] - offsets[:-1]
    if int(offsets[0]) != 0 or bool((steps < 0).any()) or int(offsets[-1]) != values.numel() or bool(
            (steps != counts).any()) or bool(bits[:, cols:].any()):
        stray = bits[:, cols:].any(dim=1)
        if bool(stray.any()):
            raise ValueError(f"bitmask row {int(stray.to(torch.uint8).argmax())} has bits set past the last column")
        raise ValueError("row_offsets disagree with the bitmask or values: they must rise from 0 to len(values), "
                         "row by row as the popcount of the bitmask")
    out = torch.zeros(rows, cols, dtype=_BITS[values.element_size()], device=values.device)
    out[bits[:, :cols]] = _int_view(values)
    return out.view(values.dtype)


# names that moved to fastnips.prune.checkpoint
__getattr__ = moved(__name__, dict.fromkeys(("FORMAT_VERSION", "load_sparse", "save_sparse"),
                                            "fastnips.prune.checkpoint"))
