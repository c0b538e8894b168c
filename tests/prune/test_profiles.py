"""fastnips.prune.profiles: layer selection (include / ignore / overrides), per-layer targets applied by the
criteria (unnamed linears untouched bit for bit, named ones at their exact counts), and OWL's allocation against
an oracle computed here from plain forward hooks on the dense model (Yin et al., arXiv 2310.05175)."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")

from fastnips.prune import NM, magnitude, sparsegpt, wanda  # noqa: E402
from fastnips.prune.criteria import block_linears  # noqa: E402
from fastnips.prune.profiles import layer_profile, owl_profile  # noqa: E402

from .conftest import make_decoder  # noqa: E402


def test_layer_profile_selects_and_overrides():
    model = make_decoder("tiny")
    p = layer_profile(model, 0.5, include="model.layers.*", ignore=["*.k_proj", "*.v_proj"],
                      overrides={"model.layers.1.*": 0.7, "*.down_proj": NM(2, 4)})
    names = list(block_linears(model))
    assert set(p) == {n for n in names if not n.endswith(("k_proj", "v_proj"))}
    assert p["model.layers.0.self_attn.q_proj"] == 0.5
    assert p["model.layers.1.self_attn.o_proj"] == 0.7
    assert p["model.layers.1.mlp.down_proj"] == NM(2, 4)  # the last matching override wins
    with pytest.raises(ValueError, match=r"ignore pattern '\*\.qproj' matches no linear"):
        layer_profile(model, 0.5, ignore="*.qproj")
    with pytest.raises(ValueError, match=r"per_layer\['x'\] must be a sparsity"):
        layer_profile(model, 0.5, overrides={"x": 1.5})


@pytest.mark.parametrize("criterion", ["magnitude", "wanda", "sparsegpt"])
def test_per_layer_targets_are_applied_and_the_rest_is_untouched(criterion, calib):
    model = make_decoder("tiny")
    before = {n: m.weight.detach().clone() for n, m in block_linears(model).items()}
    p = layer_profile(model, 0.5, ignore="*.self_attn.*", overrides={"*.up_proj": 0.25, "*.gate_proj": NM(1, 4)})
    run = {"magnitude": lambda: magnitude(model, per_layer=p),
           "wanda": lambda: wanda(model, calib, per_layer=p, batch_size=4),
           "sparsegpt": lambda: sparsegpt(model, calib, per_layer=p, scope="row", batch_size=4)}[criterion]
    masks = run()
    for n, m in block_linears(model).items():
        w = m.weight.detach()
        if n not in p:
            assert torch.equal(w, before[n]), n  # not selected: bit for bit unchanged
            assert bool(masks[n].all())
            continue
        target = p[n]
        if isinstance(target, NM):
            assert bool(((~masks[n]).reshape(w.shape[0], -1, 4).sum(-1) == 3).all()), n
        else:
            assert bool(((~masks[n]).sum(dim=1) == int(target * w.shape[1])).all()), n
        assert bool((w[~masks[n]] == 0).all())


def test_per_layer_refuses_unknown_names_and_mixing(calib):
    model = make_decoder("tiny")
    with pytest.raises(ValueError, match="not linears of the decoder blocks"):
        wanda(model, calib, per_layer={"model.layers.0.mlp.nope": 0.5})
    with pytest.raises(ValueError, match="per_layer or sparsity/pattern, not both"):
        magnitude(model, sparsity=0.5, per_layer={"model.layers.0.mlp.up_proj": 0.5})


def owl_oracle(model, calib, s, lam, m):
    """Outlier ratios from one dense forward with plain hooks (inputs of every linear), then OWL's formula."""
    lin = block_linears(model)
    sq = {n: torch.zeros(mod.weight.shape[1], dtype=torch.float64) for n, mod in lin.items()}
    def hook(n):
        def record(_mod, inp, _out):  # returns None: a returned value would replace the output
            sq[n].add_(inp[0].detach().reshape(-1, inp[0].shape[-1]).double().square().sum(0))

        return record

    hooks = [mod.register_forward_hook(hook(n)) for n, mod in lin.items()]
    with torch.no_grad():
        for ids in calib.batches(4):
            model(input_ids=ids)
    for h in hooks:
        h.remove()
    blocks = sorted({n.split(".")[2] for n in lin}, key=int)
    ratios = []
    for b in blocks:
        sc = torch.cat([(lin[n].weight.detach().double().abs() * sq[n].sqrt()).flatten()
                        for n in lin if n.split(".")[2] == b])
        ratios.append(float((sc > m * sc.mean()).double().mean()))
    D = torch.tensor(ratios, dtype=torch.float64)
    dens = (D - D.min()) * (2 * lam / (D.max() - D.min()))
    dens = dens - dens.mean() + (1 - s)
    return {n: 1 - float(dens[blocks.index(n.split(".")[2])]) for n in lin}, D


def test_owl_profile_matches_the_oracle(calib):
    model = make_decoder("tiny", layers=4)
    with torch.no_grad():  # give the blocks different outlier shares
        for i, blk in enumerate(model.model.layers):
            blk.mlp.up_proj.weight[:, : 2 * i + 1] *= 8.0
    want, D = owl_oracle(model, calib, 0.6, 0.08, 3.0)
    assert len(set(D.tolist())) > 1
    got = owl_profile(model, calib, 0.6, lam=0.08, m=3.0, batch_size=4)
    assert set(got) == set(want)
    for n in want:
        assert got[n] == pytest.approx(want[n], abs=1e-6), n
    per_block = [got[f"model.layers.{i}.mlp.up_proj"] for i in range(4)]
    assert max(per_block) - min(per_block) == pytest.approx(0.16, abs=1e-9)  # 2 lambda
    assert sum(per_block) / 4 == pytest.approx(0.6, abs=1e-9)  # the mean is the target
    masks = wanda(copy.deepcopy(model), calib, per_layer=got, batch_size=4)
    n = "model.layers.0.mlp.up_proj"
    assert int((~masks[n]).sum(dim=1)[0]) == int(got[n] * 32)
