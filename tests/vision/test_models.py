"""fastnips.vision.blocks and fastnips.vision.models: SpectralMixer vs an explicit circular convolution, the
DDR block's reductions to a GFNet block and to an attention+bias block, gate gradients, windowed attention,
DDRViT shapes and a tiny deterministic training run, gate_report, and bad input.

Tolerances, stated once (float64 throughout the comparisons):

* SpectralMixer vs ``spectral_mix_reference`` (explicit DFT + circular convolution, no torch.fft): 1e-10 abs.
* DDR with gates forced to (1, 0) vs ``branch="spectral"``: bit-identical (sigmoid(±inf) is exactly 1 / 0).
* DDR vs the GFNet / attention blocks written here (own LayerNorm, softmax attention, window loops): 1e-12.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from fastnips.vision.blocks import DDRBlock, GatedAttention, SpectralMixer, spectral_mix_reference  # noqa: E402
from fastnips.vision.freqbias import FreqRelPosBias  # noqa: E402
from fastnips.vision.models import DDRViT, DDRViTConfig, gate_report  # noqa: E402

F64 = torch.float64


class TableBias(nn.Module):
    """A minimal Swin-style relative-position bias: a learned (H, 2Mh-1, 2Mw-1) table gathered by offset.
    Stands in for any bias module (the contract is only: forward() -> (H, N, N))."""

    def __init__(self, num_heads, window):
        super().__init__()
        mh, mw = window
        self.table = nn.Parameter(torch.randn(num_heads, 2 * mh - 1, 2 * mw - 1))
        r, c = torch.meshgrid(torch.arange(mh), torch.arange(mw), indexing="ij")
        r, c = r.flatten(), c.flatten()
        self.register_buffer("dr", r[:, None] - r[None, :] + mh - 1, persistent=False)
        self.register_buffer("dc", c[:, None] - c[None, :] + mw - 1, persistent=False)

    def forward(self):
        return self.table[:, self.dr, self.dc]


class WrongBias(nn.Module):
    def forward(self):
        return torch.zeros(2, 3, 3)


def _randomize(module, seed=0):
    """Nonzero values everywhere (biases and LayerNorm affine too), so a reduction test misses nothing."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith(("gate_spectral", "gate_attention")):
                continue
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.3 + (1.0 if "norm" in name else 0.0))
    return module


# --------------------------------------------------------------------------------------------------
# written-out reference blocks


def _ln(x, norm):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + norm.eps) * norm.weight + norm.bias


def _mlp(x, mlp):
    return mlp.fc2(torch.nn.functional.gelu(mlp.fc1(x)))


def gfnet_block(x, blk):
    """y = x + irfft2(rfft2(LN x) * W) ; out = y + MLP(LN y)."""
    B, N, C = x.shape
    h, w = blk.grid
    u = _ln(x, blk.norm1).reshape(B, h, w, C)
    W = torch.complex(blk.spectral.complex_weight[..., 0], blk.spectral.complex_weight[..., 1])
    s = torch.fft.irfft2(torch.fft.rfft2(u, dim=(1, 2), norm="ortho") * W, s=(h, w), dim=(1, 2), norm="ortho")
    y = x + s.reshape(B, N, C)
    return y + _mlp(_ln(y, blk.norm2), blk.mlp)


