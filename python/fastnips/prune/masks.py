r"""Pruning scores and exact mask selection: unstructured (per row or per matrix) and N:M.

Conventions (choices the papers and tools leave open or get wrong):

* **Masks keep ``True``.** ``W * mask`` is the pruned weight.
* **N:M is one explicit type,** :class:`NM` ``(keep, group)``: keep ``keep`` of every ``group`` consecutive
  input columns of a row. Wanda, SparseGPT and llm-compressor read the string ``"n:m"`` as "zero n of m",
  NVIDIA and torch as "keep n"; the two agree only at 2:4 and 4:8, so no string is accepted.
* **Exact sparsity, also with ties.** Two threshold rules of the reference code zero
  ``score <= sorted(score.flatten())[k]`` with ``k = int(s * numel)``: SparseGPT's unstructured mask (per block
  of 128 columns over all rows) and Wanda's ``prune_magnitude`` baseline (per matrix). They zero at least
  k + 1 entries, and every entry tied with the threshold (with Q4-dequantised weights, 16 levels per block of
  32, ties are the rule). Wanda's own per-row rule (``prune_wanda``: a stable sort of each row, the first
  ``int(s * d_in)`` indices pruned) is exact, and is the ``scope="row"`` rule here. Here exactly
  ``floor(sparsity * count)`` entries are pruned per row (``scope="row"``, Wanda's choice) or per matrix
  (``scope="matrix"``), and exactly ``group - keep`` per N:M group.
* **Deterministic tie-breaking by index:** among equal scores the entry with the lower column index (flat
  index for ``scope="matrix"``) is pruned first (a stable sort), on every backend and run.

Scores: :func:`magnitude_scores` :math:`|W_{ij}|`; :func:`wanda_scores`
:math:`|W_{ij}| \cdot \|X_{:,j}\|_2` (Sun et al., "A Simple and Effective Pruning Approach for Large
Language Models", arXiv 2306.11695), with the input-feature norms over the calibration tokens.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch

from .. import _backend
from .._finite import all_finite

__all__ = ["NM", "SCOPES", "magnitude_scores", "prune_weight_", "select_mask", "wanda_scores"]

SCOPES = ("row", "matrix")


@dataclass(frozen=True)
class NM:
    """An N:M sparsity pattern: keep ``keep`` of every ``group`` consecutive input columns of each row.

    ``NM(2, 4)`` is the 2:4 pattern of sparse tensor cores (50 % sparsity); ``NM(1, 4)`` keeps one of four
    (75 %). Sparsity is ``1 - keep / group``.

    Raises
    ------
    ValueError
        Unless ``1 <= keep <= group``, both ints.
    """

    keep: int
    group: int

    def __post_init__(self):
        for name in ("keep", "group"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise ValueError(f"NM.{name} must be an int, got {v!r}")
        if not 1 <= self.keep <= self.group:
            raise ValueError(f"NM needs 1 <= keep <= group, got keep={self.keep}, group={self.group} "
                             "(keep counts the weights that stay, not the ones zeroed)")

    @property
    def sparsity(self) -> float:
        """Fraction of pruned entries, ``1 - keep / group``."""
        return 1.0 - self.keep / self.group

    def __str__(self) -> str:
        return f"keep {self.keep} of {self.group}"


def _matrix(name: str, t, dims: str = "(out_features, in_features)") -> torch.Tensor:
    """``t`` if it is a 2-D floating-point torch tensor; raise naming ``name`` and its ``dims`` otherwise."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch tensor, got {type(t).__name__}")
    if t.dim() != 2:
        raise ValueError(f"{name} must be 2-D {dims}, got shape {tuple(t.shape)}")
    if not t.is_floating_point():
        raise TypeError(f"{name} must be floating point, got {t.dtype}")
    return t


def magnitude_scores(weight: torch.Tensor) -> torch.Tensor:
    """:math:`|W|`, shape of ``weight`` (out_features, in_features)."""
    return _matrix("weight", weight).detach().abs()


def wanda_scores(weight: torch.Tensor, input_norms: torch.Tensor) -> torch.Tensor:
    r"""Wanda's score :math:`|W_{ij}| \cdot \|X_{:,j}\|_2`.

    Parameters
    ----------
    weight : torch.Tensor, shape (out_features, in_features)
    input_norms : torch.Tensor, shape (in_features,)
        The L2 norm of each input feature over the calibration tokens, :math:`\|X_{:,j}\|_2` (not squared),
        finite and >= 0.
    """
    w = _matrix("weight", weight).detach()
    return w.abs() * _norms(w, input_norms)


