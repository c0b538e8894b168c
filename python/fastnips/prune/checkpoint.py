r"""Sparse safetensors checkpoints: sparse 2-D weights stored packed (:mod:`fastnips.prune.pack`).

:func:`save_sparse` writes one safetensors file: each floating 2-D tensor whose share of zeros is at least
``min_sparsity`` and whose name does not contain ``"embed"`` is stored packed as ``<name>.values`` +
``<name>.bitmask`` + ``<name>.row_offsets`` (bitmask) or ``<name>.values`` + ``<name>.indices`` (N:M);
everything else dense under its own name. Tensors that share storage (a tied ``lm_head``) are stored once;
the others become aliases, and a tie group that contains an embedding is never packed. The header metadata
key ``"fastnips_sparse"`` holds JSON: ``format_version`` and, per tensor in state-dict order, ``shape``,
``dtype``, ``format`` (``dense`` | ``bitmask`` | ``nm``), ``pattern`` ([keep, group] or null), or
``alias_of``, and ``checksums``: the SHA-256 of the bytes of every stored tensor (format version 2).
:func:`load_sparse` verifies every checksum and returns the dense state dict, bit for bit (zeros as +0); a
corrupted file (a flipped bit in ``values``, a truncated part) is refused with a ValueError naming the tensor.
Version 1 files (written before checksums) are still read, unverified.

Examples
--------
>>> import os, tempfile, torch
>>> from fastnips.prune import load_sparse, save_sparse
>>> sd = {"w": torch.tensor([[0.0, 1.0, 0.0, 2.0]]), "b": torch.ones(1)}
>>> path = os.path.join(tempfile.mkdtemp(), "m.safetensors")
>>> save_sparse(sd, path)["tensors"]["w"]["format"]
'bitmask'
>>> all(torch.equal(load_sparse(path)[k], v) for k, v in sd.items())
True
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping

import torch

from .masks import NM
from .pack import _FLOATS, PackedBitmask, PackedNM, pack_bitmask, pack_nm, unpack_bitmask, unpack_nm

__all__ = ["FORMAT_VERSION", "load_sparse", "save_sparse"]

#: Version of the checkpoint layout written by :func:`save_sparse`.
FORMAT_VERSION = 2
_READABLE_VERSIONS = (1, 2)  # 1: no checksums
_META_KEY = "fastnips_sparse"
_FORMATS = ("dense", "bitmask", "nm")


def _checksum(t: torch.Tensor) -> str:
    """SHA-256 of the bytes of ``t`` (C-contiguous, CPU), as hex."""
    raw = t.detach().to("cpu").contiguous().reshape(-1).view(torch.uint8).numpy()
    return hashlib.sha256(raw.tobytes()).hexdigest()


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


def save_sparse(model_or_state_dict: torch.nn.Module | Mapping[str, torch.Tensor], path: str | os.PathLike, *,
                fmt: str = "bitmask", pattern: NM | None = None, min_sparsity: float = 0.25,
                backend: str = "auto") -> dict:
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
        The metadata written (``format_version``, the per-tensor entries and the ``checksums``).

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
    meta = {"format_version": FORMAT_VERSION, "tensors": entries,
            "checksums": {k: _checksum(v) for k, v in tensors.items()}}
    st.save_file(tensors, os.fspath(path), metadata={_META_KEY: json.dumps(meta)})
    return meta


def load_sparse(path: str | os.PathLike, model: torch.nn.Module | None = None, *,
                backend: str = "auto") -> dict[str, torch.Tensor]:
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
        A file without fastnips metadata, malformed metadata (not JSON, missing or mistyped fields, an alias of
        nothing), an unknown format version, a tensor whose checksum does not match (a corrupted file), packed
        parts that are missing or malformed, or (with ``model``) missing/unexpected keys and shape or dtype
        mismatches, all named.
    """
    _safetensors()
    from safetensors import safe_open

    with safe_open(os.fspath(path), framework="pt") as f:
        header = f.metadata() or {}
        if _META_KEY not in header:
            raise ValueError(f"{os.fspath(path)} is not a fastnips sparse checkpoint (no {_META_KEY!r} metadata)")
        meta = _parse_meta(header[_META_KEY], os.fspath(path))
        sums = meta.get("checksums")
        stored = set(f.keys())
        used: set[str] = set()

        def get(name: str) -> torch.Tensor:
            if name not in stored:
                raise ValueError(f"{os.fspath(path)} lacks the tensor {name!r} its metadata announces")
            used.add(name)
            t = f.get_tensor(name)
            if sums is not None and _checksum(t) != sums.get(name):
                raise ValueError(f"{os.fspath(path)} is corrupted: the checksum of tensor {name!r} does not match "
                                 "the one written with it")
            return t

        out: dict[str, torch.Tensor] = {}
        for name, e in meta["tensors"].items():
            if "alias_of" in e:
                continue
            shape = tuple(e["shape"])
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


def _parse_meta(raw: str, path: str) -> dict:
    """The checkpoint metadata, its structure checked: every defect a ValueError naming the field."""
    def bad(what: str) -> ValueError:
        return ValueError(f"{path}: malformed fastnips sparse checkpoint metadata: {what}")

    try:
        meta = json.loads(raw)
    except ValueError as exc:
        raise bad(f"not JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise bad(f"expected a JSON object, got {type(meta).__name__}")
    if meta.get("format_version") not in _READABLE_VERSIONS:
        raise ValueError(f"unsupported fastnips sparse checkpoint version {meta.get('format_version')!r} "
                         f"(this fastnips reads versions {', '.join(map(str, _READABLE_VERSIONS))})")
    entries = meta.get("tensors")
    if not isinstance(entries, dict):
        raise bad(f"'tensors' must be an object of name -> entry, got {type(entries).__name__}")
    sums = meta.get("checksums")
    if meta["format_version"] >= 2 and not (
            isinstance(sums, dict) and all(isinstance(v, str) for v in sums.values())):
        raise bad("'checksums' must be an object of tensor name -> SHA-256 hex string")
    for name, e in entries.items():
        if not isinstance(e, dict):
            raise bad(f"entry {name!r} must be an object, got {type(e).__name__}")
        if "alias_of" in e:
            target = entries.get(e["alias_of"]) if isinstance(e["alias_of"], str) else None
            if not isinstance(target, dict) or "alias_of" in target:
                raise bad(f"entry {name!r} is an alias of {e['alias_of']!r}, which is not a stored tensor")
            continue
        shape, dtype, fmt, pattern = e.get("shape"), e.get("dtype"), e.get("format"), e.get("pattern")
        if not isinstance(shape, list) or not all(type(x) is int and x >= 0 for x in shape):
            raise bad(f"entry {name!r}: 'shape' must be a list of non-negative ints, got {shape!r}")
        if not isinstance(dtype, str):
            raise bad(f"entry {name!r}: 'dtype' must be a string, got {dtype!r}")
        if fmt not in _FORMATS:
            raise bad(f"entry {name!r}: 'format' must be one of {_FORMATS}, got {fmt!r}")
        if fmt != "dense" and len(shape) != 2:
            raise bad(f"entry {name!r}: a packed tensor must be 2-D, got shape {shape!r}")
        if fmt == "nm" and not (isinstance(pattern, list) and len(pattern) == 2
                                and all(type(x) is int for x in pattern)):
            raise bad(f"entry {name!r}: 'pattern' must be [keep, group] for format 'nm', got {pattern!r}")
    return meta


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
