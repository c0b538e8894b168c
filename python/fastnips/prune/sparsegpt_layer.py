r"""SparseGPT: one-shot pruning of a linear layer with optimal-brain-surgeon (OBS) updates of the kept weights.

For a layer :math:`y = W x` with calibration inputs :math:`X` (n tokens) and
:math:`H = \frac{2}{n} \sum x x^\top` (in, in), pruning minimises the layer error
:math:`\|X W^\top - X \hat W^\top\|^2` row by row. Removing weight p of a row from the set F of columns not
yet processed, OBS moves the others by

.. math:: \delta_F = -\frac{w_p}{[H_F^{-1}]_{pp}}\,(H_F^{-1})_{:,p}, \qquad
          \text{saliency } \frac{w_p^2}{[H_F^{-1}]_{pp}},

and SparseGPT (Frantar & Alistarh, "SparseGPT: Massive Language Models Can Be Accurately Pruned in
One-Shot", arXiv 2301.00774) visits the columns left to right, F shrinking by one each step, so every
:math:`H_F^{-1}` row it needs is a row of :math:`U`, the upper Cholesky factor of :math:`H^{-1}`
(:math:`H^{-1} = U^\top U`, :math:`U_{p,p:} = (H_F^{-1})_{p,:} / \sqrt{[H_F^{-1}]_{pp}}`):

1. **Preparation** (torch.linalg, float64 unless ``prep_dtype``, shared by every backend): dead columns
   (:math:`H_{jj} = 0`) get :math:`H_{jj} = 1` and :math:`W_{:,j} = 0`; damping
   :math:`H \mathrel{+}= \lambda I`, :math:`\lambda = \text{percdamp} \cdot \mathrm{mean}(\mathrm{diag} H)`;
   :math:`U = \mathrm{chol}_{upper}(H^{-1})`, SparseGPT's
   :math:`\mathrm{chol}_{upper}(\mathrm{cholesky\_inverse}(\mathrm{chol}(H)))`, computed as the same (unique)
   factor :math:`P L^{-1} P` with :math:`L = \mathrm{chol}(P H P)` and P the index reversal (one Cholesky, one
   triangular solve; no explicit inverse). A non-positive-definite H raises (no silent fallback to the
   identity, unlike llm-compressor).
2. **Column sweep** in blocks of B = ``blocksize`` columns :math:`[i_1, i_2)`: for each column i,
   :math:`d = U_{ii}`, :math:`q` = w with pruned entries set to 0, :math:`e = (w - q)/d`,
   :math:`W_{1,[:, i:]} \mathrel{-}= e \otimes U_{i, i:}` within the block, losses
   :math:`\mathrel{+}= (w - q)^2 / d^2 / 2`; after the block the lazy update
   :math:`W_{[:, i_2:]} \mathrel{-}= E\, U_{[i_1:i_2, i_2:]}`.
3. **Mask** (chosen during the sweep, on the updated weights): at block start, score
   :math:`W_1^2 / \mathrm{diag}(U_1)^2 = w_p^2 / [H_F^{-1}]_{pp}` (the OBS saliency). ``scope="block"`` (the
   default, SparseGPT's comparison group: the whole r x B block, all rows together): exactly
   :math:`\lfloor s\, r\, i_2 \rfloor - \lfloor s\, r\, i_1 \rfloor` entries of the block (total
   :math:`\lfloor s \cdot \mathrm{numel} \rfloor`); ``scope="row"``: every row prunes exactly
   :math:`\lfloor s\, i_2 \rfloor - \lfloor s\, i_1 \rfloor` columns of the block, so each row totals
   :math:`\lfloor s\, d_{in} \rfloor` (Wanda's per-row group). N:M ``NM(keep, group)``: when
   :math:`(i - i_1) \bmod \mathrm{group} = 0`, every row prunes the ``group - keep`` lowest
   :math:`W_{1,[:, i:i+group]}^2 / d^2` of the current (already updated) values; ``blocksize`` is rounded
   down to a multiple of the group.

**Choices that differ from the reference SparseGPT code** (IST-DASLab/sparsegpt, ``sparsegpt.py``):

* *Counts are exact.* The reference's block rule prunes ``score <= sorted(score.flatten())[k]`` with
  ``k = int(s * numel)``, which zeroes at least k+1 entries of the block and every entry tied with the k-th
  (ties are the rule with quantised weights); here exactly the counts above are pruned, the lowest
  (score, index) pairs, i.e. among ties the lower flat row-major index within the block (block scope) or the
  lower column index (row scope, N:M) goes first -- the rule of :func:`fastnips.prune.select_mask`. Without
  ties and with ``s * r * B`` an integer (e.g. 50 %), the block masks are the reference's.
* *N:M counts kept weights.* ``NM(2, 4)`` keeps 2 of 4; the reference's ``prunen:prunem`` zeroes n.
* ``scope="row"`` is an option, not the reference's: it gives every row the same count (measured +1-5 %
  layer reconstruction error against the block rule on random layers). ``scope="matrix"`` is the old name of
  ``"block"`` and still accepted (a SparseGPT mask cannot be chosen over the whole matrix at once: the
  weights of later blocks change while the sweep runs).
* A non-PD Hessian raises a ValueError suggesting a larger ``percdamp``.
* ``prep_dtype``: the preparation runs in float64 by default; ``prep_dtype=torch.float32`` factorises in
  float32 as the reference does (faster for large ``in_features``; a float32 Cholesky of an ill-conditioned
  H can fail where float64 succeeds, which raises the same ValueError).

Entries the sweep prunes are exactly 0 in the result; a kept entry can also be 0 (e.g. a dead column when
the count does not reach it). ``sparsity=0`` leaves W bit for bit unchanged, except dead columns.

Backends (the same semantics everywhere; the preparation is the torch code above, float64 unless ``prep_dtype``):

* ``reference`` -- readable torch: a Python loop over the block's columns, vectorised over rows.
* ``cpp`` -- ``csrc/prune/sparsegpt.cpp``: OpenMP over row tiles, each tile sweeping its rows through every
  block in a local buffer and applying its share of the lazy update as a register-blocked rank-B update
  (AVX-512 / AVX2 clones chosen at run time); scope "matrix" selects across all rows in a serial phase per
  block; inside a block, sub-blocks of 16 columns (whole N:M groups) take rank-1 steps and pass their errors
  to the rest of the block as one rank-16 update. float32 and float64. From in_features 1536 when
  in_features >= 2 out_features (no ``hinv`` given) it sweeps from the factor R of
  :math:`H = R R^\top` instead, never forming :math:`U = R^{-1}`: block b starts from
  :math:`W_{0,b} + (W_0 - Q)_{<b} R_{<b,b} R_{bb}^{-1}` (left-looking updates; one Cholesky, no triangular
  inverse; the update flops equal the right-looking ones, rows x n^2, as MKL/OpenBLAS GEMMs), each block
  swept by the same native kernel (``_sweep_left_cpp``).
* ``triton`` -- ``kernels/sparsegpt.py``: one program per row tile sweeps the block with the tile in
  registers (N:M selected in the kernel); unstructured selection and the lazy update are torch ops between
  launches. CUDA tensors (or CPU under ``TRITON_INTERPRET=1``, slowly).

Computation is in float64 for float64 weights and float32 otherwise (bf16/fp16 weights are swept in
float32 and written back in their dtype). Masks agree across backends on well-separated data; weights
agree to rounding (float32 ~1e-5 relative, float64 ~1e-10; with ``prep_dtype=torch.float32``
to the float32 preparation's accuracy, ~1e-6 on the layers measured).
"""