def _norms(w: torch.Tensor, input_norms) -> torch.Tensor:
    """``input_norms`` checked and cast to ``w``'s device and dtype."""
    if not isinstance(input_norms, torch.Tensor):
        raise TypeError(f"input_norms must be a torch tensor, got {type(input_norms).__name__}")
    if input_norms.shape != (w.shape[1],):
        raise ValueError(f"input_norms must have shape (in_features,) = ({w.shape[1]},), got "
                         f"{tuple(input_norms.shape)}")
    n = input_norms.detach().to(device=w.device, dtype=w.dtype)
    if not bool(torch.isfinite(n).all()) or bool((n < 0).any()):
        raise ValueError("input_norms must be finite and >= 0")
    return n


#: The backends of :func:`select_mask` and :func:`prune_weight_`.
MASK_BACKENDS = ("reference", "cpp")
_HALF = (torch.float16, torch.bfloat16)


def _check_pattern_or_sparsity(sparsity, pattern, scope, cols: int) -> None:
    """The argument checks :func:`select_mask` and :func:`prune_weight_` share."""
    if (sparsity is None) == (pattern is None):
        raise ValueError("give exactly one of sparsity (unstructured) or pattern (an NM(keep, group))")
    if pattern is not None:
        if not isinstance(pattern, NM):
            raise TypeError(f"pattern must be an NM(keep, group), got {pattern!r} (strings like '2:4' are refused: "
                            "tools disagree on whether n counts kept or zeroed weights)")
        if cols % pattern.group:
            raise ValueError(f"in_features = {cols} is not a multiple of the N:M group {pattern.group}")
        return
    if isinstance(sparsity, bool) or not isinstance(sparsity, numbers.Real) or not 0.0 <= float(sparsity) < 1.0:
        raise ValueError(f"sparsity must be a float in [0, 1), got {sparsity!r}")
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {SCOPES}, got {scope!r}")


def _keep_lowest_pruned(s: torch.Tensor, k: int) -> torch.Tensor:
    """Keep-mask of the 2-D ``s`` pruning the ``k`` lowest of every row, in (score, index) order."""
    order = torch.sort(s, dim=-1, stable=True).indices  # ascending; ties keep index order
    mask = torch.ones_like(s, dtype=torch.bool)
    mask.scatter_(-1, order[:, :k], False)
    return mask


