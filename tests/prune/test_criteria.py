"""Model-level criteria (magnitude, Wanda, SparseGPT) against hand-written sequential references; the
statistics hooks; calibration sets."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from fastnips.prune import NM
from fastnips.prune.arch import capture_block_inputs, decoder_blocks
from fastnips.prune.calib import Calibration
from fastnips.prune.criteria import StatsCollector, block_linears, magnitude, wanda
from fastnips.prune.masks import magnitude_scores, select_mask, wanda_scores

from .conftest import make_decoder


def _sum_over_inputs(blk, xs, kws, fn):
    """Run the block on every batch; per linear (by name in the block), the sum of ``fn(input as 2-D)``."""
    acc, hooks = {}, []
    for n, mod in blk.named_modules():
        if isinstance(mod, nn.Linear):
            def hk(_m, inp, _out, n=n):
                acc[n] = acc.get(n, 0) + fn(inp[0].reshape(-1, inp[0].shape[-1]))
            hooks.append(mod.register_forward_hook(hk))
    for x, kw in zip(xs, kws):
        blk(x, **kw)
    for h in hooks:
        h.remove()
    return acc


def _sequential_wanda(model, calib, batch_size, **spec):
    """Reference: the reference tools' loop written out plainly (sparse propagation)."""
    prefix, blocks = decoder_blocks(model)
    caps = capture_block_inputs(model, calib.batches(batch_size))
    xs, kws = [h for h, _ in caps], [kw for _, kw in caps]
    masks = {}
    with torch.no_grad():
        for i, blk in enumerate(blocks):
            sq = _sum_over_inputs(blk, xs, kws, lambda x: x.float().square().sum(0, dtype=torch.float64))
            for n, mod in blk.named_modules():
                if isinstance(mod, nn.Linear):
                    mk = select_mask(wanda_scores(mod.weight, sq[n].sqrt().float()), **spec)
                    mod.weight.mul_(mk)
                    masks[f"{prefix}.{i}.{n}"] = mk
            xs = [blk(x, **kw) for x, kw in zip(xs, kws)]
    return masks


@pytest.mark.parametrize("spec", [dict(sparsity=0.5), dict(pattern=NM(2, 4)), dict(sparsity=0.3, scope="matrix")])
def test_wanda_equals_sequential_reference(decoder_kind, calib, spec):
    model = make_decoder(decoder_kind)
    ref_model = copy.deepcopy(model)
    masks = wanda(model, calib, batch_size=3, **spec)
    ref = _sequential_wanda(ref_model, calib, 3, **spec)
    assert masks.keys() == ref.keys()
    assert len(masks) == 3 * 7
    for n in ref:
        assert torch.equal(masks[n], ref[n]), n
    for a, b in zip(model.state_dict().values(), ref_model.state_dict().values()):
        assert torch.equal(a, b)


def test_wanda_not_inplace_leaves_model_unchanged(decoder_kind, calib):
    model = make_decoder(decoder_kind)
    before = copy.deepcopy(model.state_dict())
    masks = wanda(model, calib, sparsity=0.5, inplace=False)
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k
    pruned = copy.deepcopy(model)
    assert all(torch.equal(masks[n], m) for n, m in wanda(pruned, calib, sparsity=0.5).items())


def _collect(model, lin, batches, *, hessian):
    """A StatsCollector on ``lin`` over the model's forward of each batch (one ``next_batch`` each), removed
    afterwards; returns it and the logits per batch."""
    col = StatsCollector(lin, hessian=hessian)
    try:
        with torch.no_grad():
            outs = []
            for ids in batches:
                col.next_batch()
                outs.append(model(input_ids=ids).logits)
    finally:
        col.remove()
    return col, outs


def test_wanda_dense_propagation_uses_one_dense_pass(calib):
    model = make_decoder("tiny")
    ref_model = copy.deepcopy(model)
    masks = wanda(model, calib, sparsity=0.5, propagate="dense", batch_size=4)
    lin = block_linears(ref_model)
    col, _ = _collect(ref_model, lin, calib.batches(4), hessian=False)
    for n, m in lin.items():
        assert torch.equal(masks[n], select_mask(wanda_scores(m.weight, col.by_name[n].norms()), sparsity=0.5)), n