from __future__ import annotations

import math
import numbers
import os
import time
from dataclasses import dataclass

import torch

from .. import _backend
from .._finite import all_finite
from .masks import NM, _check_pattern_or_sparsity, _keep_lowest_pruned, _matrix

__all__ = ["SparseGPTResult", "sparsegpt_prune_"]

#: The backends of :func:`sparsegpt_prune_`.
SPARSEGPT_BACKENDS = ("reference", "cpp", "triton")
_WEIGHT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
# the cpp backend sweeps from the Cholesky factor R (no triangular inverse, see _sweep_left_cpp) from this
# in_features on when in_features >= 2 out_features (the saved n^3/3 trtri outweighs the fused sweep's locality);
# otherwise the fused right-looking native sweep from U is as fast or faster (measured, docs/notes/prune.md)
_LEFT_FROM = 1536


def _left_looking(rows: int, cols: int) -> bool:
    return cols >= _LEFT_FROM and cols >= 2 * rows


@dataclass
class SparseGPTResult:
    """What :func:`sparsegpt_prune_` returns (the weight itself is updated in place).

    Attributes
    ----------
    mask : torch.Tensor of bool, (out_features, in_features)
        True where the weight was kept.
    losses : torch.Tensor of float64, (out_features,)
        Per row, :math:`\\sum_p (w_p - q_p)^2 / d_p^2 / 2` over its pruned columns (SparseGPT's ``Losses``;
        scales with H).
    seconds : float
        Wall time of the call (preparation, sweep and write-back).
    backend : str
        The backend that ran.
    hinv : torch.Tensor, (in_features, in_features), float64 (float32 with ``prep_dtype=torch.float32``)
        The upper Cholesky factor of the damped :math:`H^{-1}` the sweep used; pass it back as ``hinv=`` to
        prune another layer that reads the same input (q/k/v, gate/up) without refactorising. ``None`` where
        the sweep ran on ``factor`` instead (``cpp`` on wide layers, no ``hinv`` given).
    factor : torch.Tensor, (in_features, in_features), or None
        The upper triangular R with damped :math:`H = R R^\top` (:math:`U = R^{-1}`) the ``cpp`` sweep used;
        pass it back as ``factor=`` likewise. ``None`` where the sweep ran on ``hinv``.
    """

    mask: torch.Tensor
    losses: torch.Tensor
    seconds: float
    backend: str
    hinv: torch.Tensor | None = None
    factor: torch.Tensor | None = None