def _reference_select(s: torch.Tensor, sparsity, pattern: NM | None, scope: str) -> torch.Tensor:
    rows, cols = s.shape
    if pattern is not None:
        g = s.reshape(rows * (cols // pattern.group), pattern.group)
        return _keep_lowest_pruned(g, pattern.group - pattern.keep).reshape(rows, cols)
    flat = s.reshape(1, -1) if scope == "matrix" else s
    return _keep_lowest_pruned(flat, math.floor(float(sparsity) * flat.shape[1])).reshape(rows, cols)


def _native_args(shape, sparsity, pattern: NM | None, scope: str) -> dict:
    """mode / k / keep / group for the cpp kernels."""
    rows, cols = shape
    if pattern is not None:
        return dict(mode="nm", keep=pattern.keep, group=pattern.group)
    n = rows * cols if scope == "matrix" else cols
    return dict(mode=scope, k=math.floor(float(sparsity) * n))


def select_mask(scores: torch.Tensor, *, sparsity: float | None = None, pattern: NM | None = None,
                scope: str = "row", backend: str = "auto") -> torch.Tensor:
    """The keep-mask that prunes the lowest scores, with exact counts and index tie-breaking.

    Parameters
    ----------
    scores : torch.Tensor, shape (out_features, in_features), floating point, finite
    sparsity : float in [0, 1), optional
        Unstructured: prune exactly ``floor(sparsity * in_features)`` entries of every row
        (``scope="row"``) or ``floor(sparsity * numel)`` of the matrix (``scope="matrix"``).
    pattern : NM, optional
        N:M instead: in every row, keep exactly ``pattern.keep`` of each ``pattern.group`` consecutive
        columns (``in_features`` must be a multiple of ``group``). Give ``sparsity`` or ``pattern``, not
        both.
    scope : {"row", "matrix"}, default "row"
        Where the unstructured count applies (ignored by N:M, which is per group).
    backend : {"auto", "reference", "cpp"}
        ``"reference"`` is a stable torch sort; ``"cpp"`` (``csrc/prune/masks.cpp``) a partial selection
        (``nth_element`` on (score, index) pairs, O(in_features) per row, OpenMP over rows; a rank count per
        N:M group). Both give the same mask bit for bit; half-precision scores go to ``cpp`` as float32
        (exact, order-preserving). ``"auto"``: ``cpp`` for CPU tensors, else ``reference``; a CUDA tensor
        given to ``cpp`` is selected on the host and the mask comes back to its device.

    Returns
    -------
    torch.Tensor of bool, shape of ``scores``
        True where the weight is kept. Among tied scores the lower index is pruned first.

    Raises
    ------
    ValueError, TypeError
        Both or neither of ``sparsity`` / ``pattern``; sparsity outside [0, 1); a group that does not divide
        ``in_features``; an unknown scope; NaN or inf scores; a non-2-D or non-float tensor; an unknown or
        unavailable backend.

    Examples
    --------
    >>> import torch
    >>> from fastnips.prune import NM, select_mask
    >>> s = torch.tensor([[1.0, 1.0, 1.0, 1.0, 3.0, 0.5, 2.0, 2.0]])
    >>> select_mask(s, sparsity=0.5).int().tolist()        # 4 pruned; of the tied 1.0s the lower indices go
    [[0, 0, 0, 1, 1, 0, 1, 1]]
    >>> select_mask(s, pattern=NM(1, 4)).int().tolist()    # keep 1 of every 4
    [[0, 0, 0, 1, 1, 0, 0, 0]]
    """
    s = _matrix("scores", scores).detach()
    _check_pattern_or_sparsity(sparsity, pattern, scope, s.shape[1])
    b = _backend.resolve(backend, op="select_mask", supported=MASK_BACKENDS, like=s)
    if b == "reference":
        if not all_finite(s):
            raise ValueError("scores contain NaN or inf")
        return _reference_select(s, sparsity, pattern, scope)
    host = s.to("cpu", torch.float32 if s.dtype in _HALF else s.dtype).contiguous()
    if host.dtype not in (torch.float32, torch.float64):
        host = host.to(torch.float64)
    # the native selection refuses NaN/inf itself, in one parallel pass (a separate torch.isfinite(s).all()
    # costs more than the selection; docs/notes/prune.md)
    m = _backend.native().prune_select_mask(host.numpy(), **_native_args(s.shape, sparsity, pattern, scope))
    return torch.from_numpy(m).to(s.device)


def prune_weight_(weight: torch.Tensor, *, criterion: str = "magnitude", input_norms: torch.Tensor | None = None,
                  sparsity: float | None = None, pattern: NM | None = None, scope: str = "row",
                  backend: str = "auto") -> torch.Tensor:
    r"""Score, select and apply in one call: zero the pruned entries of ``weight`` in place, return the mask.

    ``criterion="magnitude"`` scores :math:`|W_{ij}|`, ``"wanda"`` scores :math:`|W_{ij}|\,\|X_{:,j}\|_2`
    (``input_norms``); the selection is :func:`select_mask`'s (exact counts, lower index pruned first among
    ties), so ``prune_weight_(W, ...)`` equals ``W.mul_(select_mask(scores(W), ...))`` except that pruned
    entries become exactly ``+0.0`` (``mul_`` leaves ``-0.0`` for negative weights).

    Parameters
    ----------
    weight : torch.Tensor, shape (out_features, in_features), floating point, finite; modified in place
    criterion : {"magnitude", "wanda"}
    input_norms : torch.Tensor, shape (in_features,), optional
        Required for ``"wanda"``: :math:`\|X_{:,j}\|_2` over the calibration tokens, finite and >= 0.
    sparsity, pattern, scope
        As in :func:`select_mask`.
    backend : {"auto", "reference", "cpp"}
        ``"cpp"`` fuses scoring, selection and zeroing in one pass over each row (float32/float64 CPU
        weights; other dtypes are scored in torch and selected by the cpp selection). ``"auto"``: ``cpp``
        for CPU tensors.

    Returns
    -------
    torch.Tensor of bool, shape of ``weight``: True where kept.
    """
    w = _matrix("weight", weight)
    if criterion not in ("magnitude", "wanda"):
        raise ValueError(f"criterion must be 'magnitude' or 'wanda', got {criterion!r}")
    if criterion == "wanda" and input_norms is None:
        raise ValueError("criterion='wanda' needs input_norms (the L2 norm of each input feature)")
    if criterion == "magnitude" and input_norms is not None:
        raise ValueError("input_norms is only used by criterion='wanda'")
    _check_pattern_or_sparsity(sparsity, pattern, scope, w.shape[1])
    b = _backend.resolve(backend, op="prune_weight_", supported=MASK_BACKENDS, like=w)
    with torch.no_grad():
        norms = _norms(w, input_norms) if criterion == "wanda" else None
        if not all_finite(w):
            raise ValueError("weight contains NaN or inf")
        fused = (b == "cpp" and w.device.type == "cpu" and w.dtype in (torch.float32, torch.float64)
                 and w.is_contiguous())
        if not fused:
            scores = w.detach().abs() if norms is None else w.detach().abs() * norms
            mask = select_mask(scores, sparsity=sparsity, pattern=pattern, scope=scope, backend=b)
            w.masked_fill_(~mask, 0.0)
            return mask
        n = None if norms is None else norms.contiguous().numpy()
        m = _backend.native().prune_weight(w.detach().numpy(), n, **_native_args(w.shape, sparsity, pattern, scope))
        return torch.from_numpy(m)