def attention_block(x, blk):
    """y = x + W_o[softmax(q k^T / sqrt(d) + B) v * sigmoid(W_g u)] per window (explicit loops) ; MLP residual."""
    C = x.shape[-1]
    h, w = blk.grid
    mh, mw = blk.window
    at = blk.attn
    H, dh = at.num_heads, at.head_dim
    bias = at.bias() if at.bias is not None else torch.zeros(H, mh * mw, mh * mw, dtype=x.dtype)
    u = _ln(x, blk.norm1)
    out = torch.zeros_like(x)
    for wr in range(h // mh):
        for wc in range(w // mw):
            idx = torch.tensor([(wr * mh + i) * w + (wc * mw + j) for i in range(mh) for j in range(mw)])
            uw = u[:, idx]  # (B, n, C)
            qkv = at.qkv(uw)
            q, k, v = qkv[..., :C], qkv[..., C : 2 * C], qkv[..., 2 * C :]
            heads = []
            for hh in range(H):
                sl = slice(hh * dh, (hh + 1) * dh)
                logits = q[..., sl] @ k[..., sl].transpose(-1, -2) / math.sqrt(dh) + bias[hh]
                heads.append(torch.softmax(logits, dim=-1) @ v[..., sl])
            o = torch.cat(heads, dim=-1) * torch.sigmoid(at.gate(uw))
            out[:, idx] = at.proj(o)
    y = x + out
    return y + _mlp(_ln(y, blk.norm2), blk.mlp)


# --------------------------------------------------------------------------------------------------
# spectral mixer


@pytest.mark.parametrize("grid", [(4, 4), (5, 6), (3, 5), (6, 4), (7, 7), (1, 4)])
def test_spectral_mixer_equals_circular_convolution(grid):
    torch.manual_seed(0)
    C = 3
    mix = SpectralMixer(C, grid).double()
    with torch.no_grad():  # a generic complex weight (not Hermitian-consistent on the self-mirrored columns)
        mix.complex_weight.normal_()
    x = torch.randn(2, grid[0] * grid[1], C, dtype=F64)
    got = mix(x)
    want = spectral_mix_reference(x, mix.complex_weight.detach(), grid)
    assert got.shape == x.shape
    torch.testing.assert_close(got, want, atol=1e-10, rtol=0)


def test_spectral_mixer_gfnet_layout_and_init():
    torch.manual_seed(0)
    mix = SpectralMixer(8, (7, 6))
    assert tuple(mix.complex_weight.shape) == (7, 4, 8, 2)
    assert 0.01 < mix.complex_weight.std().item() < 0.03  # randn * 0.02
    x = torch.randn(3, 42, 8)
    assert mix(x).dtype == torch.float32
    assert mix(x.to(torch.bfloat16)).dtype == torch.bfloat16


def test_spectral_mixer_is_translation_equivariant():
    torch.manual_seed(1)
    mix = SpectralMixer(2, (4, 5)).double()
    x = torch.randn(1, 20, 2, dtype=F64)
    shifted = torch.roll(x.reshape(1, 4, 5, 2), shifts=(1, 2), dims=(1, 2)).reshape(1, 20, 2)
    want = torch.roll(mix(x).reshape(1, 4, 5, 2), shifts=(1, 2), dims=(1, 2)).reshape(1, 20, 2)
    torch.testing.assert_close(mix(shifted), want, atol=1e-12, rtol=0)


# --------------------------------------------------------------------------------------------------
# DDR block reductions and gates


def test_ddr_attention_gate_off_is_gfnet_block():
    torch.manual_seed(0)
    grid = (4, 5)
    blk = _randomize(DDRBlock(6, grid, num_heads=2, bias=TableBias(2, grid)).double())
    blk.set_gates(spectral=1.0, attention=0.0)
    assert [float(g.detach()) for g in blk.gates()] == [1.0, 0.0]
    x = torch.randn(3, 20, 6, dtype=F64)
    got = blk(x)
    torch.testing.assert_close(got, gfnet_block(x, blk), atol=1e-12, rtol=0)
    # and bit-identical to the single-branch GFNet block with the same weights
    gf = DDRBlock(6, grid, branch="spectral").double()
    missing, unexpected = gf.load_state_dict(blk.state_dict(), strict=False)
    assert missing == []
    assert all(k.startswith("attn.") or k.startswith("gate_") for k in unexpected)
    assert gf.attn is None
    assert torch.equal(gf(x), got)


@pytest.mark.parametrize(("grid", "window", "heads"), [((4, 4), None, 2), ((4, 6), (2, 3), 3), ((3, 3), None, 1)])
def test_ddr_spectral_gate_off_is_attention_bias_block(grid, window, heads):
    torch.manual_seed(0)
    win = grid if window is None else window
    blk = _randomize(DDRBlock(6, grid, num_heads=heads, bias=TableBias(heads, win), window=window).double())
    blk.set_gates(spectral=0.0, attention=1.0)
    x = torch.randn(2, grid[0] * grid[1], 6, dtype=F64)
    got = blk(x)
    torch.testing.assert_close(got, attention_block(x, blk), atol=1e-12, rtol=0)
    ab = DDRBlock(6, grid, num_heads=heads, bias=TableBias(heads, win), window=window, branch="attention").double()
    missing, _ = ab.load_state_dict(blk.state_dict(), strict=False)
    assert missing == []
    assert torch.equal(ab(x), got)


def test_ddr_without_bias_and_partial_gates():
    torch.manual_seed(0)
    blk = _randomize(DDRBlock(4, (3, 3), bias=None).double())
    x = torch.randn(2, 9, 4, dtype=F64)
    blk.set_gates(spectral=1.0, attention=0.0)
    gf = gfnet_block(x, blk)
    blk.set_gates(spectral=0.0, attention=1.0)
    at = attention_block(x, blk)
    blk.set_gates(spectral=0.25, attention=0.5)
    torch.testing.assert_close(blk.gates()[0], torch.tensor(0.25, dtype=F64))
    # out = y + MLP(LN y) is nonlinear in y, so check the residual stream y itself through the branches
    u = _ln(x, blk.norm1)
    y = x + 0.25 * blk.spectral(u) + 0.5 * blk.attn(u, grid=(3, 3))
    torch.testing.assert_close(blk(x), y + _mlp(_ln(y, blk.norm2), blk.mlp), atol=1e-12, rtol=0)
    assert not torch.allclose(gf, at)


def test_gates_start_at_half_and_get_gradients():
    torch.manual_seed(0)
    blk = DDRBlock(8, (4, 4), num_heads=2, bias=TableBias(2, (4, 4)))
    assert [float(g.detach()) for g in blk.gates()] == [0.5, 0.5]
    assert blk.gate_spectral.shape == ()
    assert blk.gate_attention.shape == ()
    blk(torch.randn(2, 16, 8)).square().mean().backward()
    for p in (blk.gate_spectral, blk.gate_attention, blk.attn.bias.table, blk.spectral.complex_weight):
        assert p.grad is not None
        assert torch.isfinite(p.grad).all()
        assert p.grad.abs().sum() > 0


def test_windowed_attention_matches_separate_windows():
    torch.manual_seed(0)
    att = GatedAttention(4, 2, (2, 2), bias=TableBias(2, (2, 2))).double()
    x = torch.randn(1, 16, 4, dtype=F64)  # a 4x4 grid = 2x2 windows of 2x2
    got = att(x, grid=(4, 4))
    for wr in range(2):
        for wc in range(2):
            idx = torch.tensor([(2 * wr + i) * 4 + 2 * wc + j for i in range(2) for j in range(2)])
            torch.testing.assert_close(got[:, idx], att(x[:, idx]), atol=1e-13, rtol=0)


# --------------------------------------------------------------------------------------------------
# DDRViT


def _bias_kinds():
    return [None, "freq", "swin"]


@pytest.mark.parametrize("bias", _bias_kinds())
@pytest.mark.parametrize(("img", "patch", "ctor"), [(28, 4, "tiny"), (8, 1, "tiny"), (8, 2, "small")])
def test_ddrvit_forward_backward_shapes(bias, img, patch, ctor):
    torch.manual_seed(0)
    net = getattr(DDRViT, ctor)(img_size=img, patch=patch, bias=bias, num_classes=7)
    g = img // patch
    assert net.grid == (g, g)
    x = torch.rand(3, 1, img, img)
    feats = net.forward_features(x)
    assert feats.shape == (3, g * g, net.num_features)
    out = net(x)
    assert out.shape == (3, 7)
    out.sum().backward()
    for name, p in net.named_parameters():
        assert p.grad is not None, name
        assert torch.isfinite(p.grad).all(), name


def test_ddrvit_config_overrides_and_timm_hooks():
    net = DDRViT.tiny(img_size=8, patch=2, bias=None, pos_embed="learned")
    assert net.config == DDRViTConfig(img_size=8, patch=2, dim=32, depth=2, num_heads=1, bias=None,
                                      pos_embed="learned")
    assert len(net.blocks) == 2
    assert net.pos_embed.shape == (1, 16, 32)
    assert net.no_weight_decay() == {"pos_embed", "blocks.0.gate_spectral", "blocks.0.gate_attention",
                                     "blocks.1.gate_spectral", "blocks.1.gate_attention"}
    net.reset_classifier(0)
    assert net(torch.rand(2, 1, 8, 8)).shape == (2, 32)
    cfg = DDRViTConfig(img_size=8, patch=1, depth=1, bias=None, branch="spectral")
    net2 = DDRViT(config=cfg, num_classes=3)
    assert net2.config.num_classes == 3
    assert net2.blocks[0].branch == "spectral"
    assert net2(torch.rand(1, 1, 8, 8)).shape == (1, 3)
    small = DDRViT.small(bias=None)
    assert (small.config.dim, small.config.depth, small.config.num_heads) == (64, 4, 2)


def test_ddrvit_windowed_grid_larger_than_window():
    net = DDRViT(img_size=8, patch=1, dim=8, depth=1, num_heads=2, bias=None, window=4)
    assert net.blocks[0].window == (4, 4)
    assert net.blocks[0].spectral.grid == (8, 8)
    assert net(torch.rand(2, 1, 8, 8)).shape == (2, 10)
    with pytest.raises(ValueError, match="not a multiple of the attention window"):
        DDRViT(img_size=8, patch=1, dim=8, depth=1, bias=None, window=3)


def _train_digits(seed, bias, steps=30):
    from fastnips.data.images import digits

    X, y = digits("train", seed=0)
    X, y = torch.from_numpy(X[:128]), torch.from_numpy(y[:128])
    torch.manual_seed(seed)
    net = DDRViT.tiny(img_size=8, patch=2, dim=16, depth=1, bias=bias)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(X), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return net, losses


@pytest.mark.parametrize("bias", [None, "freq"])
def test_training_smoke_on_digits_is_deterministic(bias):
    pytest.importorskip("sklearn")
    net, losses = _train_digits(0, bias)
    assert all(np.isfinite(losses))
    assert losses[-1] < 0.9 * losses[0]  # about 2.30 -> 1.9 in 30 full-batch Adam steps (lr 1e-2, 128 images)
    _, again = _train_digits(0, bias)
    assert again == losses
    report = gate_report(net)
    assert len(report) == 1
    assert report[0]["spectral_gate"] != 0.5 or report[0]["attention_gate"] != 0.5  # the gates were trained


# --------------------------------------------------------------------------------------------------
# gate_report


def test_gate_report_reads_gates():
    net = DDRViT(img_size=8, patch=2, dim=8, depth=3, bias=None)
    net.blocks[0].set_gates(spectral=0.9, attention=0.2)
    net.blocks[1].set_gates(spectral=0.1, attention=0.7)
    rep = gate_report(net)
    assert isinstance(rep, list)
    assert [r["block"] for r in rep] == ["blocks.0", "blocks.1", "blocks.2"]
    assert rep[0]["spectral_gate"] == pytest.approx(0.9)
    assert rep[0]["attention_gate"] == pytest.approx(0.2)
    assert [r["leaning"] for r in rep] == ["spectral", "attention", "balanced"]
    assert set(rep[0]) == {"block", "spectral_gate", "attention_gate", "leaning"}
    text = str(rep)
    lines = text.splitlines()
    assert len(lines) == 5
    assert "blocks.1" in lines[3]
    assert "0.7000" in lines[3]
    single = DDRBlock(4, (2, 2), bias=None, branch="attention")
    assert gate_report(single)[0] == {"block": "", "spectral_gate": 0.0, "attention_gate": 1.0,
                                      "leaning": "attention"}
    with pytest.raises(ValueError, match="no DDRBlock"):
        gate_report(nn.Linear(2, 2))


# --------------------------------------------------------------------------------------------------
# bad input


def test_bad_input_raises_clear_errors():
    with pytest.raises(ValueError, match="not divisible by num_heads"):
        DDRBlock(10, (4, 4), num_heads=3, bias=None)
    with pytest.raises(ValueError, match="not divisible by num_heads"):
        GatedAttention(10, 4, (2, 2))
    with pytest.raises(ValueError, match="not divisible by num_heads"):
        DDRViT(dim=10, num_heads=3, bias=None)
    with pytest.raises(ValueError, match="unknown bias kind 'alibi'"):
        DDRBlock(8, (4, 4), bias="alibi")
    with pytest.raises(ValueError, match="unknown bias kind"):
        DDRViT(bias="rope")
    with pytest.raises(ValueError, match=r"nn\.Module"):
        GatedAttention(8, 2, (2, 2), bias=torch.zeros(2, 4, 4))
    with pytest.raises(ValueError, match=r"expected \(num_heads, N, N\)"):
        GatedAttention(8, 2, (2, 2), bias=WrongBias())
    with pytest.raises(ValueError, match="unknown branch"):
        DDRBlock(8, (4, 4), bias=None, branch="spectra")
    with pytest.raises(ValueError, match="unknown pos_embed"):
        DDRViT(bias=None, pos_embed="sincos")
    with pytest.raises(ValueError, match="not a multiple of patch"):
        DDRViT(img_size=28, patch=5, bias=None)
    with pytest.raises(ValueError, match="config must be a DDRViTConfig"):
        DDRViT(config={"dim": 8})
    with pytest.raises(ValueError, match="grid"):
        SpectralMixer(4, (0, 3))
    with pytest.raises(ValueError, match="set_gates"):
        DDRBlock(4, (2, 2), bias=None, branch="spectral").set_gates(spectral=1.0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        DDRBlock(4, (2, 2), bias=None).set_gates(attention=1.5)


def test_grid_mismatch_raises():
    blk = DDRBlock(4, (3, 3), bias=None)
    with pytest.raises(ValueError, match="do not match the grid 3x3"):
        blk(torch.randn(1, 16, 4))
    with pytest.raises(ValueError, match="channels"):
        blk(torch.randn(1, 9, 5))
    with pytest.raises(ValueError, match=r"\(B, h\*w, C\)"):
        SpectralMixer(4, (3, 3))(torch.randn(9, 4))
    att = GatedAttention(4, 1, (2, 2))
    with pytest.raises(ValueError, match="pass grid"):
        att(torch.randn(1, 9, 4))
    with pytest.raises(ValueError, match="not a multiple of the window"):
        att(torch.randn(1, 9, 4), grid=(3, 3))
    with pytest.raises(ValueError, match="expected images of shape"):
        DDRViT.tiny(bias=None)(torch.rand(2, 1, 32, 32))


def test_ddrvit_bias_kwargs_and_bias_module():
    net = DDRViT.tiny(img_size=8, patch=2, bias="freq", bias_kwargs={"param": "separable", "rank": 2})
    assert all(b.attn.bias.param == "separable" and b.attn.bias.rank == 2 for b in net.blocks)
    assert net.config.bias_kwargs == {"param": "separable", "rank": 2}
    assert DDRViT(config=net.config, bias=None).config.bias_kwargs is None  # a new kind drops the old kwargs
    proto = FreqRelPosBias(1, (4, 4), param="separable", rank=1)
    net2 = DDRViT.tiny(img_size=8, patch=2, bias=proto)
    b0, b1 = net2.blocks[0].attn.bias, net2.blocks[1].attn.bias
    assert b0 is not proto  # copied into every block, not shared
    assert b0 is not b1
    assert b0.rank == 1
    assert net2(torch.rand(2, 1, 8, 8)).shape == (2, 10)
    assert DDRViT.tiny(img_size=8, patch=2).config.pos_embed == "learned"  # defaults: learned position, xavier
    assert DDRViT.tiny(img_size=8, patch=2, weight_init="trunc_normal").head.weight.std() < 0.03
    with pytest.raises(ValueError, match="bias_kwargs"):
        DDRViT.tiny(bias=None, bias_kwargs={"rank": 2})
    with pytest.raises(ValueError, match="unknown weight_init"):
        DDRViT.tiny(weight_init="kaiming")


@pytest.mark.parametrize("name", ["DDRBlock", "GatedAttention", "SpectralMixer", "spectral_mix_reference"])
def test_blocks_old_import_path_warns(name):
    import fastnips.vision.blocks as blocks
    import fastnips.vision.models as models

    with pytest.warns(DeprecationWarning, match="moved to fastnips.vision.blocks"):
        assert getattr(models, name) is getattr(blocks, name)
    with pytest.raises(AttributeError):
        models.no_such_name  # noqa: B018
