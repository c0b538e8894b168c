"""fastnips.prune masks: exact counts under heavy ties, valid N:M patterns, index tie-breaking, clear errors;
the cpp selection equal to the torch reference bit for bit; the fused prune_weight_.

Oracle: plain Python per-row sorting (sorted by (score, index)), independent of torch.sort.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fastnips import _backend  # noqa: E402
from fastnips.prune import NM, magnitude_scores, select_mask, wanda_scores  # noqa: E402
from fastnips.prune.masks import prune_weight_  # noqa: E402


def tied_weights(rows=16, cols=64, levels=5, seed=0):
    """Integer-valued weights in {-levels..levels}: most scores tie (like Q4-dequantised blocks)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-levels, levels + 1, (rows, cols), generator=g).double()


def oracle_row_mask(row, k):
    """Keep-mask pruning the k smallest (score, index) pairs of one row."""
    order = sorted(range(len(row)), key=lambda j: (row[j], j))
    keep = [True] * len(row)
    for j in order[:k]:
        keep[j] = False
    return keep


@pytest.mark.parametrize("sparsity", [0.0, 0.25, 0.5, 0.7, 0.99])
def test_unstructured_row_scope_is_exact_with_ties(sparsity):
    W = tied_weights()
    s = magnitude_scores(W)
    m = select_mask(s, sparsity=sparsity)
    k = math.floor(sparsity * W.shape[1])
    assert m.dtype == torch.bool
    assert (m.shape[1] - m.sum(dim=1) == k).all()  # exactly k pruned in every row
    for i in range(W.shape[0]):
        assert m[i].tolist() == oracle_row_mask(s[i].tolist(), k)


def test_matrix_scope_is_exact_and_matches_oracle():
    W = tied_weights(rows=8, cols=24, levels=2, seed=3)
    s = magnitude_scores(W)
    m = select_mask(s, sparsity=0.6, scope="matrix")
    k = math.floor(0.6 * W.numel())
    assert int((~m).sum()) == k
    assert m.reshape(-1).tolist() == oracle_row_mask(s.reshape(-1).tolist(), k)


def test_threshold_rules_of_sparsegpt_and_wanda_magnitude_over_prune_here():
    """`score <= sorted(score.flatten())[int(s * numel)]` -- SparseGPT's block rule (per block of columns, all
    rows) and Wanda's `prune_magnitude` (per matrix) -- zeroes every tie of the threshold: more than asked.
    The exact-count matrix scope prunes exactly floor(s * numel)."""
    W = tied_weights()
    s = magnitude_scores(W)
    k = int(0.5 * s.numel())
    thresh = torch.sort(s.flatten()).values[k]
    assert int((s <= thresh).sum()) > k  # the reference rules over-prune on tied scores
    assert int((~select_mask(s, sparsity=0.5, scope="matrix")).sum()) == k


def test_wandas_own_per_row_rule_is_exact_and_is_the_row_scope():
    """Wanda's `prune_wanda` (unstructured): a stable sort of each row, the first int(s * d_in) indices pruned.
    That rule is exact, with ties too, and gives the row-scope mask entry for entry."""
    W = tied_weights()
    s = magnitude_scores(W)
    k = int(0.5 * s.shape[1])
    wanda_prune = torch.zeros_like(s, dtype=torch.bool)
    wanda_prune.scatter_(1, torch.sort(s, dim=-1, stable=True)[1][:, :k], True)
    assert (wanda_prune.sum(dim=1) == k).all()
    assert torch.equal(~wanda_prune, select_mask(s, sparsity=0.5, scope="row"))


@pytest.mark.parametrize(("keep", "group"), [(1, 4), (2, 4), (4, 8), (3, 4), (1, 2)])
def test_nm_patterns_are_valid_and_keep_means_keep(keep, group):
    W = tied_weights(cols=32, seed=keep + group)
    W[W == 0] = 0.5  # no zero weights: every group keeps exactly `keep` nonzeros
    m = select_mask(magnitude_scores(W), pattern=NM(keep, group))
    per_group = m.reshape(W.shape[0], -1, group).sum(dim=-1)
    assert (per_group == keep).all()  # 1:4 keeps one of four (the "zero n" reading would keep three)
    assert float((~m).double().mean()) == pytest.approx(NM(keep, group).sparsity)
    pruned = W * m
    assert ((pruned != 0).reshape(W.shape[0], -1, group).sum(dim=-1) <= keep).all()
    for i in range(W.shape[0]):
        for g0 in range(0, W.shape[1], group):
            seg = magnitude_scores(W)[i, g0 : g0 + group].tolist()
            assert m[i, g0 : g0 + group].tolist() == oracle_row_mask(seg, group - keep)


