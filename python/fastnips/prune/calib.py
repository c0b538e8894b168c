r"""Calibration sets: fixed-length token windows drawn from a token stream.

Sized by what the caller asks for (``seqlen`` tokens x ``n`` sequences), never by the model's maximum
context: the reference Wanda/SparseGPT scripts preallocate ``nsamples x model.seqlen x hidden`` and run out
of memory on long-context models (locuslab/wanda#44, #68).

Windows are distinct, non-overlapping slices of the stream, drawn without replacement from the
``len(ids) // seqlen`` aligned slots with a seeded generator, so the same ``(ids, seqlen, n, seed)`` gives the
same set on every machine. Documents are not padded: a window may cross a document boundary (as in the
packed calibration of the reference tools), which the separator token marks.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import torch
from numpy.typing import ArrayLike
from torch import nn

__all__ = ["Calibration"]


def _positive_int(name: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or int(v) < 1:
        raise ValueError(f"{name} must be a positive int, got {v!r}")
    return int(v)


@dataclass(frozen=True)
class Calibration:
    """``n`` token sequences of ``seqlen`` tokens, shape (n, seqlen), int64.

    Build with :meth:`from_token_ids`; iterate with :meth:`batches`. ``tokens`` is the whole set.
    """

    tokens: torch.Tensor

    def __post_init__(self):
        t = self.tokens
        if not isinstance(t, torch.Tensor) or t.dim() != 2 or t.dtype != torch.int64:
            raise ValueError("Calibration.tokens must be an int64 tensor of shape (n, seqlen)")
        if t.shape[0] < 1 or t.shape[1] < 1:
            raise ValueError(f"Calibration needs at least one token, got shape {tuple(t.shape)}")
        if bool((t < 0).any()):
            raise ValueError("token ids must be >= 0")

    @classmethod
    def from_token_ids(cls, ids: ArrayLike, seqlen: int, n: int, seed: int = 0) -> Calibration:
        """Draw ``n`` distinct aligned windows of ``seqlen`` tokens from the 1-D stream ``ids``.

        Parameters
        ----------
        ids : 1-D sequence of int (list, numpy array or torch tensor)
        seqlen, n : int >= 1
        seed : int

        Raises
        ------
        ValueError
            ``ids`` not 1-D, negative ids, or fewer than ``n * seqlen`` tokens (the message says how many
            windows fit).
        """
        seqlen, n = _positive_int("seqlen", seqlen), _positive_int("n", n)
        a = ids.detach().cpu().numpy() if isinstance(ids, torch.Tensor) else np.asarray(ids)
        if a.ndim != 1:
            raise ValueError(f"ids must be a 1-D token stream, got shape {a.shape}")
        if a.size and not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"ids must be integers, got dtype {a.dtype}")
        slots = a.size // seqlen
        if slots < n:
            raise ValueError(f"the stream has {a.size} tokens: {slots} windows of seqlen={seqlen} fit, {n} were "
                             "asked for (pass more text, a shorter seqlen or a smaller n)")
        pick = np.sort(np.random.default_rng(seed).choice(slots, size=n, replace=False))
        rows = a[: slots * seqlen].reshape(slots, seqlen)[pick]
        return cls(torch.from_numpy(np.ascontiguousarray(rows, dtype=np.int64)))

    @property
    def n(self) -> int:
        """Number of sequences."""
        return int(self.tokens.shape[0])

    @property
    def seqlen(self) -> int:
        """Tokens per sequence."""
        return int(self.tokens.shape[1])

    @property
    def num_tokens(self) -> int:
        """Total tokens, ``n * seqlen``."""
        return self.n * self.seqlen

    def batches(self, batch_size: int) -> list[torch.Tensor]:
        """Consecutive batches of at most ``batch_size`` sequences (the last may be shorter)."""
        b = _positive_int("batch_size", batch_size)
        return list(torch.split(self.tokens, b, dim=0))

    def check_model(self, model: nn.Module) -> None:
        """Refuse a calibration longer than the model's context or with ids outside its vocabulary."""
        cfg = getattr(model, "config", None)
        limit = getattr(cfg, "max_position_embeddings", None)
        if limit is not None and self.seqlen > int(limit):
            raise ValueError(f"calibration seqlen {self.seqlen} is longer than the model allows "
                             f"(max_position_embeddings = {limit})")
        vocab = getattr(cfg, "vocab_size", None)
        if vocab is not None and int(self.tokens.max()) >= int(vocab):
            raise ValueError(f"calibration has token id {int(self.tokens.max())} >= the model's vocab_size {vocab}")

    def split(self, n_first: int) -> tuple[Calibration, Calibration]:
        """(first ``n_first`` sequences, the rest), e.g. a held-out part for validation."""
        k = _positive_int("n_first", n_first)
        if k >= self.n:
            raise ValueError(f"n_first must be < n = {self.n}, got {k}")
        return Calibration(self.tokens[:k].clone()), Calibration(self.tokens[k:].clone())
