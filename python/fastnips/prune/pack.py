r"""Packed storage of pruned weights (N:M and bitmask) and sparse safetensors checkpoints.

Two formats for a 2-D weight of shape (rows, cols) with element size :math:`b` bytes:

* **N:M** (:func:`pack_nm`, pattern ``NM(keep, group)``): for every row and group of ``group`` consecutive
  columns, ``keep`` slots holding the group's nonzeros (completed by its lowest zero positions when it has
  fewer, stored as +0) in ascending column order: ``values`` (rows, cols·keep/group) in the weight's dtype,
  ``indices`` (rows, cols·keep/group) **uint8**, the position within the group (0..group-1). Size

  .. math:: \text{rows}\cdot\frac{\text{cols}\cdot\text{keep}}{\text{group}}\,(b + 1) \text{ bytes}
            = \frac{\text{keep}}{\text{group}}\Bigl(1 + \frac{1}{b}\Bigr) \times \text{dense}.

  What is stored, honestly: one byte per index, not the 2 bits a 2:4 index needs (NVIDIA's metadata
  packs them, about 56 % of dense for 2:4 fp16). 2:4 fp16 here is 50 % values + 25 % indices = **75 %** of
  dense; 2:4 fp32 62.5 %; 1:4 fp16 37.5 %. Byte indices keep unpacking a plain scatter and suit any
  ``group <= 255``.
* **Bitmask** (:func:`pack_bitmask`): ``values`` 1-D, the nonzeros in row-major order; ``bitmask``
  (rows, ceil(cols/8)) uint8, bit ``j % 8`` (least significant first) of byte ``j // 8`` set where column j is
  nonzero; ``row_offsets`` (rows+1) int64, where each row's values start. Size

  .. math:: \text{nnz}\cdot b + \text{rows}\cdot\lceil \text{cols}/8 \rceil + 8(\text{rows}+1) \text{ bytes}

  (50 % unstructured fp16: about 56 % of dense; fp32: about 53 %).

**Zeros and exactness.** An entry is zero when its value is +0 or -0; zeros are not stored and unpack as
+0, so ``W.mul_(mask)``'s -0.0 entries come back as +0.0. Every other entry (NaN and inf included) round-trips
bit for bit, in float16, bfloat16, float32 and float64. Unpacking checks its input (index ranges and order,
offsets against the bitmask popcounts) and raises a ValueError on a malformed pack.

Backends: ``reference`` (torch) and ``cpp`` (``csrc/prune/pack.cpp``: raw element bits, OpenMP over rows);
both give identical packs. ``"auto"`` takes ``cpp`` for CPU tensors.

**Checkpoints.** :func:`save_sparse` writes one safetensors file: each floating 2-D tensor whose share of
zeros is at least ``min_sparsity`` and whose name does not contain ``"embed"`` is stored packed as
``<name>.values`` + ``<name>.bitmask`` + ``<name>.row_offsets`` (bitmask) or ``<name>.values`` +
``<name>.indices`` (N:M); everything else dense under its own name. Tensors that share storage (a tied
``lm_head``) are stored once; the others become aliases, and a tie group that contains an embedding is never
packed. The header metadata key ``"fastnips_sparse"`` holds JSON: ``format_version`` and, per tensor in
state-dict order, ``shape``, ``dtype``, ``format`` (``dense`` | ``bitmask`` | ``nm``), ``pattern``
([keep, group] or null), or ``alias_of``. :func:`load_sparse` returns the dense state dict.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass

import torch

from .. import _backend
from .masks import NM

__all__ = ["FORMAT_VERSION", "PackedBitmask", "PackedNM", "load_sparse", "pack_bitmask", "pack_nm", "save_sparse",
           "unpack_bitmask", "unpack_nm"]

#: Version of the checkpoint layout written by :func:`save_sparse`.
FORMAT_VERSION = 1
_META_KEY = "fastnips_sparse"
_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_BITS = {2: torch.int16, 4: torch.int32, 8: torch.int64}  # raw-bit views for the cpp kernels
_SUPPORTED = ("reference", "cpp")


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


def _resolve(backend: str, t: torch.Tensor, op: str) -> str:
    auto = ("cpp", "reference") if t.device.type == "cpu" else ("reference",)
    return _backend.resolve(backend, op=op, supported=_SUPPORTED, auto=auto)


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
    b = _resolve(backend, w, "pack_nm")
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
    b = _resolve(backend, values, "unpack_nm")
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
    b = _resolve(backend, w, "pack_bitmask")
    if b == "cpp":
        values, bitmask, offsets = _backend.native().prune_pack_bitmask(_bits(w))
        return PackedBitmask(_from_bits(values, w.dtype, w.device), torch.from_numpy(bitmask).to(w.device),
                             torch.from_numpy(offsets).to(w.device), (rows, cols))
    nz = w != 0
    nbytes = (cols + 7) // 8
    padded = torch.zeros(rows, nbytes * 8, dtype=torch.uint8, device=w.device)
    padded[:, :cols] = nz.to(torch.uint8)
    weights = 2 ** torch.arange(8, dtype=torch.int32, device=w.device)
    bitmask = (padded.reshape(rows, nbytes, 8).to(torch.int32) * weights).sum(dim=-1).to(torch.uint8)
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
    b = _resolve(backend, values, "unpack_bitmask")
    if b == "cpp":
        out = _backend.native().prune_unpack_bitmask(_bits(values), bitmask.detach().cpu().contiguous().numpy(),
                                                     offsets.detach().cpu().contiguous().numpy(), cols)
        return _from_bits(out, values.dtype, values.device)
    bits = (bitmask.to(torch.int32)[..., None] >> torch.arange(8, device=bitmask.device)) & 1
    bits = bits.reshape(rows, nbytes * 8).bool()
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


# ---------------------------------------------------------------------------------------------------
# checkpoints


def _safetensors():
    try:
        import safetensors  # noqa: F401
        from safetensors import torch as st
    except ImportError as exc:
        raise ImportError("save_sparse / load_sparse need the optional package 'safetensors': "
                          "pip install safetensors") from exc
    return st


def _state_dict(obj) -> dict[str, torch.Tensor]:
    if isinstance(obj, torch.nn.Module):
        return obj.state_dict()
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            if not isinstance(k, str):
                raise TypeError(f"state dict keys must be strings, got {k!r}")
            if not isinstance(v, torch.Tensor):
                raise TypeError(f"state dict entry {k!r} is a {type(v).__name__}, not a tensor")
        return dict(obj)
    raise TypeError(f"expected an nn.Module or a state dict (mapping of name -> tensor), got {type(obj).__name__}")


def _storage_key(t: torch.Tensor):
    if t.numel() == 0:
        return None
    return (t.device.type, t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()),
            t.dtype)


def _zero_fraction(t: torch.Tensor) -> float:
    return float((t == 0).sum()) / t.numel()


def save_sparse(model_or_state_dict, path, *, fmt: str = "bitmask", pattern: NM | None = None,
                min_sparsity: float = 0.25, backend: str = "auto") -> dict:
    """Write a model's (or state dict's) tensors to one safetensors file, sparse 2-D weights packed.

    Parameters
    ----------
    model_or_state_dict : nn.Module or mapping of str -> torch.Tensor
    path : str or os.PathLike
    fmt : {"bitmask", "nm"}
        How sparse weights are packed; ``"nm"`` needs ``pattern`` and every packed weight must follow it.
    pattern : NM, optional
        The N:M pattern for ``fmt="nm"`` (refused with ``"bitmask"``).
    min_sparsity : float in [0, 1], default 0.25
        Pack a floating 2-D tensor when at least this share of its entries is zero (and its name contains no
        ``"embed"``, and it is not tied to an embedding); store it dense otherwise.
    backend : {"auto", "reference", "cpp"}
        For the packing.

    Returns
    -------
    dict
        The metadata written (``format_version`` and the per-tensor entries).

    Raises
    ------
    ValueError
        Unknown ``fmt``, a missing/extra ``pattern``, ``min_sparsity`` outside [0, 1], a weight that does not
        follow the N:M pattern (named), or a packed name that collides with an existing key.
    ImportError
        When safetensors is not installed.
    """
    st = _safetensors()
    if fmt not in ("bitmask", "nm"):
        raise ValueError(f"fmt must be 'bitmask' or 'nm', got {fmt!r}")
    if fmt == "nm" and not isinstance(pattern, NM):
        raise ValueError(f"fmt='nm' needs pattern=NM(keep, group), got {pattern!r}")
    if fmt == "bitmask" and pattern is not None:
        raise ValueError("pattern is only used with fmt='nm'")
    if isinstance(min_sparsity, bool) or not isinstance(min_sparsity, (int, float)) or not (
            0.0 <= float(min_sparsity) <= 1.0):
        raise ValueError(f"min_sparsity must be a float in [0, 1], got {min_sparsity!r}")
    sd = _state_dict(model_or_state_dict)
    # tie groups: names sharing one storage view; a group with an embedding is never packed
    first: dict = {}
    for name, t in sd.items():
        first.setdefault(_storage_key(t), name)
    tied_to_embed = {first[_storage_key(t)] for name, t in sd.items() if "embed" in name and _storage_key(t)}
    storages: dict = {}
    for name, t in sd.items():
        if t.numel() and first[_storage_key(t)] == name:
            sk = (t.device.type, t.untyped_storage().data_ptr())
            storages[sk] = storages.get(sk, 0) + 1
    tensors: dict[str, torch.Tensor] = {}
    entries: dict[str, dict] = {}
    for name, t in sd.items():
        key = _storage_key(t)
        if key is not None and first[key] != name:
            entries[name] = {"alias_of": first[key]}
            continue
        t = t.detach()
        entry = {"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch."), "format": "dense",
                 "pattern": None}
        packable = (t.dim() == 2 and t.dtype in _FLOATS and t.numel() > 0 and "embed" not in name
                    and name not in tied_to_embed and _zero_fraction(t) >= float(min_sparsity))
        if packable and fmt == "nm":
            try:
                p = pack_nm(t, pattern, backend=backend)
            except ValueError as exc:
                raise ValueError(f"{name}: {exc}; store it with fmt='bitmask' or raise min_sparsity") from exc
            parts = {"values": p.values, "indices": p.indices}
            entry.update(format="nm", pattern=[pattern.keep, pattern.group])
        elif packable:
            p = pack_bitmask(t, backend=backend)
            parts = {"values": p.values, "bitmask": p.bitmask, "row_offsets": p.row_offsets}
            entry["format"] = "bitmask"
        else:  # a view sharing storage with another stored tensor is copied (safetensors refuses shared memory)
            shared = t.numel() and storages[(t.device.type, t.untyped_storage().data_ptr())] > 1
            parts = {"": t.clone() if shared else t}
        for suffix, v in parts.items():
            key_name = f"{name}.{suffix}" if suffix else name
            if key_name in tensors or (suffix and key_name in sd):
                raise ValueError(f"packed tensor name {key_name!r} collides with another entry of the state dict")
            tensors[key_name] = v.to("cpu").contiguous()
        entries[name] = entry
    meta = {"format_version": FORMAT_VERSION, "tensors": entries}
    st.save_file(tensors, os.fspath(path), metadata={_META_KEY: json.dumps(meta)})
    return meta


def load_sparse(path, model: torch.nn.Module | None = None, *, backend: str = "auto") -> dict[str, torch.Tensor]:
    """Read a file written by :func:`save_sparse`; return the dense state dict (and load it into ``model``).

    Parameters
    ----------
    path : str or os.PathLike
    model : nn.Module, optional
        Loaded with ``load_state_dict(strict=True)`` after checking that the keys, shapes and dtypes match
        exactly.
    backend : {"auto", "reference", "cpp"}
        For the unpacking.

    Returns
    -------
    dict of str -> torch.Tensor (CPU), in the saved order; tied names map to one tensor.

    Raises
    ------
    ValueError
        A file without fastnips metadata, an unknown format version, packed parts that are missing or
        malformed, or (with ``model``) missing/unexpected keys and shape or dtype mismatches, all named.
    """
    _safetensors()
    from safetensors import safe_open

    with safe_open(os.fspath(path), framework="pt") as f:
        header = f.metadata() or {}
        if _META_KEY not in header:
            raise ValueError(f"{os.fspath(path)} is not a fastnips sparse checkpoint (no {_META_KEY!r} metadata)")
        meta = json.loads(header[_META_KEY])
        if meta.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"unsupported fastnips sparse checkpoint version {meta.get('format_version')!r} "
                             f"(this fastnips reads version {FORMAT_VERSION})")
        stored = set(f.keys())
        used: set[str] = set()

        def get(name: str) -> torch.Tensor:
            if name not in stored:
                raise ValueError(f"{os.fspath(path)} lacks the tensor {name!r} its metadata announces")
            used.add(name)
            return f.get_tensor(name)

        out: dict[str, torch.Tensor] = {}
        for name, e in meta["tensors"].items():
            if "alias_of" in e:
                continue
            shape = tuple(int(x) for x in e["shape"])
            dtype = getattr(torch, e["dtype"], None)
            if not isinstance(dtype, torch.dtype):
                raise ValueError(f"{name}: unknown dtype {e['dtype']!r} in the metadata")
            fmt = e["format"]
            try:
                if fmt == "dense":
                    t = get(name)
                elif fmt == "bitmask":
                    t = unpack_bitmask(PackedBitmask(get(f"{name}.values"), get(f"{name}.bitmask"),
                                                     get(f"{name}.row_offsets"), shape), backend=backend)
                elif fmt == "nm":
                    t = unpack_nm(PackedNM(get(f"{name}.values"), get(f"{name}.indices"), shape, NM(*e["pattern"])),
                                  backend=backend)
                else:
                    raise ValueError(f"unknown format {fmt!r}")
            except (ValueError, TypeError) as exc:
                raise ValueError(f"{name}: {exc}") from exc
            if tuple(t.shape) != shape or t.dtype != dtype:
                raise ValueError(f"{name}: stored as {t.dtype} {tuple(t.shape)}, metadata says {dtype} {shape}")
            out[name] = t
    if stored - used:
        raise ValueError(f"{os.fspath(path)} holds tensors its metadata does not describe: {sorted(stored - used)}")
    state = {}
    for name, e in meta["tensors"].items():
        state[name] = out[e["alias_of"]] if "alias_of" in e else out[name]
    if model is not None:
        _load_into(model, state)
    return state


def _load_into(model: torch.nn.Module, state: dict[str, torch.Tensor]) -> None:
    own = model.state_dict()
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    if missing or unexpected:
        raise ValueError(f"checkpoint does not match the model: missing {missing}, unexpected {unexpected}")
    bad = [f"{k}: model {own[k].dtype} {tuple(own[k].shape)}, checkpoint {v.dtype} {tuple(v.shape)}"
           for k, v in state.items() if tuple(v.shape) != tuple(own[k].shape) or v.dtype != own[k].dtype]
    if bad:
        raise ValueError("checkpoint does not match the model: " + "; ".join(bad))
    model.load_state_dict(state, strict=True)


def _nm_nbytes(shape, pattern: NM, itemsize: int) -> int:
    """The N:M size formula of the module docstring (used by the tests)."""
    rows, cols = shape
    return rows * cols // pattern.group * pattern.keep * (itemsize + 1)


def _bitmask_nbytes(shape, nnz: int, itemsize: int) -> int:
    """The bitmask size formula of the module docstring (used by the tests)."""
    rows, cols = shape
    return nnz * itemsize + rows * math.ceil(cols / 8) + 8 * (rows + 1)
