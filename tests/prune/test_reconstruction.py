"""Local reconstruction: window partitions, the data flow of each mode, fixed masks, loss reduction."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

import fastnips.prune.engine as E
from fastnips.prune import NM
from fastnips.prune.arch import Blocks, decoder_blocks, windows
from fastnips.prune.criteria import block_linears, magnitude, wanda
from fastnips.prune.masked import LoRA
from fastnips.prune.reconstruction import prune_and_reconstruct, reconstruct, retrain

from .conftest import make_decoder


@pytest.mark.parametrize("window", ["block", Blocks(2), "attn_mlp", "matrix"])
def test_windows_partition_the_block_parameters(decoder_kind, window):
    model = make_decoder(decoder_kind)
    _, blocks = decoder_blocks(model)
    ws = windows(model, window)
    ids = [id(p) for w in ws for p in w.parameters()]
    assert len(ids) == len(set(ids))  # disjoint
    if window == "matrix":
        want = {id(m.weight) for m in block_linears(model).values()}
        assert len(ws) == 7 * len(blocks)
    else:
        want = {id(p) for p in blocks.parameters()}
    assert set(ids) == want  # cover
    lin = [n for w in ws for n in w.linears]
    assert sorted(lin) == sorted(block_linears(model))


def _spy(monkeypatch):
    seen = []
    real = E._train_window

    def spy(model, w, fwd, data, *args, **kw):
        seen.append((w.name, [x.clone() for x in data.xs]))
        return real(model, w, fwd, data, *args, **kw)

    monkeypatch.setattr(E, "_train_window", spy)
    return seen


def _dense_inputs(model, calib, batch_size):
    """The dense model's input of every block, block half and linear, by hooks, per batch."""
    got = {}
    prefix, blocks = decoder_blocks(model)
    hooks = []
    for i, blk in enumerate(blocks):
        def pre(_m, args, kwargs, i=i):
            got.setdefault(f"blocks {i}", []).append((args[0] if args else kwargs["hidden_states"]).clone())
        hooks.append(blk.register_forward_pre_hook(pre, with_kwargs=True))
        hooks.append(blk.input_layernorm.register_forward_pre_hook(
            lambda _m, a, i=i: got.setdefault(f"block {i} attn", []).append(a[0].clone())))
        hooks.append(blk.post_attention_layernorm.register_forward_pre_hook(
            lambda _m, a, i=i: got.setdefault(f"block {i} mlp", []).append(a[0].clone())))
        for n, m in blk.named_modules():
            if isinstance(m, nn.Linear):
                hooks.append(m.register_forward_pre_hook(
                    lambda _m, a, k=f"{prefix}.{i}.{n}": got.setdefault(k, []).append(a[0].clone())))
    with torch.no_grad():
        for ids in calib.batches(batch_size):
            model(input_ids=ids)
    for h in hooks:
        h.remove()
    return got


@pytest.mark.parametrize("window", ["block", "attn_mlp", "matrix"])
def test_dense_inputs_are_the_dense_models_hidden_states_bit_for_bit(decoder_kind, calib, window, monkeypatch):
    model = make_decoder(decoder_kind)
    want = _dense_inputs(copy.deepcopy(model), calib, 4)
    masks = magnitude(model, sparsity=0.5, inplace=False)
    seen = _spy(monkeypatch)
    reconstruct(model, calib, masks, window=window, inputs="dense", epochs=1, lr=1e-3, batch_size=4)
    assert len(seen) == len(windows(model, window))
    for name, xs in seen:
        assert len(xs) == len(want[name])
        for a, b in zip(xs, want[name]):
            assert torch.equal(a, b), name


def test_sparse_inputs_follow_the_reconstructed_model(calib, monkeypatch):
    model = make_decoder("tiny")
    masks = magnitude(model, sparsity=0.5, inplace=False)
    seen = _spy(monkeypatch)
    reconstruct(model, calib, masks, window="block", inputs="sparse", epochs=1, lr=1e-3, batch_size=4)
    want = _dense_inputs(model, calib, 4)  # the final, pruned and reconstructed model
    for name, xs in seen:
        for a, b in zip(xs, want[name]):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-6)
    dense_want = _dense_inputs(make_decoder("tiny"), calib, 4)
    assert not torch.equal(seen[-1][1][0], dense_want[seen[-1][0]][0])


