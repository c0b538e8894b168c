"""GPT-2 family models, whose linears are transformers' Conv1D (weight stored (in, out)): a tiny randomly
initialised GPT2LMHeadModel (no download). Pruning it equals pruning a twin whose Conv1D layers were replaced
here, by hand, with nn.Linear holding the transposed weights; masks come back in the Conv1D's own shape with
exact counts along its input dimension; the modules stay Conv1D."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from fastnips.prune import NM, Calibration, magnitude, prune_and_reconstruct, sparsegpt, wanda  # noqa: E402
from fastnips.prune.criteria import block_linears  # noqa: E402

NAMES = ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")


@pytest.fixture(scope="module")
def gpt2():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=64, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                                  bos_token_id=0, eos_token_id=0)
    model = transformers.GPT2LMHeadModel(cfg).eval()
    ids = torch.randint(0, 64, (4000,), generator=torch.Generator().manual_seed(1))
    return model, Calibration.from_token_ids(ids, seqlen=32, n=8, seed=0), ids[:64].reshape(2, 32)


def linear_twin(model):
    """A copy with every Conv1D replaced by nn.Linear(W^T, b), written independently of fastnips."""
    twin = copy.deepcopy(model)
    for blk in twin.transformer.h:
        for name in NAMES:
            parent, attr = name.split(".")
            conv = getattr(getattr(blk, parent), attr)
            lin = torch.nn.Linear(conv.weight.shape[0], conv.weight.shape[1])
            with torch.no_grad():
                lin.weight.copy_(conv.weight.t())
                lin.bias.copy_(conv.bias)
            setattr(getattr(blk, parent), attr, lin)
    return twin


def test_conv1d_layers_are_found(gpt2):
    model, _, _ = gpt2
    lin = block_linears(model)
    assert sorted(lin) == sorted(f"transformer.h.{i}.{n}" for i in range(2) for n in NAMES)
    assert all(type(m).__name__ == "Conv1D" for m in lin.values())


@pytest.mark.parametrize("spec", [dict(sparsity=0.5), dict(sparsity=0.5, scope="row"), dict(pattern=NM(2, 4))],
                         ids=["block", "row", "2:4"])
def test_sparsegpt_on_conv1d_equals_the_linear_twin(gpt2, spec):
    model, calib, ids = gpt2
    a, b = copy.deepcopy(model), linear_twin(model)
    ma = sparsegpt(a, calib, batch_size=4, **spec)
    mb = sparsegpt(b, calib, batch_size=4, **spec)
    for i in range(2):
        for n in NAMES:
            q = f"transformer.h.{i}.{n}"
            conv, lin = a.get_submodule(q), b.get_submodule(q)
            assert type(conv).__name__ == "Conv1D"
            assert ma[q].shape == conv.weight.shape
            assert torch.equal(ma[q], mb[q].t())
            torch.testing.assert_close(conv.weight, lin.weight.t(), rtol=0, atol=1e-6)
            assert bool((conv.weight[~ma[q]] == 0).all())
    with torch.no_grad():
        torch.testing.assert_close(a(ids).logits, b(ids).logits, rtol=0, atol=1e-5)


def test_wanda_and_magnitude_count_along_the_conv1d_input_dimension(gpt2):
    model, calib, _ = gpt2
    for run in (lambda m: wanda(m, calib, sparsity=0.5, batch_size=4), lambda m: magnitude(m, sparsity=0.5)):
        m = copy.deepcopy(model)
        masks = run(m)
        for q, mod in block_linears(m).items():
            d_in = mod.weight.shape[0]  # Conv1D: (in, out); every output feature prunes half its inputs
            assert ((~masks[q]).sum(dim=0) == d_in // 2).all(), q
            assert torch.equal(mod.weight == 0, ~masks[q] | (model.get_submodule(q).weight == 0))


def test_prune_and_reconstruct_keeps_conv1d_and_the_masks(gpt2):
    model, calib, _ = gpt2
    m = copy.deepcopy(model)
    rep = prune_and_reconstruct(m, calib, criterion="wanda", sparsity=0.5, window="block", epochs=1, lr=1e-3,
                                batch_size=4)
    assert all(w.loss_after <= w.loss_before for w in rep.windows)
    for q, mod in block_linears(m).items():
        assert type(mod).__name__ == "Conv1D"
        assert bool((mod.weight[~rep.masks[q]] == 0).all())
        assert float((mod.weight == 0).float().mean()) >= 0.5