def test_nm_keeps_the_largest_scores():
    s = torch.tensor([[0.1, 0.9, 0.5, 0.7, 4.0, 3.0, 2.0, 1.0]])
    assert select_mask(s, pattern=NM(2, 4)).int().tolist() == [[0, 1, 0, 1, 1, 1, 0, 0]]
    assert str(NM(2, 4)) == "keep 2 of 4"


def test_wanda_scores_formula():
    g = torch.Generator().manual_seed(0)
    W = torch.randn(5, 7, generator=g, dtype=torch.float64)
    X = torch.randn(100, 7, generator=g, dtype=torch.float64)  # calibration tokens x in_features
    norms = X.norm(dim=0)
    s = wanda_scores(W, norms)
    np.testing.assert_allclose(s.numpy(), np.abs(W.numpy()) * np.linalg.norm(X.numpy(), axis=0), rtol=1e-14)
    # the input norms change the ranking: a small weight on a loud feature outranks a larger one
    W2, n2 = torch.tensor([[1.0, 2.0]]), torch.tensor([3.0, 1.0])
    assert select_mask(wanda_scores(W2, n2), sparsity=0.5).tolist() == [[True, False]]
    assert select_mask(magnitude_scores(W2), sparsity=0.5).tolist() == [[False, True]]


@pytest.mark.parametrize(("kwargs", "err", "match"), [
    ({}, ValueError, "exactly one of sparsity"),
    ({"sparsity": 0.5, "pattern": NM(2, 4)}, ValueError, "exactly one of sparsity"),
    ({"sparsity": 1.0}, ValueError, r"sparsity must be a float in \[0, 1\)"),
    ({"sparsity": -0.1}, ValueError, r"sparsity must be a float in \[0, 1\)"),
    ({"sparsity": True}, ValueError, "sparsity must be a float"),
    ({"sparsity": 0.5, "scope": "column"}, ValueError, "scope must be one of"),
    ({"pattern": NM(2, 5)}, ValueError, "not a multiple of the N:M group 5"),
    ({"pattern": "2:4"}, TypeError, "strings like '2:4' are refused"),
])
def test_bad_input(kwargs, err, match):
    with pytest.raises(err, match=match):
        select_mask(torch.ones(3, 8), **kwargs)


def test_bad_tensors_and_patterns():
    with pytest.raises(ValueError, match="NaN or inf"):
        select_mask(torch.tensor([[1.0, float("nan")]]), sparsity=0.5)
    with pytest.raises(ValueError, match="must be 2-D"):
        select_mask(torch.ones(8), sparsity=0.5)
    with pytest.raises(TypeError, match="floating point"):
        select_mask(torch.ones(2, 4, dtype=torch.int64), sparsity=0.5)
    with pytest.raises(TypeError, match="torch tensor"):
        select_mask(np.ones((2, 4)), sparsity=0.5)
    with pytest.raises(ValueError, match="1 <= keep <= group"):
        NM(5, 4)
    with pytest.raises(ValueError, match="1 <= keep <= group"):
        NM(0, 4)
    with pytest.raises(ValueError, match="must be an int"):
        NM(2.0, 4)
    with pytest.raises(ValueError, match=r"input_norms must have shape \(in_features,\) = \(4,\)"):
        wanda_scores(torch.ones(2, 4), torch.ones(3))
    with pytest.raises(ValueError, match="finite and >= 0"):
        wanda_scores(torch.ones(2, 4), torch.tensor([1.0, -1.0, 1.0, 1.0]))


# ---------------------------------------------------------------------------------------------------
# backends: cpp (csrc/prune/masks.cpp) against the torch reference, bit for bit (the ``backend`` fixture of
# conftest.py: reference, cpp)

