"""FreqWindowAttention / use_freq_bias without timm: the explicit Swin window-attention formula, gradients into the
spectrum, the Triton path inside the module, set_window_size, conversion of a hand-written Swin attention, errors.
The checks inside a real timm SwinTransformer are in test_timm_peer.py."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from fastnips import _backend
from fastnips.vision import SwinRelPosBias, relative_position_index
from fastnips.vision.timm_adapter import FreqWindowAttention, use_freq_bias

torch.set_num_threads(1)


def _mask(nw=4, n=16, seed=0):
    """A random region mask: tokens attend within their region label (0 / -100), every row sees itself."""
    lab = torch.randint(0, 3, (nw, n), generator=torch.Generator().manual_seed(seed))
    return torch.where(lab[:, :, None] == lab[:, None, :], 0.0, -100.0)


def _explicit(attn, x, mask):
    """Swin v1 window attention written out: per window b, softmax(scale q k^T + B + mask[b % nW]) v, heads
    concatenated, then the output projection."""
    B_, N, _ = x.shape
    H = attn.num_heads
    q, k, v = attn.qkv(x).reshape(B_, N, 3, H, -1).permute(2, 0, 3, 1, 4)
    logits = attn.scale * q @ k.transpose(-1, -2) + attn.freq_bias()[None]
    if mask is not None:
        logits = logits + mask.repeat(B_ // mask.shape[0], 1, 1)[:, None]
    return attn.proj((torch.softmax(logits, -1) @ v).transpose(1, 2).reshape(B_, N, -1))


def _module(param="hermitian", backend="reference", dtype=torch.float64, seed=0):
    torch.manual_seed(seed)
    attn = FreqWindowAttention(24, 3, 4, param=param, backend=backend, init_std=0.5).to(dtype)
    return attn


@pytest.mark.parametrize("param", ["hermitian", "separable"])
def test_forward_and_spectrum_gradient_match_explicit(param):
    attn = _module(param)
    x = torch.randn(8, 16, 24, dtype=torch.float64)
    mask = _mask().double()
    out = attn(x, mask=mask)
    want = _explicit(attn, x, mask)
    assert (out - want).abs().max() < 1e-12
    params = list(attn.freq_bias.parameters())
    g = torch.autograd.grad(out.square().sum(), params)
    g_want = torch.autograd.grad(want.square().sum(), params)
    for a, b in zip(g, g_want):
        assert a.abs().max() > 0
        assert (a - b).abs().max() < 1e-10
    assert attn._get_rel_pos_bias().shape == (1, 3, 16, 16)
    assert torch.equal(attn._get_rel_pos_bias()[0], attn.freq_bias())


def test_dropout_path_is_the_same_math():
    """attn_drop > 0 in training runs the unfused formula; with p tiny it must equal the fused call."""
    attn = _module()
    attn.attn_drop = nn.Dropout(1e-12)
    x, mask = torch.randn(8, 16, 24, dtype=torch.float64), _mask().double()
    attn.train()
    a = attn(x, mask=mask)
    attn.eval()
    assert (a - attn(x, mask=mask)).abs().max() < 1e-9


def test_triton_inside_the_module():
    why = _backend.why_unavailable("triton")
    if why:
        pytest.skip(f"triton not available: {why}")
    ref = _module(backend="reference", dtype=torch.float32)
    tri = _module(backend="triton", dtype=torch.float32)
    tri.load_state_dict(ref.state_dict())
    x, mask = torch.randn(8, 16, 24), _mask()
    outs = [m(x, mask=mask) for m in (ref, tri)]
    assert (outs[0] - outs[1]).abs().max() < 1e-5
    grads = [torch.autograd.grad(o.square().sum(), list(m.freq_bias.parameters())) for o, m in zip(outs, (ref, tri))]
    for a, b in zip(*grads):
        assert (a - b).abs().max() < 1e-4 * max(1.0, b.abs().max().item())


def test_set_window_size_modes():
    attn = _module()
    old = attn.freq_bias
    attn.set_window_size(4)
    assert attn.freq_bias is old  # same window: no-op
    table = old.to_swin_table().detach()
    swin = SwinRelPosBias(3, 4, init_std=0.0).double()
    with torch.no_grad():
        swin.relative_position_bias_table.copy_(table)
    attn.set_window_size((6, 5))  # mode "timm": timm's table resize, imported back losslessly
    assert attn.window_size == (6, 5)
    assert attn.window_area == 30
    want = swin.resize((6, 5)).relative_position_bias_table
    assert (attn.freq_bias.to_swin_table() - want).abs().max() < 1e-12
    assert all(p.requires_grad and p.dtype == torch.float64 for p in attn.freq_bias.parameters())
    assert attn(torch.randn(2, 30, 24, dtype=torch.float64)).shape == (2, 30, 24)
    ext = _module()
    ext.set_window_size(3, mode="extend")  # same kernel on the 7x7 grid
    assert torch.equal(ext.freq_bias.kernel(), old.kernel())


class WindowAttention(nn.Module):
    """A Swin v1 window attention written from the paper (named as timm names it, so use_freq_bias finds it)."""

    def __init__(self, dim, heads, window):
        super().__init__()
        self.window_size, self.num_heads, self.scale = (window, window), heads, (dim // heads) ** -0.5
        self.relative_position_bias_table = nn.Parameter(torch.randn((2 * window - 1) ** 2, heads))
        self.register_buffer("index", relative_position_index(window), persistent=False)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def forward(self, x, mask=None):
        B_, N, _ = x.shape
        q, k, v = self.qkv(x).reshape(B_, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        bias = self.relative_position_bias_table[self.index].permute(2, 0, 1)
        logits = self.scale * q @ k.transpose(-1, -2) + bias
        if mask is not None:
            logits = logits + mask.repeat(B_ // mask.shape[0], 1, 1)[:, None]
        return self.proj((torch.softmax(logits, -1) @ v).transpose(1, 2).reshape(B_, N, -1))


def test_use_freq_bias_converts_losslessly():
    torch.manual_seed(0)
    model = nn.Sequential(WindowAttention(16, 2, 4), nn.Sequential(WindowAttention(16, 2, 4))).double()
    x, mask = torch.randn(8, 16, 16, dtype=torch.float64), _mask().double()
    before = [model[0](x, mask), model[1][0](x, mask)]
    assert use_freq_bias(model) == 2
    assert isinstance(model[0], FreqWindowAttention)
    assert isinstance(model[1][0], FreqWindowAttention)
    assert not any("relative_position_bias_table" in n for n, _ in model.named_parameters())
    after = [model[0](x, mask), model[1][0](x, mask)]
    for a, b in zip(before, after):
        assert (a - b).abs().max() < 1e-12
    with pytest.raises(ValueError, match="no timm Swin v1 WindowAttention"):
        use_freq_bias(model)  # nothing left to convert


def test_use_freq_bias_other_family_trains_from_its_init():
    torch.manual_seed(0)
    model = nn.Sequential(WindowAttention(16, 2, 7))
    assert use_freq_bias(model, param="separable", rank=2) == 1
    assert model[0].freq_bias.param == "separable"
    assert sum(p.numel() for p in model[0].freq_bias.parameters()) == 2 * 52


def test_errors():
    with pytest.raises(ValueError, match="backend"):
        FreqWindowAttention(16, 2, 4, backend="cuda-magic")
    with pytest.raises(ValueError, match="head_dim"):
        FreqWindowAttention(1, 2, 4)
    attn = FreqWindowAttention(16, 2, 4)
    with pytest.raises(ValueError, match=r"\(B\*nW, N, C\)"):
        attn(torch.randn(2, 15, 16))
    with pytest.raises(ValueError, match="dividing the batch"):
        attn(torch.randn(6, 16, 16), mask=_mask(4))
    with pytest.raises(ValueError, match="mode must be one of"):
        attn.set_window_size(5, mode="nearest")
    with pytest.raises(ValueError, match="has no attribute 'qkv'"):
        FreqWindowAttention.from_timm(nn.Linear(2, 2))
    with pytest.raises(ValueError, match=r"torch\.nn\.Module"):
        use_freq_bias("swin")
    with pytest.raises(ValueError, match="no timm Swin v1 WindowAttention"):
        use_freq_bias(nn.Linear(2, 2))