@pytest.mark.parametrize("peft", [None, LoRA(r=2, alpha=4)])
@pytest.mark.parametrize("window", ["block", "attn_mlp", "matrix"])
def test_masks_never_change_and_window_loss_drops(calib, window, peft):
    model = make_decoder("tiny")
    masks = wanda(copy.deepcopy(model), calib, pattern=NM(2, 4))
    val = calib  # (held-out behaviour is checked on real text in test_reconstruct_on_tiny_text)
    rep = reconstruct(model, calib, masks, window=window, epochs=3, lr=3e-3, batch_size=2, weight_decay=0.1,
                      validation=val, peft=peft)
    for n, lin in block_linears(model).items():
        assert type(lin) is nn.Linear
        assert bool((lin.weight[~masks[n]] == 0).all()), n  # exactly 0.0 where pruned
    assert len(rep.windows) == len(windows(model, window))
    before = [w.loss_before for w in rep.windows]
    after = [w.loss_after for w in rep.windows]
    assert all(a <= b * (1 + 1e-6) for a, b in zip(after, before))
    assert sum(a < b for a, b in zip(after, before)) >= 0.9 * len(before)
    assert all(w.steps == 3 * 4 for w in rep.windows)
    assert "loss before" in rep.table()


def test_prune_and_reconstruct_with_no_epochs_is_the_criterion(calib):
    a, b = make_decoder("tiny"), make_decoder("tiny")
    rep = prune_and_reconstruct(a, calib, criterion="wanda", sparsity=0.5, epochs=0, batch_size=4)
    masks = wanda(b, calib, sparsity=0.5, batch_size=4)
    assert all(torch.equal(rep.masks[n], masks[n]) for n in masks)
    for x, y in zip(a.state_dict().values(), b.state_dict().values()):
        assert torch.equal(x, y)


def test_reconstruction_is_deterministic(calib):
    runs = []
    for _ in range(2):
        m = make_decoder("tiny")
        prune_and_reconstruct(m, calib, criterion="magnitude", sparsity=0.5, window="attn_mlp", epochs=1,
                              batch_size=4, seed=7)
        runs.append(m.state_dict())
    for k in runs[0]:
        assert torch.equal(runs[0][k], runs[1][k]), k


def test_retrain_keeps_masks_and_lowers_the_loss(calib):
    model = make_decoder("tiny")
    masks = magnitude(model, sparsity=0.5, inplace=False)
    losses = retrain(model, calib, masks, epochs=4, lr=3e-3, batch_size=4, weight_decay=0.1)
    assert losses[-1] < losses[0]
    for n, lin in block_linears(model).items():
        assert type(lin) is nn.Linear
        assert bool((lin.weight[~masks[n]] == 0).all())


def test_bad_reconstruction_arguments(calib):
    model = make_decoder("tiny")
    masks = magnitude(model, sparsity=0.5, inplace=False)
    with pytest.raises(ValueError, match="window must be one of"):
        reconstruct(model, calib, masks, window="layer")
    with pytest.raises(ValueError, match="inputs must be one of"):
        reconstruct(model, calib, masks, inputs="mixed")
    with pytest.raises(ValueError, match="lr must be a positive float"):
        reconstruct(model, calib, masks, lr=-1.0)
    with pytest.raises(ValueError, match="Blocks"):
        Blocks(0)
    bad = dict(masks)
    n = next(iter(bad))
    bad[n] = bad[n][:, :-1]
    with pytest.raises(ValueError, match="bool tensor of shape"):
        reconstruct(model, calib, bad)
    with pytest.raises(ValueError, match="not linears of the decoder"):
        reconstruct(model, calib, {"lm_head": torch.ones(64, 32, dtype=torch.bool)})
    with pytest.raises(ValueError, match="criterion must be one of"):
        prune_and_reconstruct(model, calib, criterion="random", sparsity=0.5)


def test_dense_reference_model_gives_inputs_and_targets(calib, monkeypatch):
    model = make_decoder("tiny")
    dense = copy.deepcopy(model)
    masks = magnitude(model, sparsity=0.5)  # pruned in place: the model itself no longer knows the dense weights
    want = _dense_inputs(dense, calib, 4)
    seen = _spy(monkeypatch)
    rep = reconstruct(model, calib, masks, window="block", dense=dense, epochs=2, lr=1e-3, batch_size=4)
    for name, xs in seen:
        assert all(torch.equal(a, b) for a, b in zip(xs, want[name])), name
    assert all(w.loss_after < w.loss_before for w in rep.windows)
    for a, b in zip(dense.state_dict().values(), make_decoder("tiny").state_dict().values()):
        assert torch.equal(a, b)  # the reference is not touched