MASK_SPECS = [
    pytest.param(dict(sparsity=0.0), id="row0"),
    pytest.param(dict(sparsity=0.5), id="row50"),
    pytest.param(dict(sparsity=0.99), id="row99"),
    pytest.param(dict(sparsity=0.37, scope="matrix"), id="matrix37"),
    pytest.param(dict(pattern=NM(1, 4)), id="1:4"),
    pytest.param(dict(pattern=NM(2, 4)), id="2:4"),
    pytest.param(dict(pattern=NM(4, 8)), id="4:8"),
    pytest.param(dict(pattern=NM(5, 32)), id="5:32"),  # a group above 16 takes the nth_element path
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("spec", MASK_SPECS)
def test_cpp_equals_reference_bit_for_bit(spec, dtype):
    if not _backend.backend_available("cpp"):
        pytest.skip(_backend.why_unavailable("cpp"))
    g = torch.Generator().manual_seed(11)
    inputs = [
        tied_weights(rows=33, cols=64, levels=2, seed=1).to(dtype),  # heavy ties
        torch.randn(33, 64, generator=g).to(dtype),
        torch.randn(1, 32, generator=g).abs().to(dtype),
    ]
    inputs[0][0, :8] = -0.0  # signed zeros tie with +0
    for s in inputs:
        ref = select_mask(s, backend="reference", **spec)
        got = select_mask(s, backend="cpp", **spec)
        assert got.dtype == torch.bool
        assert torch.equal(got, ref)


def test_existing_oracles_hold_on_every_backend(backend):
    W = tied_weights()
    s = magnitude_scores(W)
    k = W.shape[1] // 2
    m = select_mask(s, sparsity=0.5, backend=backend)
    for i in range(W.shape[0]):
        assert m[i].tolist() == oracle_row_mask(s[i].tolist(), k)
    m = select_mask(s, sparsity=0.6, scope="matrix", backend=backend)
    assert m.reshape(-1).tolist() == oracle_row_mask(s.reshape(-1).tolist(), math.floor(0.6 * s.numel()))
    m = select_mask(s, pattern=NM(1, 4), backend=backend)
    for i in range(W.shape[0]):
        for g0 in range(0, W.shape[1], 4):
            assert m[i, g0 : g0 + 4].tolist() == oracle_row_mask(s[i, g0 : g0 + 4].tolist(), 3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("criterion", ["magnitude", "wanda"])
@pytest.mark.parametrize("spec", [MASK_SPECS[1], MASK_SPECS[3], MASK_SPECS[4], MASK_SPECS[5]])
def test_prune_weight_fuses_score_select_apply(backend, criterion, spec, dtype):
    g = torch.Generator().manual_seed(12)
    W = tied_weights(rows=20, cols=32, levels=3, seed=2).to(dtype) * torch.randn(1, 32, generator=g).sign().to(dtype)
    norms = torch.rand(32, generator=g, dtype=torch.float64) + 0.5 if criterion == "wanda" else None
    scores = magnitude_scores(W) if norms is None else wanda_scores(W, norms)
    want_mask = select_mask(scores, backend="reference", **spec)
    got = W.clone()
    mask = prune_weight_(got, criterion=criterion, input_norms=norms, backend=backend, **spec)
    assert torch.equal(mask, want_mask)
    assert torch.equal(got, W.masked_fill(~want_mask, 0.0))
    assert not torch.signbit(got[~mask]).any()  # pruned entries are +0.0, not W.mul_(mask)'s -0.0


def test_backend_and_prune_weight_errors():
    with pytest.raises(ValueError, match="unknown backend 'gpu'"):
        select_mask(torch.ones(2, 4), sparsity=0.5, backend="gpu")
    with pytest.raises(ValueError, match="has no 'triton' backend"):
        select_mask(torch.ones(2, 4), sparsity=0.5, backend="triton")
    with pytest.raises(ValueError, match="criterion must be"):
        prune_weight_(torch.ones(2, 4), criterion="sparsegpt", sparsity=0.5)
    with pytest.raises(ValueError, match="needs input_norms"):
        prune_weight_(torch.ones(2, 4), criterion="wanda", sparsity=0.5)
    with pytest.raises(ValueError, match="only used by criterion='wanda'"):
        prune_weight_(torch.ones(2, 4), input_norms=torch.ones(4), sparsity=0.5)
    with pytest.raises(ValueError, match="NaN or inf"):
        prune_weight_(torch.tensor([[1.0, float("inf")]]), sparsity=0.5)
    with pytest.raises(ValueError, match="finite and >= 0"):
        prune_weight_(torch.ones(2, 4), criterion="wanda", input_norms=-torch.ones(4), sparsity=0.5)
    with pytest.raises(ValueError, match="not a multiple of the N:M group 4"):
        prune_weight_(torch.ones(2, 6), pattern=NM(2, 4))