@dataclass
class _Plan:
    mode: str  # "row" | "matrix" | "nm"
    blocksize: int
    counts: list[int]  # unstructured: pruned per row ("row") or per block ("matrix"), one per block
    keep: int = 0
    group: int = 0


def sparsegpt_prune_(weight: torch.Tensor, hessian: torch.Tensor, *, sparsity: float | None = None,
                     pattern: NM | None = None, scope: str = "block", blocksize: int = 128, percdamp: float = 0.01,
                     backend: str = "auto", n_threads: int = 0, hinv: torch.Tensor | None = None,
                     prep_dtype: torch.dtype = torch.float64, factor: torch.Tensor | None = None) -> SparseGPTResult:
    r"""Prune ``weight`` in place by SparseGPT's OBS column sweep; return the mask and per-row losses.

    See the module docstring for the math and the exact-count mask rule.

    Parameters
    ----------
    weight : torch.Tensor, shape (out_features, in_features)
        float32, float64, bfloat16 or float16, finite. Updated in place: pruned entries become exactly 0,
        kept ones get the OBS compensation.
    hessian : torch.Tensor, shape (in_features, in_features)
        :math:`H = \frac{2}{n}\sum x x^\top` over the calibration tokens, symmetric positive semi-definite,
        any float dtype, finite.
    sparsity : float in [0, 1), optional
        Unstructured sparsity (exact counts per block or per row, see ``scope``).
    pattern : NM, optional
        N:M instead (``NM(keep, group)`` keeps ``keep`` of every ``group``); give exactly one of the two.
    scope : {"block", "row"}, default "block"
        Comparison group of the unstructured selection inside each block of columns (ignored by N:M):
        ``"block"`` all rows of the block together (SparseGPT's rule, exact count), ``"row"`` each row alone.
        ``"matrix"`` is accepted as the old name of ``"block"``.
    blocksize : int, default 128
        Columns per lazy-update block (rounded down to a multiple of the N:M group).
    percdamp : float, default 0.01
        Damping :math:`\lambda = \text{percdamp} \cdot \mathrm{mean}(\mathrm{diag} H)`, >= 0.
    backend : {"auto", "reference", "cpp", "triton"}
        ``"auto"``: ``cpp`` for CPU tensors, ``triton`` for CUDA tensors, else ``reference``.
    n_threads : int, default 0
        OpenMP threads for ``cpp`` (0: the OpenMP default).
    hinv : torch.Tensor, optional
        ``SparseGPTResult.hinv`` of an earlier call with the same ``hessian`` and ``percdamp``: skips the
        O(in_features^3) preparation, which dominates the layer time from in_features ~ 1536 (dead columns
        of ``hessian`` are still zeroed in ``weight``). Checked for its shape, finite entries and a positive
        diagonal (what every upper Cholesky factor has), not against ``hessian`` otherwise.
    factor : torch.Tensor, optional
        ``SparseGPTResult.factor`` of an earlier call with the same ``hessian`` and ``percdamp`` (checked as
        ``hinv``); give at most one of ``hinv`` and ``factor``.
    prep_dtype : torch.float64 or torch.float32, default torch.float64
        Precision of the preparation (Cholesky and triangular inverse). float32 is what the reference code
        does and is faster from in_features ~ 1536; float64 is the default because float32 loses about
        ``cond(H) * 6e-8`` relative accuracy in U.

    Returns
    -------
    SparseGPTResult
        ``mask`` (bool, True = kept, on the weight's device), ``losses`` (float64, per row), ``seconds``,
        ``backend``, ``hinv`` (in ``prep_dtype``).

    Raises
    ------
    ValueError
        Shapes that do not match, NaN/inf in weight or hessian, an asymmetric or (after damping) not positive
        definite hessian, sparsity outside [0, 1), both or neither of sparsity/pattern, an N:M group that does
        not divide in_features or exceeds blocksize, bad blocksize/percdamp/n_threads/prep_dtype, unknown scope
        or backend, an ``hinv`` of the wrong shape, with NaN/inf or with a diagonal entry <= 0.
    TypeError
        Non-tensor inputs, an unsupported weight dtype, a pattern that is not an :class:`NM`.

    Examples
    --------
    >>> import torch
    >>> from fastnips.prune import NM
    >>> from fastnips.prune import sparsegpt_prune_
    >>> X = torch.randn(256, 16, dtype=torch.float64)
    >>> W = torch.randn(4, 16, dtype=torch.float64)
    >>> res = sparsegpt_prune_(W, 2 / 256 * X.T @ X, pattern=NM(2, 4))
    >>> res.mask.reshape(4, 4, 4).sum(-1).unique().tolist(), bool((W[~res.mask] == 0).all())
    ([2], True)
    """
    t0 = time.perf_counter()
    _check_inputs(weight, hessian)
    rows, cols = weight.shape
    plan = _plan(rows, cols, sparsity, pattern, scope, blocksize)
    if isinstance(percdamp, bool) or not isinstance(percdamp, numbers.Real) or not (
            math.isfinite(float(percdamp)) and float(percdamp) >= 0.0):
        raise ValueError(f"percdamp must be a finite float >= 0, got {percdamp!r}")
    if isinstance(n_threads, bool) or not isinstance(n_threads, numbers.Integral) or n_threads < 0:
        raise ValueError(f"n_threads must be a non-negative int, got {n_threads!r}")
    cuda = weight.device.type == "cuda"
    if prep_dtype not in (torch.float32, torch.float64):
        raise ValueError(f"prep_dtype must be torch.float64 or torch.float32, got {prep_dtype!r}")
    if hinv is not None and factor is not None:
        raise ValueError("give at most one of hinv and factor")
    for name, f in (("hinv", hinv), ("factor", factor)):
        if f is not None:
            _check_hinv(f, cols, name)
    b = _backend.resolve(backend, op="sparsegpt_prune_", supported=SPARSEGPT_BACKENDS, like=weight)

    if b == "cpp":
        dev = torch.device("cpu")
    elif b == "triton" and not cuda and torch.cuda.is_available() and not _interpreted():
        dev = torch.device("cuda")
    else:
        dev = weight.device
    cdt = torch.float64 if weight.dtype == torch.float64 else torch.float32
    with torch.no_grad():
        W = weight.detach().to(device=dev, dtype=cdt, copy=True).contiguous()
        if hinv is None and factor is None:
            factor = _factor(W, hessian.detach().to(device=dev), float(percdamp), prep_dtype)
        else:
            W[:, torch.diagonal(hessian).to(dev) == 0] = 0.0  # the dead columns, as _factor does
        if b == "cpp" and hinv is None and _left_looking(rows, cols):
            mask, losses = _sweep_left_cpp(W, factor.to(device=dev, dtype=cdt), plan, int(n_threads))
        else:
            if hinv is None:
                hinv, factor = _inverse_upper(factor, float(percdamp)), None
            U = hinv.to(device=dev, dtype=cdt).contiguous()
            if b == "cpp":
                mask, losses = _sweep_cpp(W, U, plan, int(n_threads))
            else:
                mask, losses = _sweep_torch(W, U, plan, triton=b == "triton")
        weight.copy_(W)
        mask = mask.to(weight.device)
        if weight.device.type == "cuda":
            torch.cuda.synchronize(weight.device)
    return SparseGPTResult(mask=mask, losses=losses.to("cpu"), seconds=time.perf_counter() - t0, backend=b,
                           hinv=hinv, factor=factor)


