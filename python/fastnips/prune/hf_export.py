r"""Export of pruned Hugging Face causal LMs as ``save_pretrained`` folders that carry their sparsity.

:func:`save_pretrained_sparse` writes what ``model.save_pretrained`` writes (``config.json``, the safetensors
weights, ``generation_config.json``) with the weights dense and their zeros exact, and adds

* the block llm-compressor used to write for sparse models, in ``config.json``::

      "quantization_config": {"quant_method": "compressed-tensors",
                              "sparsity_config": {"format": "dense", "sparsity_structure": "2:4",
                                                  "global_sparsity": 0.42, "targets": ["Linear"],
                                                  "ignore": ["lm_head"]},
                              "transform_config": {}}

  (the schema of compressed-tensors' ``SparsityCompressionConfig`` / ``DenseSparsityConfig``, format
  ``"dense"``: the weights are stored as they are, the block only describes them);
* ``fastnips_sparsity.json``: the same block, the measured sparsity of every linear, and the SHA-256 of every
  stored tensor (as :func:`fastnips.prune.save_sparse` keeps them), so :func:`load_pretrained_sparse` refuses
  a corrupted file naming the tensor.

The block's fields, as llm-compressor fills them: ``global_sparsity`` is the share of zeros over all
parameters (tied ones once); a linear is a *target* when its share of zeros is at least ``min_sparsity``
and its weight follows ``sparsity_structure``; ``targets`` is reduced by module class as llm-compressor does:
the class name (e.g. ``"Linear"``) when at least half of that class's linears are targets, else the target
names; the other linears of a targeted class go to ``ignore`` by name. ``sparsity_structure`` ``"N:M"``
means at most N nonzeros in every group of M consecutive input columns (``"2:4"``: what
:func:`fastnips.prune.wanda` / :func:`~fastnips.prune.sparsegpt` with ``pattern=NM(2, 4)`` produce).

Caveats (versions installed here: transformers 5.24, compressed-tensors 0.20.1). transformers hands any
``quant_method: "compressed-tensors"`` config to compressed-tensors, so ``AutoModelForCausalLM.from_pretrained``
of a folder written with ``compressed_tensors=True`` needs that package (it then loads the weights unchanged);
:func:`load_pretrained_sparse` loads it without. compressed-tensors 0.20.1 still parses the block
(``SparsityCompressionConfig.load_from_registry`` gives a ``DenseSparsityConfig``) but its ``ModelCompressor``
no longer acts on sparsity (it writes ``"sparsity_config": {}``), and transformers 5.24 drops the block on
load. vLLM's compressed-tensors config (read in its source, not run here: no GPU, vLLM not installed) parses
the block and, with no quantization, runs the layers dense ("acceleration for non-quantized schemes is not
supported"): the block records the sparsity; it buys no speed there. ``compressed_tensors=False`` writes a
plain ``save_pretrained`` folder (the block only in ``fastnips_sparsity.json``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .._optional import require
from .arch import is_conv1d
from .checkpoint import _checksum
from .masks import NM

__all__ = ["MANIFEST_NAME", "check_export_hf", "export_hf", "load_pretrained_sparse", "save_pretrained_sparse",
           "sparsity_block"]

#: File name of the fastnips manifest inside an exported folder.
MANIFEST_NAME = "fastnips_sparsity.json"
_MANIFEST_VERSION = 1
_CT_METHOD = "compressed-tensors"
_STALE = ("*.safetensors", "*.safetensors.index.json", MANIFEST_NAME, "config.json", "generation_config.json")


def _structure(structure) -> NM | str | None:
    """``"unstructured"`` -> None, ``"N:M"`` or NM -> NM, ``"auto"`` -> "auto"; anything else a ValueError."""
    if isinstance(structure, NM) or structure in ("auto", "unstructured"):
        return None if structure == "unstructured" else structure
    if isinstance(structure, str):
        parts = structure.split(":")
        if len(parts) == 2 and all(p.isdigit() for p in parts) and 0 < int(parts[0]) < int(parts[1]):
            return NM(int(parts[0]), int(parts[1]))
    raise ValueError(f"structure must be 'auto', 'unstructured', 'N:M' (such as '2:4') or an NM, got {structure!r}")


def _follows(w: torch.Tensor, nm: NM) -> bool:
    """At most ``nm.keep`` nonzeros in every group of ``nm.group`` consecutive input columns of every row."""
    if w.shape[1] % nm.group:
        return False
    return bool(((w != 0).reshape(w.shape[0], -1, nm.group).sum(-1) <= nm.keep).all())


def _linears(model: nn.Module) -> dict[str, tuple[str, torch.Tensor]]:
    """Qualified name -> (class name, weight as (out, in)) for every nn.Linear and transformers Conv1D."""
    out = {}
    for name, m in model.named_modules():
        if isinstance(m, nn.Linear) or is_conv1d(m):
            w = m.weight.detach()
            out[name] = (type(m).__name__, w.t() if is_conv1d(m) else w)
    return out


def _check_model(model) -> None:
    transformers = require("transformers")
    if not isinstance(model, transformers.PreTrainedModel):
        raise TypeError(f"save_pretrained_sparse: model must be a transformers PreTrainedModel (it writes "
                        f"model.save_pretrained's folder), got {type(model).__name__}")
    from .surgery import _MASKED

    masked = [n for n, m in model.named_modules() if isinstance(m, _MASKED)]
    if masked:
        raise ValueError(f"save_pretrained_sparse: the model holds masked layers ({masked[0]!r}, ...): call "
                         "fastnips.prune.strip_masks (and merge_lora) first, so the weights carry the zeros")


def _check_path(path, overwrite: bool) -> Path:
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ValueError(f"save_pretrained_sparse: path {os.fspath(p)!r} exists and is not a folder")
    if p.is_dir() and any(p.iterdir()) and not overwrite:
        raise ValueError(f"save_pretrained_sparse: path {os.fspath(p)!r} exists and is not empty; pass "
                         "overwrite=True to replace the checkpoint in it")
    return p


def sparsity_block(model: nn.Module, structure: str | NM = "auto", min_sparsity: float = 0.25) -> tuple[dict, dict]:
    """The ``sparsity_config`` block and the per-linear report ``{name: {"sparsity", "target"}}`` of ``model``.

    A claimed ``structure`` that a linear with at least ``min_sparsity`` zeros does not follow raises a
    ValueError naming it; ``"auto"`` claims 2:4 when every such linear follows it, unstructured otherwise.
    """
    nm = _structure(structure)
    if isinstance(min_sparsity, bool) or not isinstance(min_sparsity, (int, float)) or not 0 < min_sparsity <= 1:
        raise ValueError(f"min_sparsity must be a float in (0, 1], got {min_sparsity!r}")
    lin = _linears(model)
    frac = {n: float((w == 0).sum()) / max(1, w.numel()) for n, (_, w) in lin.items()}
    sparse = [n for n in lin if frac[n] >= min_sparsity]
    if nm == "auto":
        nm = NM(2, 4) if sparse and all(_follows(lin[n][1], NM(2, 4)) for n in sparse) else None
    elif nm is not None:
        for n in sparse:
            if not _follows(lin[n][1], nm):
                raise ValueError(f"structure {nm.keep}:{nm.group} is claimed but {n} ({frac[n]:.1%} zeros) has a "
                                 f"group of {nm.group} input columns with more than {nm.keep} nonzeros")
    targets, ignore = [], []
    for cls in dict.fromkeys(c for c, _ in lin.values()):
        mine = [n for n, (c, _) in lin.items() if c == cls]
        hit = [n for n in mine if n in sparse]
        if hit:  # the class name when at least half of its linears are targets, else their names
            targets.extend([cls] if len(hit) >= len(mine) - len(hit) else hit)
            ignore.extend(n for n in mine if n not in sparse)
    zeros = total = 0
    for t in model.parameters():  # tied parameters once, as llm-compressor counts them
        zeros, total = zeros + int((t == 0).sum()), total + t.numel()
    block = {"format": "dense", "sparsity_structure": "unstructured" if nm is None else f"{nm.keep}:{nm.group}",
             "global_sparsity": zeros / max(1, total), "targets": targets, "ignore": ignore}
    layers = {n: {"sparsity": frac[n], "target": n in sparse} for n in lin}
    return block, layers


def save_pretrained_sparse(model: nn.Module, path: str | os.PathLike, *, structure: str | NM = "auto",
                           min_sparsity: float = 0.25, compressed_tensors: bool = True, overwrite: bool = False,
                           **save_kwargs: Any) -> dict:
    """Write ``model.save_pretrained(path)`` plus the sparsity block and a checksum manifest (module docstring).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        Pruned in place by fastnips (masked layers stripped: the zeros are in the weights).
    path : str or os.PathLike
        A folder that does not exist or is empty (created).
    structure : {"auto", "unstructured"}, "N:M" or NM, default "auto"
        The claimed ``sparsity_structure``; a claim that a sparse linear breaks raises before anything is
        written. ``"auto"``: ``"2:4"`` when every sparse linear follows 2:4, else ``"unstructured"``.
    min_sparsity : float in (0, 1], default 0.25
        A linear is a sparse target when at least this share of its weight is zero (as in
        :func:`~fastnips.prune.save_sparse`).
    compressed_tensors : bool, default True
        Put the block into ``config.json`` as ``quantization_config`` (what vLLM and compressed-tensors read;
        transformers then needs compressed-tensors to load the folder). False: a plain ``save_pretrained``
        folder, the block only in the manifest.
    overwrite : bool, default False
        Allow a non-empty ``path``: the files of an earlier export (weights, configs, manifest) are removed.
    **save_kwargs
        Passed to ``model.save_pretrained`` (e.g. ``max_shard_size``).

    Returns
    -------
    dict
        The manifest written: ``format_version``, ``sparsity_config``, ``layers`` (sparsity and target flag
        per linear), ``checksums`` (file -> tensor -> SHA-256 hex).

    Raises
    ------
    TypeError
        ``model`` is not a ``PreTrainedModel``.
    ValueError
        Masked layers left in the model, ``path`` a file or a non-empty folder without ``overwrite``, a bad
        ``structure`` / ``min_sparsity``, or a claimed structure the weights do not follow (named).

    Examples
    --------
    >>> import tempfile, torch, transformers
    >>> from fastnips.prune import load_pretrained_sparse, magnitude, save_pretrained_sparse, NM
    >>> cfg = transformers.LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
    ...                                num_attention_heads=2, num_key_value_heads=1)
    >>> model = transformers.LlamaForCausalLM(cfg)
    >>> _ = magnitude(model, pattern=NM(2, 4))
    >>> man = save_pretrained_sparse(model, tempfile.mkdtemp(), compressed_tensors=False)
    >>> man["sparsity_config"]["sparsity_structure"], man["sparsity_config"]["ignore"]
    ('2:4', ['lm_head'])
    """
    _check_model(model)
    if not isinstance(compressed_tensors, bool) or not isinstance(overwrite, bool):
        raise TypeError("compressed_tensors and overwrite must be bools")
    p = _check_path(path, overwrite)
    block, layers = sparsity_block(model, structure, min_sparsity)
    if p.is_dir():
        for pat in _STALE:
            for f in p.glob(pat):
                f.unlink()
    model.save_pretrained(str(p), **save_kwargs)
    if compressed_tensors:
        cfg_path = p / "config.json"
        cfg = json.loads(cfg_path.read_text())
        cfg["quantization_config"] = {"quant_method": _CT_METHOD, "sparsity_config": block, "transform_config": {}}
        cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    manifest = {"format_version": _MANIFEST_VERSION, "sparsity_config": block, "layers": layers,
                "checksums": _file_checksums(p)}
    (p / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _file_checksums(p: Path) -> dict[str, dict[str, str]]:
    from safetensors import safe_open

    out = {}
    for f in sorted(p.glob("*.safetensors")):
        with safe_open(str(f), framework="pt") as fh:
            out[f.name] = {k: _checksum(fh.get_tensor(k)) for k in fh.keys()}
    return out


def load_pretrained_sparse(path: str | os.PathLike, *, dtype: torch.dtype | None = None):
    """Load a folder written by :func:`save_pretrained_sparse`, every tensor checked against its SHA-256.

    The compressed-tensors block (format ``"dense"``: nothing to decompress) is set aside for the load, so
    compressed-tensors need not be installed; it stays in the folder and in the returned model's
    ``fastnips_sparsity`` attribute (the manifest).

    Parameters
    ----------
    path : str or os.PathLike
    dtype : torch.dtype, optional
        Passed to ``from_pretrained`` (default: the stored dtype).

    Returns
    -------
    transformers.PreTrainedModel
        In eval mode, on the CPU.

    Raises
    ------
    ValueError
        A folder without the manifest, a manifest or ``config.json`` block that is malformed or disagrees, a
        weight file missing or added, or a tensor whose checksum does not match (named).
    """
    transformers = require("transformers")
    if dtype is not None and not isinstance(dtype, torch.dtype):
        raise TypeError(f"load_pretrained_sparse: dtype must be a torch.dtype or None, got {dtype!r}")
    p = Path(path)
    man_path = p / MANIFEST_NAME
    if not man_path.is_file():
        raise ValueError(f"load_pretrained_sparse: {os.fspath(p)!r} has no {MANIFEST_NAME} (not written by "
                         "save_pretrained_sparse)")
    try:
        man = json.loads(man_path.read_text())
        sums = man["checksums"]
        ok = (man["format_version"] == _MANIFEST_VERSION and isinstance(man["sparsity_config"], dict)
              and isinstance(sums, dict) and all(isinstance(v, dict) for v in sums.values()))
    except (ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        raise ValueError(f"load_pretrained_sparse: {os.fspath(man_path)!r} is malformed or of another version")
    got = _file_checksums(p)
    if set(got) != set(sums):
        raise ValueError(f"load_pretrained_sparse: weight files {sorted(got)} differ from the manifest's "
                         f"{sorted(sums)}")
    for fname, tensors in got.items():
        for k, h in tensors.items():
            if sums[fname].get(k) != h:
                raise ValueError(f"load_pretrained_sparse: {fname} is corrupted: the checksum of tensor {k!r} does "
                                 "not match the manifest")
    cfg = transformers.AutoConfig.from_pretrained(str(p), local_files_only=True)
    q = getattr(cfg, "quantization_config", None)
    if q is not None:
        if not (isinstance(q, dict) and q.get("quant_method") == _CT_METHOD
                and q.get("sparsity_config") == man["sparsity_config"] and not q.get("config_groups")):
            raise ValueError(f"load_pretrained_sparse: the quantization_config of {os.fspath(p)!r} is not the "
                             "dense sparsity block of its manifest")
        del cfg.quantization_config
    kw = {"local_files_only": True, "config": cfg}
    if dtype is not None:
        major_minor = tuple(int(v) for v in transformers.__version__.split(".")[:2])
        kw["dtype" if major_minor >= (4, 56) else "torch_dtype"] = dtype  # renamed in transformers 4.56
    model = transformers.AutoModelForCausalLM.from_pretrained(str(p), **kw)
    model.fastnips_sparsity = man
    return model.eval()


def check_export_hf(path: str | os.PathLike, model_name) -> Path:
    """``fastnips prune --export-hf DIR``, checked before the model loads: a Hugging Face model (not ``tiny``), a
    folder that is missing or empty and can be created (see :func:`fastnips.prune.pipeline.check_out`)."""
    from .pipeline import check_out

    if model_name == "tiny":
        raise ValueError("--export-hf writes a Hugging Face save_pretrained folder: it needs an HF model (smollm2 "
                         "or a local HF folder), not the tiny decoder (use --out for its sparse checkpoint)")
    p = check_out(path)
    if p.is_dir() and any(p.iterdir()):
        raise ValueError(f"{os.fspath(p)!r} exists and is not empty (an export is written into a fresh folder)")
    return p


def export_hf(net: nn.Module, path: str | os.PathLike, pattern: NM | None) -> list[str]:
    """Write ``net`` (pruned by the ``fastnips prune`` run) with :func:`save_pretrained_sparse`, claiming
    ``pattern`` (N:M) or unstructured sparsity; return the names of the files in ``path``."""
    save_pretrained_sparse(net, path, structure=pattern if pattern is not None else "unstructured")
    return sorted(f.name for f in Path(path).iterdir())