def test_magnitude_masks_and_exact_counts(decoder_kind):
    model = make_decoder(decoder_kind)
    dense = copy.deepcopy(model)
    masks = magnitude(model, pattern=NM(1, 4))
    dl = block_linears(dense)
    for n, lin in block_linears(model).items():
        assert torch.equal(masks[n], select_mask(magnitude_scores(dl[n].weight), pattern=NM(1, 4)))
        groups = (lin.weight != 0).reshape(lin.weight.shape[0], -1, 4).sum(-1)
        assert bool((groups == 1).all()), n  # keep 1 of 4 ("zero n" confusion would keep 3)
    m2 = make_decoder(decoder_kind)
    masks = magnitude(m2, sparsity=0.5, inplace=False)
    for n, lin in block_linears(m2).items():
        assert bool((masks[n].sum(1) == lin.weight.shape[1] // 2).all())
        assert bool((lin.weight != 0).all())  # untouched


def test_stats_once_per_distinct_input_and_hooks_do_not_alter_outputs(decoder_kind, calib):
    model = make_decoder(decoder_kind)
    ids = calib.tokens[:4]
    with torch.no_grad():
        ref = model(input_ids=ids).logits
    _, blocks = decoder_blocks(model)
    lin = {n: m for n, m in blocks[1].named_modules() if isinstance(m, nn.Linear)}
    col, outs = _collect(model, lin, [*calib.batches(3), ids], hessian=True)
    out = outs[-1]
    assert torch.equal(out, ref)  # hooks return None
    # q/k/v share the attention input, gate/up the MLP input: 4 distinct inputs, one pass each per batch
    assert col.distinct == 4
    by = col.by_name
    assert by["self_attn.q_proj"] is by["self_attn.k_proj"] is by["self_attn.v_proj"]
    assert by["mlp.gate_proj"] is by["mlp.up_proj"]
    # regression: the MLP's input is not mistaken for attention's (a freed tensor's address is reused)
    assert by["mlp.gate_proj"] is not by["self_attn.q_proj"]
    n_batches = len(calib.batches(3)) + 1
    assert all(s.passes == n_batches for s in by.values())
    st = by["self_attn.q_proj"]
    assert st.tokens == (calib.n + 4) * calib.seqlen
    torch.testing.assert_close(st.hessian().diagonal() / 2 * st.tokens, st.sq, rtol=1e-5, atol=1e-6)


def test_calibration_is_deterministic_and_sized_by_the_caller():
    ids = torch.arange(1000)
    a = Calibration.from_token_ids(ids, seqlen=10, n=20, seed=3)
    b = Calibration.from_token_ids(ids.numpy(), seqlen=10, n=20, seed=3)
    assert torch.equal(a.tokens, b.tokens)
    assert a.tokens.shape == (20, 10)
    starts = a.tokens[:, 0]
    assert len(set(starts.tolist())) == 20  # distinct
    assert bool((starts % 10 == 0).all())  # aligned
    assert torch.equal(a.tokens, starts[:, None] + torch.arange(10))  # contiguous slices of the stream
    assert not torch.equal(a.tokens, Calibration.from_token_ids(ids, seqlen=10, n=20, seed=4).tokens)
    assert [t.shape[0] for t in a.batches(8)] == [8, 8, 4]
    with pytest.raises(ValueError, match="100 windows of seqlen=10 fit, 101"):
        Calibration.from_token_ids(ids, seqlen=10, n=101)
    with pytest.raises(ValueError, match="1-D"):
        Calibration.from_token_ids(ids.reshape(10, 100), seqlen=10, n=2)
    with pytest.raises(ValueError, match="seqlen must be a positive int"):
        Calibration.from_token_ids(ids, seqlen=0, n=2)


def test_calibration_longer_than_the_model_allows_is_refused(decoder_kind):
    model = make_decoder(decoder_kind)  # max_position_embeddings = 64
    cal = Calibration.from_token_ids(torch.randint(0, 64, (1000,)), seqlen=100, n=2)
    with pytest.raises(ValueError, match="longer than the model allows"):
        wanda(model, cal, sparsity=0.5)
    cal = Calibration.from_token_ids(torch.full((1000,), 99), seqlen=10, n=2)
    with pytest.raises(ValueError, match="vocab_size"):
        wanda(model, cal, sparsity=0.5)


def test_bad_criterion_arguments(calib):
    model = make_decoder("tiny")
    with pytest.raises(ValueError, match="exactly one of sparsity"):
        wanda(model, calib)
    with pytest.raises(ValueError, match=r"sparsity must be a float in \[0, 1\)"):
        wanda(model, calib, sparsity=1.0)
    with pytest.raises(ValueError, match="propagate must be one of"):
        wanda(model, calib, sparsity=0.5, propagate="both")
    with pytest.raises(TypeError, match="Calibration"):
        wanda(model, calib.tokens, sparsity=0.5)
    with pytest.raises(ValueError, match="not a multiple of the N:M group"):
        magnitude(make_decoder("tiny"), pattern=NM(2, 5))


def test_sparsegpt_over_a_model_equals_the_layerwise_sweep_in_sequence(calib):
    from fastnips.prune.criteria import sparsegpt
    from fastnips.prune.sparsegpt_layer import sparsegpt_prune_

    model = make_decoder("tiny")
    ref_model = copy.deepcopy(model)
    masks = sparsegpt(model, calib, sparsity=0.5, batch_size=4, backend="reference")
    prefix, blocks = decoder_blocks(ref_model)
    caps = capture_block_inputs(ref_model, calib.batches(4))
    xs, kws = [h for h, _ in caps], [kw for _, kw in caps]
    with torch.no_grad():
        for i, blk in enumerate(blocks):
            xtx = _sum_over_inputs(blk, xs, kws, lambda x: x.double().t() @ x.double())
            for n, mod in blk.named_modules():
                if isinstance(mod, nn.Linear):
                    H = xtx[n] * (2.0 / calib.num_tokens)
                    res = sparsegpt_prune_(mod.weight.data, H, sparsity=0.5, backend="reference")
                    assert torch.equal(res.mask, masks[f"{prefix}.{i}.{n}"]), (i, n)
            xs = [blk(x, **kw) for x, kw in zip(xs, kws)]
    for (k, a), b in zip(model.state_dict().items(), ref_model.state_dict().values()):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6, msg=k)