# ---------------------------------------------------------------------------------------------------
# checks and preparation


def _interpreted() -> bool:
    return os.environ.get("TRITON_INTERPRET", "") not in ("", "0")


def _check_inputs(weight, hessian) -> None:
    _matrix("weight", weight)
    _matrix("hessian", hessian, "(in_features, in_features)")
    if weight.dtype not in _WEIGHT_DTYPES:
        raise TypeError(f"weight must be float32, float64, bfloat16 or float16, got {weight.dtype}")
    cols = weight.shape[1]
    if tuple(hessian.shape) != (cols, cols):
        raise ValueError(f"hessian must have shape (in_features, in_features) = ({cols}, {cols}) for a weight of "
                         f"shape {tuple(weight.shape)}, got {tuple(hessian.shape)}")
    if not all_finite(weight):
        raise ValueError("weight contains NaN or inf")
    if not all_finite(hessian):
        raise ValueError("hessian contains NaN or inf")


def _check_hinv(hinv, cols: int, name: str = "hinv") -> None:
    """``hinv`` must look like an upper Cholesky factor: the shape, finite, a positive diagonal (the sweep divides
    by it; NaN or 0 there gave NaN weights or wrong N:M counts)."""
    if not isinstance(hinv, torch.Tensor) or not hinv.is_floating_point() or tuple(hinv.shape) != (cols, cols):
        got = tuple(hinv.shape) if isinstance(hinv, torch.Tensor) else type(hinv).__name__
        raise ValueError(f"{name} must be the floating ({cols}, {cols}) factor of an earlier call with this hessian "
                         f"(SparseGPTResult.{name}), got {got}")
    if not all_finite(hinv):
        raise ValueError(f"{name} contains NaN or inf; pass SparseGPTResult.{name} of an earlier call unchanged")
    d = torch.diagonal(hinv)
    if cols and not bool((d > 0).all()):
        j = int(torch.nonzero(d <= 0)[0, 0])
        raise ValueError(f"{name} must have a positive diagonal (an upper triangular factor), got "
                         f"{name}[{j}, {j}] = {float(d[j]):g}")


