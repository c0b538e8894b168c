"""The end-to-end job behind ``fastnips prune``: load a causal LM, build calibration and held-out text from the
standard library's docstrings, measure perplexity, prune (and reconstruct), measure again, save a sparse
checkpoint. Also used by ``fastnips demo`` and bench/prune/eval_prune.py.
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
import time
from pathlib import Path

import torch

from .arch import Blocks
from .calib import Calibration
from .engine import _rss_peak
from .masks import NM

__all__ = ["check_model_name", "check_out", "check_scope", "parse_pattern", "parse_window", "run_pipeline"]


def parse_pattern(text: str | None):
    """``None``/``"unstructured"`` -> None; ``"2:4"`` -> ``NM(keep=2, group=4)`` (keep:group, NVIDIA's meaning)."""
    if text is None or text == "unstructured":
        return None
    parts = text.split(":")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise ValueError(f"pattern must be 'unstructured' or KEEP:GROUP such as 2:4, got {text!r}")
    return NM(int(parts[0]), int(parts[1]))


def parse_window(text: str):
    """``none | matrix | attn_mlp | block | blocks:K`` -> the ``window`` argument (None for no reconstruction)."""
    if text == "none":
        return None
    if text in ("matrix", "attn_mlp", "block"):
        return text
    if text.startswith("blocks:") and text[7:].isdigit():
        return Blocks(int(text[7:]))
    raise ValueError(f"window must be none, matrix, attn_mlp, block or blocks:K, got {text!r}")


def check_scope(criterion: str, scope: str | None, pattern=None) -> None:
    """``scope`` must suit ``criterion``: block/row for sparsegpt, row/matrix for magnitude and wanda; none with N:M."""
    if scope is None:
        return
    if pattern is not None:
        raise ValueError(f"scope applies to unstructured sparsity only, not to the N:M pattern {pattern}")
    allowed = ("block", "row") if criterion == "sparsegpt" else ("row", "matrix")
    if scope not in allowed:
        raise ValueError(f"scope {scope!r} does not apply to {criterion}: use one of {allowed}")


def check_model_name(name) -> None:
    """``tiny``, ``smollm2``, an existing folder or ``.gguf`` file; a path that does not exist is refused."""
    if isinstance(name, tuple) or name in ("tiny", "smollm2"):
        return
    p = Path(name)
    if not (p.is_dir() or (p.is_file() and p.suffix == ".gguf")):
        raise ValueError(f"{str(name)!r} is neither 'smollm2', 'tiny', a folder with an HF checkpoint nor a .gguf "
                         "file (nothing is downloaded)")


def check_out(out: str | os.PathLike) -> Path:
    """Refuse an output folder that cannot be created or written, before any work: the nearest existing
    ancestor must be a folder in which a file can be created (probed with a temporary file, removed)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{os.fspath(out)!r} exists and is not a folder")
    base = out
    while not base.exists():
        if base.parent == base:
            break
        base = base.parent
    if not base.is_dir():
        raise ValueError(f"{os.fspath(out)!r} cannot be created: {os.fspath(base)!r} is not a folder")
    try:
        fd, probe = tempfile.mkstemp(dir=base, prefix=".fastnips-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ValueError(f"{os.fspath(out)!r} is not writable ({exc.strerror or exc} in {os.fspath(base)!r})") from None
    return out


def _check_export(export_hf, model):
    """The ``export_hf`` folder checked before any work (None: no export)."""
    if export_hf is None:
        return None
    from .hf_export import check_export_hf

    return check_export_hf(export_hf, model if isinstance(model, str) else None)


def _write_export(net, export_hf, pattern, summary: dict) -> None:
    """Write the Hugging Face export and record its files in ``summary`` (a filesystem error in one line)."""
    if export_hf is None:
        return
    from .hf_export import export_hf as write_hf

    try:
        summary["export_hf_files"] = write_hf(net, export_hf, pattern)
    except OSError as exc:
        raise OSError(f"could not write the export to {os.fspath(export_hf)!r}: {exc.strerror or exc}") from None
    summary["export_hf"] = str(export_hf)


def run_pipeline(model="tiny", *, criterion: str = "wanda", sparsity: float | None = 0.5, pattern=None,
                 scope: str | None = None, window="block", inputs: str = "dense", lora_r: int = 0,
                 epochs: int = 2, lr: float = 1e-4,
                 calib_n: int = 32, seqlen: int = 128, eval_n: int = 16, batch_size: int = 4, seed: int = 0,
                 baseline: bool = True, out: str | Path | None = None, progress: bool = True,
                 log=print, export_hf: str | Path | None = None) -> dict:
    """Prune (and reconstruct) a causal LM and report perplexity; returns the summary as a dict.

    ``model`` is ``"tiny"``, ``"smollm2"``, a local HF folder, or an already loaded ``(model, tokenizer)``
    pair. ``window=None`` prunes without reconstruction. With ``baseline`` the criterion is also run alone on
    a copy, to report the perplexity before reconstruction. ``scope=None`` is the criterion's own comparison
    group (``"block"`` for sparsegpt, ``"row"`` otherwise). ``out`` (checked writable before the model is
    loaded) receives ``sparse.safetensors`` (see :func:`fastnips.prune.save_sparse`), ``summary.json`` and, for
    Hugging Face models, ``config.json``; ``summary["files"]`` lists what was written. ``export_hf`` (HF models;
    a missing or empty folder, checked before the model is loaded) receives the pruned model as a
    ``save_pretrained`` folder with its sparsity block (:func:`fastnips.prune.save_pretrained_sparse`);
    ``summary["export_hf_files"]`` lists it.
    """
    from ..data.text import corpus_split, stdlib_docstrings
    from .criteria import block_linears, magnitude, sparsegpt, wanda
    from .hf import load_causal_lm, perplexity, token_ids
    from .masked import LoRA
    from .reconstruction import prune_and_reconstruct

    check_scope(criterion, scope, pattern)
    check_model_name(model)
    out, export_hf = (None if out is None else check_out(out)), _check_export(export_hf, model)
    t0 = time.perf_counter()
    train_docs, test_docs = corpus_split(stdlib_docstrings(), held_out=0.1, seed=seed)
    held_chars = sum(len(d) for d in test_docs)
    if eval_n * seqlen > held_chars:  # tokens <= characters for the byte-level and BPE tokenizers used here
        raise ValueError(f"eval_n * seqlen = {eval_n * seqlen} exceeds the {held_chars} characters of held-out text")
    if isinstance(model, tuple):
        net, tok = model
        name = type(net).__name__
    else:
        name = str(model)
        log(f"loading {name} ...")
        net, tok = load_causal_lm(model)
    t_load = time.perf_counter() - t0
    calib = Calibration.from_token_ids(token_ids(tok, train_docs), seqlen=seqlen, n=calib_n, seed=seed)
    eval_ids = token_ids(tok, test_docs)[: eval_n * seqlen]
    if eval_ids.numel() < eval_n * seqlen:
        raise ValueError(f"the held-out text has {eval_ids.numel()} tokens, fewer than eval_n * seqlen")
    spec = dict(sparsity=None if pattern is not None else sparsity, pattern=pattern)
    if pattern is None:
        spec["scope"] = scope
    per = scope or ("block" if criterion == "sparsegpt" else "row")
    summary = {"model": name, "criterion": criterion, "pattern": str(pattern) if pattern else f"{sparsity:.0%} "
               f"unstructured per {per}", "window": str(window), "inputs": inputs, "lora_r": lora_r, "epochs": epochs,
               "lr": lr, "calib_tokens": calib.num_tokens, "eval_tokens": int(eval_ids.numel()), "seed": seed,
               "threads": torch.get_num_threads(), "torch": torch.__version__, "load_s": round(t_load, 2)}

    def ppl(m):
        return perplexity(m, eval_ids, seqlen=seqlen, batch_size=batch_size)

    t = time.perf_counter()
    summary["ppl_dense"] = ppl(net)
    summary["eval_s"] = round(time.perf_counter() - t, 2)
    log(f"dense perplexity {summary['ppl_dense']:.3f}")
    crit = {"magnitude": magnitude, "wanda": wanda, "sparsegpt": sparsegpt}[criterion]

    def run_criterion(m):
        if criterion == "magnitude":
            return crit(m, **spec)
        return crit(m, calib, batch_size=batch_size, progress=progress, **spec)

    if window is None or baseline:
        target = net if window is None else copy.deepcopy(net)
        t = time.perf_counter()
        run_criterion(target)
        summary["prune_s"] = round(time.perf_counter() - t, 2)
        summary["ppl_pruned"] = ppl(target)
        log(f"{criterion} pruned perplexity {summary['ppl_pruned']:.3f}")
        if target is not net:
            del target
    if window is not None:
        t = time.perf_counter()
        rep = prune_and_reconstruct(net, calib, criterion=criterion, window=window, inputs=inputs,
                                    peft=LoRA(lora_r, 2 * lora_r) if lora_r else None, epochs=epochs, lr=lr,
                                    batch_size=batch_size, seed=seed, progress=progress, **spec)
        summary["reconstruct_s"] = round(time.perf_counter() - t, 2)
        summary["ppl_reconstructed"] = ppl(net)
        summary["windows"] = len(rep.windows)
        summary["window_loss_before"] = sum(w.loss_before for w in rep.windows) / max(1, len(rep.windows))
        summary["window_loss_after"] = sum(w.loss_after for w in rep.windows) / max(1, len(rep.windows))
        log(f"reconstructed perplexity {summary['ppl_reconstructed']:.3f}")
    lin = block_linears(net).values()
    summary["sparsity"] = sum(int((m.weight == 0).sum()) for m in lin) / sum(m.weight.numel() for m in lin)
    summary["total_s"] = round(time.perf_counter() - t0, 2)
    summary["peak_rss_bytes"] = _rss_peak()
    _write_export(net, export_hf, pattern, summary)
    if out is not None:
        try:
            summary["files"] = _save(net, out, pattern, summary)
        except Exception as exc:  # the folder was writable before the run; a full disk, a removed folder ...
            if not isinstance(exc, OSError) and type(exc).__name__ != "SafetensorError":
                raise
            why = getattr(exc, "strerror", None) or exc
            raise OSError(f"could not write the results to {os.fspath(out)!r}: {why}") from None
        summary["out"] = str(out)
    return summary



def _save(net, out: Path, pattern, summary: dict) -> list[str]:
    """Write sparse.safetensors, config.json (HF models) and summary.json into ``out``; return the names."""
    from .checkpoint import save_sparse

    out.mkdir(parents=True, exist_ok=True)
    save_sparse(net, out / "sparse.safetensors", fmt="nm" if pattern is not None else "bitmask", pattern=pattern)
    files = ["sparse.safetensors"]
    cfg = getattr(net, "config", None)
    if hasattr(cfg, "to_json_file"):
        cfg.to_json_file(str(out / "config.json"))
        files.append("config.json")
    files.append("summary.json")
    (out / "summary.json").write_text(json.dumps({**summary, "files": files}, indent=2))
    return files