def _plan(rows: int, cols: int, sparsity, pattern, scope: str, blocksize) -> _Plan:
    if scope in ("block", "matrix"):
        scope = "matrix"  # the internal name of the block rule (the native sweep's mode)
    elif scope != "row":
        raise ValueError(f"scope must be 'block' or 'row', got {scope!r}")
    _check_pattern_or_sparsity(sparsity, pattern, scope, cols)
    if isinstance(blocksize, bool) or not isinstance(blocksize, numbers.Integral) or blocksize < 1:
        raise ValueError(f"blocksize must be a positive int, got {blocksize!r}")
    blocksize = int(blocksize)
    if pattern is not None:
        if blocksize < pattern.group:
            raise ValueError(f"blocksize = {blocksize} is smaller than the N:M group {pattern.group}")
        if pattern.group > 255:
            raise ValueError(f"N:M groups larger than 255 are not supported, got {pattern.group}")
        return _Plan("nm", blocksize // pattern.group * pattern.group, [], pattern.keep, pattern.group)
    s = float(sparsity)
    per = 1 if scope == "row" else rows  # floor(s * per * i): exact integer product before the multiply
    ends = [min(i1 + blocksize, cols) for i1 in range(0, cols, blocksize)]
    starts = [0, *ends[:-1]]
    counts = [math.floor(s * (per * i2)) - math.floor(s * (per * i1)) for i1, i2 in zip(starts, ends)]
    return _Plan(scope, blocksize, counts)


def _prepare(W: torch.Tensor, hessian: torch.Tensor, percdamp: float, dtype=torch.float64) -> torch.Tensor:
    """Zero W's dead columns in place; return U, the upper Cholesky factor of the damped H^-1 (in ``dtype``)."""
    return _inverse_upper(_factor(W, hessian, percdamp, dtype), percdamp)


def _factor(W: torch.Tensor, hessian: torch.Tensor, percdamp: float, dtype=torch.float64) -> torch.Tensor:
    """Zero W's dead columns in place; return R = P chol(P H P) P, upper triangular with damped H = R R^T.

    On the CPU R comes back as the transposed view of a contiguous R^T (no copy is needed for the sweep's
    GEMMs or for LAPACK's trtri, see :func:`_inverse_upper`).
    """
    n = hessian.shape[0]
    if n == 0:
        return hessian.to(dtype, copy=True)
    lo, hi = torch.aminmax(hessian.detach())  # finite was checked by _check_inputs; the scale of H
    scale = max(-float(lo), float(hi))
    if scale > 0:
        asym = _max_asymmetry(hessian)
        if asym > 1e-4 * scale:
            raise ValueError(f"hessian must be symmetric (2/n sum x x^T); got max |H - H^T| = {asym:.3g} for "
                             f"max |H| = {scale:.3g}")
    # U = chol_upper(H^-1) is unique; with the reversal P, chol(P H P) = L gives H = (P L P)(P L P)^T with P L P
    # upper triangular, so U = (P L P)^-1 = P L^-1 P: one Cholesky and one triangular inverse, the same factor
    # as chol_upper(cholesky_inverse(chol(H))) to rounding (SparseGPT's preparation, 4/3 n^3 flops, here n^3/3
    # plus n^3/3 for the inverse where the sweep needs U at all). Timings: docs/notes/prune.md.
    if hessian.device.type != "cpu":
        H = hessian.to(dtype, copy=True)
        diag = torch.diagonal(H)
        _undead(W, diag, diag == 0, percdamp)
        L, info = torch.linalg.cholesky_ex(H.flip(0, 1))
        if int(info) != 0:
            raise ValueError(_not_pd(n - int(info), percdamp))
        return L.flip(0, 1)
    import numpy as np
    from scipy.linalg import lapack

    # P H P of a C-contiguous H is its buffer reversed: one sequential copy (and the cast), no strided gather.
    # Symmetric, so its Fortran view (.T) is the same matrix and LAPACK potrf factorises it in place.
    src = hessian.detach() if hessian.dtype in (torch.float32, torch.float64) else hessian.detach().to(dtype)
    Hr = torch.from_numpy(src.contiguous().numpy().reshape(-1)[::-1].astype(
        np.float64 if dtype == torch.float64 else np.float32).reshape(n, n))
    diag = torch.diagonal(Hr)  # H's diagonal reversed (a view)
    _undead(W, diag, (diag == 0).flip(0), percdamp)
    potrf = lapack.dpotrf if dtype == torch.float64 else lapack.spotrf
    Lf, info = potrf(Hr.numpy().T, lower=1, clean=1, overwrite_a=1)
    if info != 0:
        raise ValueError(_not_pd(n - int(info), percdamp))
    # Lf is Fortran-ordered, so its buffer read in C order is L^T; R^T = P L^T P is that buffer reversed
    Rt = torch.from_numpy(np.ascontiguousarray(Lf.T.reshape(-1)[::-1]).reshape(n, n))
    return Rt.T


def _undead(W: torch.Tensor, diag: torch.Tensor, dead_cols: torch.Tensor, percdamp: float) -> None:
    """Dead inputs (H_jj = 0): H_jj = 1 and W[:, j] = 0; then the damping on ``diag`` (a view, in place)."""
    dead = diag == 0
    if bool(dead.any()):
        diag[dead] = 1.0
        W[:, dead_cols.to(W.device)] = 0.0
    diag += percdamp * float(diag.mean())


def _max_asymmetry(H: torch.Tensor, block: int = 256) -> float:
    """max |H - H^T| by square tiles (H - H.T at once reads H.T with a stride of n: several times slower)."""
    n = H.shape[0]
    if H.device.type != "cpu" or n <= block:
        return float((H - H.T).abs().max())
    m = 0.0
    for i in range(0, n, block):
        for j in range(i, n, block):
            m = max(m, float((H[i:i + block, j:j + block] - H[j:j + block, i:i + block].T).abs().max()))
    return m


def _inverse_upper(R: torch.Tensor, percdamp: float) -> torch.Tensor:
    """U = R^-1 for the upper triangular R of :func:`_factor` (LAPACK trtri on the CPU, in place of a copy)."""
    if R.shape[0] == 0:
        return R
    if R.dtype not in (torch.float32, torch.float64):  # a half-precision factor= passed back by the caller
        R = R.to(torch.float32)
    if R.device.type == "cpu":
        from scipy.linalg import lapack

        trtri = lapack.dtrtri if R.dtype == torch.float64 else lapack.strtri
        # R.numpy().T is Fortran-ordered R^T when R is the transposed view _factor returns; trtri reads the
        # upper triangle of R through ``lower=0`` on R itself (R.numpy(): f2py copies only if R is not Fortran)
        Uf, info = trtri(R.numpy(), lower=0)
        if info != 0:  # a zero pivot cannot follow a successful Cholesky; kept as a guard
            raise ValueError(_not_pd(info, percdamp))
        return torch.from_numpy(Uf)
    eye = torch.eye(R.shape[0], dtype=R.dtype, device=R.device)
    return torch.linalg.solve_triangular(R, eye, upper=True)


def _not_pd(column: int, percdamp: float) -> str:
    return (f"hessian + damping is not positive definite (Cholesky failed at column {column}): H must be the "
            f"positive semi-definite 2/n sum x x^T of the layer inputs; with few or degenerate calibration tokens "
            f"use a larger percdamp (now {percdamp:g}, e.g. {max(10 * percdamp, 0.01):g})")


# ---------------------------------------------------------------------------------------------------
# sweeps


def _block_scores(W1: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    return W1**2 / d**2


def _block_keep(W1: torch.Tensor, d: torch.Tensor, plan: _Plan, b: int) -> torch.Tensor:
    """The unstructured keep-mask of one block from its scores at block start."""
    s = _block_scores(W1, d)
    if plan.mode == "row":
        return _keep_lowest_pruned(s, plan.counts[b])
    return _keep_lowest_pruned(s.reshape(1, -1), plan.counts[b]).reshape(s.shape)


def _sweep_torch(W: torch.Tensor, U: torch.Tensor, plan: _Plan, *, triton: bool):
    """The reference sweep (and the triton driver: the same block loop with the in-block sweep in a kernel)."""
    rows, cols = W.shape
    keep = torch.ones(rows, cols, dtype=torch.bool, device=W.device)
    losses = torch.zeros(rows, dtype=torch.float64, device=W.device)
    B = plan.blocksize
    if triton:
        from ..kernels import sparsegpt as tk  # lazy: defining kernels reads TRITON_INTERPRET
    for b, i1 in enumerate(range(0, cols, B)):
        i2 = min(i1 + B, cols)
        d = torch.diagonal(U[i1:i2, i1:i2])
        if triton:
            keep1 = (torch.ones if plan.mode == "nm" else torch.empty)(rows, i2 - i1, dtype=torch.int8,
                                                                       device=W.device)
            if plan.mode != "nm":
                keep1.copy_(_block_keep(W[:, i1:i2], d, plan, b))
            err = torch.empty(rows, i2 - i1, dtype=W.dtype, device=W.device)
            tk.sweep_block(W, U, i1, i2, keep1, err, losses,
                           nm=(plan.keep, plan.group) if plan.mode == "nm" else None)
            keep[:, i1:i2] = keep1.bool()
        else:
            err = _reference_block(W, U, i1, i2, d, plan, b, keep, losses)
        if i2 < cols:
            W[:, i2:] -= err @ U[i1:i2, i2:]
    return keep, losses


def _reference_block(W, U, i1, i2, d, plan: _Plan, b: int, keep, losses) -> torch.Tensor:
    """Sweep columns [i1, i2) of W in place (readable torch); return the block's error columns E."""
    W1 = W[:, i1:i2].clone()
    U1 = U[i1:i2, i1:i2]
    E = torch.zeros_like(W1)
    L1 = torch.zeros_like(W1)
    keep1 = torch.ones_like(W1, dtype=torch.bool) if plan.mode == "nm" else _block_keep(W1, d, plan, b)
    for i in range(i2 - i1):
        if plan.mode == "nm" and i % plan.group == 0:
            g = slice(i, i + plan.group)
            keep1[:, g] = _keep_lowest_pruned(_block_scores(W1[:, g], d[g]), plan.group - plan.keep)
        w = W1[:, i]
        q = torch.where(keep1[:, i], w, torch.zeros_like(w))
        err = (w - q) / d[i]
        L1[:, i] = (w - q) ** 2 / d[i] ** 2
        W1[:, i:] -= err[:, None] * U1[i, i:][None, :]
        W1[:, i] = q
        E[:, i] = err
    W[:, i1:i2] = W1
    keep[:, i1:i2] = keep1
    losses += L1.to(torch.float64).sum(dim=1) / 2
    return E


def _sweep_cpp(W: torch.Tensor, U: torch.Tensor, plan: _Plan, n_threads: int):
    C = _backend.native()
    counts = torch.tensor(plan.counts, dtype=torch.int64).numpy()
    mask, losses = C.prune_sparsegpt_sweep(W.numpy(), U.numpy(), plan.mode, plan.blocksize, counts, keep=plan.keep,
                                           group=plan.group, n_threads=n_threads)
    return torch.from_numpy(mask), torch.from_numpy(losses)


def _sweep_left_cpp(W: torch.Tensor, R: torch.Tensor, plan: _Plan, n_threads: int):
    r"""The sweep from R (damped H = R R^T, U = R^-1) without forming U: left-looking block updates.

    With D = W0 - Q the change of the columns already swept, the right-looking lazy updates of the paper
    (:math:`W \mathrel{-}= E\,U_{[b, :]}`) leave block b at :math:`W_{0,b} + D_{<b} R_{<b,b} R_{bb}^{-1}` when
    its turn comes (from :math:`W U^{-1} = W R` changing only by E, with U R = I), and the in-block sweep needs
    only :math:`U_{bb} = R_{bb}^{-1}`. So the preparation is one Cholesky (n^3/3 flops, no triangular inverse:
    SparseGPT's preparation costs 4/3 n^3); the updates cost what the right-looking ones cost (2 rows B i1 per
    block, rows n^2 in all, plus rows B^2 per block for the product with U_bb), as torch GEMMs. Each block is
    swept by the native one-block kernel.
    """
    rows, cols = W.shape
    C = _backend.native()
    keep = torch.empty(rows, cols, dtype=torch.bool)
    losses = torch.zeros(rows, dtype=torch.float64)
    D = torch.empty_like(W)  # columns < i1: W0 - Q
    for b, i1 in enumerate(range(0, cols, plan.blocksize)):
        i2 = min(i1 + plan.blocksize, cols)
        Rbb = R[i1:i2, i1:i2]
        Ubb = torch.linalg.solve_triangular(Rbb, torch.eye(i2 - i1, dtype=R.dtype), upper=True).contiguous()
        Wb = W[:, i1:i2].clone()
        if i1:
            Wb += (D[:, :i1] @ R[:i1, i1:i2]) @ Ubb
        counts = torch.tensor(plan.counts[b:b + 1], dtype=torch.int64).numpy()
        kb, lb = C.prune_sparsegpt_sweep(Wb.numpy(), Ubb.numpy(), plan.mode, plan.blocksize, counts, keep=plan.keep,
                                         group=plan.group, n_threads=n_threads)
        keep[:, i1:i2] = torch.from_numpy(kb)
        losses += torch.from_numpy(lb)
        torch.sub(W[:, i1:i2], Wb, out=D[:, i1:i2])
        W[:, i1:i2] = Wb
    return keep, losses
