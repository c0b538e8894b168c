"""Against timm's own code (skipped where timm does not import): SwinRelPosBias.resize vs timm's
resize_rel_pos_bias_table / WindowAttention.set_window_size, and use_freq_bias inside a real timm SwinTransformer
(tiny config, random init, no downloads): same function with shifted windows, the spectrum's gradient through
timm's own forward, training, set_input_size, and the Triton path."""

from __future__ import annotations

import copy

import pytest
import torch

from fastnips import _backend
from fastnips.vision import SwinRelPosBias
from fastnips.vision.timm_adapter import FreqWindowAttention, use_freq_bias

torch.set_num_threads(1)
pytestmark = [  # timm's own interpolation helper triggers these torch warnings
    pytest.mark.filterwarnings("ignore:torch.searchsorted"),
    pytest.mark.filterwarnings("ignore:Using a non-tuple sequence for multidimensional indexing"),
]


def _timm():
    try:
        from timm.layers import resize_rel_pos_bias_table, resize_rel_pos_bias_table_simple
        from timm.models import swin_transformer
    except Exception as e:  # timm imports torchvision, whose CUDA wheel fails to load its ops with the CPU torch
        pytest.skip(f"timm does not import here ({type(e).__name__}: {e})")
    return swin_transformer, resize_rel_pos_bias_table, resize_rel_pos_bias_table_simple


def _tiny(dtype=torch.float64, seed=0):
    """A small Swin v1: 16x16 then 8x8 tokens, window 4 (16 then 4 windows), shifted blocks in both stages."""
    swin, _, _ = _timm()
    torch.manual_seed(seed)
    model = swin.SwinTransformer(img_size=32, patch_size=2, window_size=4, embed_dim=16, depths=(2, 2),
                                 num_heads=(2, 4), num_classes=5).to(dtype).eval()
    with torch.no_grad():  # tables of std 1 (timm's init is std 0.02), so the bias matters in the comparison
        for name, p in model.named_parameters():
            if name.endswith("relative_position_bias_table"):
                p.normal_()
    return model


@pytest.mark.parametrize(("old", "new"), [(7, 14), (7, 12), ((3, 5), (6, 4)), (7, 4), (1, 3), (2, 7), (12, 24)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_resize_equals_timm(old, new, dtype):
    _, resize, resize_simple = _timm()
    s = SwinRelPosBias(3, old, init_std=0.0).to(dtype)
    with torch.no_grad():
        s.relative_position_bias_table.normal_(generator=torch.Generator().manual_seed(1))
    nw = (new, new) if isinstance(new, int) else new
    shape = ((2 * nw[0] - 1) * (2 * nw[1] - 1), 3)
    table = s.relative_position_bias_table.detach()
    want = resize(table, nw, shape, old_window_size=s.window)
    # timm interpolates in float32 whatever the dtype: agreement to float32 round-off of |table| <~ 4
    assert (s.resize(nw).relative_position_bias_table - want).abs().max() < 4e-6
    simple = resize_simple(table, nw, shape) if s.window[0] == s.window[1] else None  # square sources only
    if simple is not None:
        assert (s.resize(nw, mode="bicubic").relative_position_bias_table - simple).abs().max() < 1e-6


def test_resize_equals_timm_set_window_size():
    swin, _, _ = _timm()
    attn = swin.WindowAttention(dim=24, num_heads=3, window_size=7)
    with torch.no_grad():
        attn.relative_position_bias_table.normal_()
    s = SwinRelPosBias(3, 7, init_std=0.0)
    with torch.no_grad():
        s.relative_position_bias_table.copy_(attn.relative_position_bias_table)
    attn.set_window_size((10, 12))
    assert (s.resize((10, 12)).relative_position_bias_table - attn.relative_position_bias_table).abs().max() < 4e-6


def test_converted_swin_is_the_same_function():
    model = _tiny()
    conv = copy.deepcopy(model)
    assert use_freq_bias(conv) == 4
    assert sum(isinstance(m, FreqWindowAttention) for m in conv.modules()) == 4
    shifted = [b for b in conv.modules() if getattr(b, "attn_mask", None) is not None]
    assert len(shifted) == 2  # the mask path is exercised
    x = torch.randn(2, 3, 32, 32, dtype=torch.float64)
    with torch.no_grad():
        a, b = model.forward_features(x), conv.forward_features(x)
    assert (a - b).abs().max() < 1e-10 * a.abs().max()


def test_spectrum_gradient_through_timm_forward():
    """The converted model's gradient in the spectra equals the gradient through timm's own WindowAttention whose
    table is the spectrum's Swin table (a differentiable function of the same parameters)."""
    model = _tiny()
    conv = copy.deepcopy(model)
    use_freq_bias(conv)
    with torch.no_grad():  # move the spectra off the imported tables
        for name, p in conv.named_parameters():
            if ".freq_bias." in name:
                p.add_(0.3 * torch.randn_like(p))
    freq = {n: m for n, m in conv.named_modules() if isinstance(m, FreqWindowAttention)}
    for name, m in model.named_modules():
        if name in freq:
            del m.relative_position_bias_table
            m.relative_position_bias_table = freq[name].freq_bias.to_swin_table()  # non-leaf, tracks the spectrum
    x = torch.randn(2, 3, 32, 32, dtype=torch.float64)
    params = [p for n, p in conv.named_parameters() if ".freq_bias." in n]
    ours = torch.autograd.grad(conv.forward_features(x).square().sum(), params)
    theirs = torch.autograd.grad(model.forward_features(x).square().sum(), params)
    for a, b in zip(ours, theirs):
        assert a.abs().max() > 0
        assert (a - b).abs().max() < 1e-9 * max(1.0, b.abs().max().item())


def test_training_moves_the_spectrum():
    model = _tiny(torch.float32)
    use_freq_bias(model)
    model.train()
    assert not any("relative_position_bias_table" in n for n, _ in model.named_parameters())
    spectra = {n: p.detach().clone() for n, p in model.named_parameters() if ".freq_bias." in n}
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(8, 3, 32, 32, generator=g), torch.randint(0, 5, (8,), generator=g)
    losses = []
    for _ in range(8):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert all((p.detach() - spectra[n]).abs().max() > 1e-4 for n, p in model.named_parameters() if n in spectra)


def test_set_input_size_follows_timm():
    model = _tiny()
    conv = copy.deepcopy(model)
    use_freq_bias(conv)
    for m in (model, conv):
        m.set_input_size(img_size=(48, 48), window_size=6)
    freq = {n: m for n, m in conv.named_modules() if isinstance(m, FreqWindowAttention)}
    for name, m in model.named_modules():
        if name in freq:
            assert freq[name].window_size == (6, 6)
            assert (freq[name].freq_bias.to_swin_table() - m.relative_position_bias_table).abs().max() < 4e-6
    x = torch.randn(1, 3, 48, 48, dtype=torch.float64)
    with torch.no_grad():
        a, b = model.forward_features(x), conv.forward_features(x)
    assert (a - b).abs().max() < 1e-5 * a.abs().max()


def test_triton_path_inside_timm_swin():
    why = _backend.why_unavailable("triton")
    if why:
        pytest.skip(f"triton not available: {why}")
    model = _tiny(torch.float32)
    ref, tri = copy.deepcopy(model), copy.deepcopy(model)
    use_freq_bias(ref, backend="reference")
    use_freq_bias(tri, backend="triton")
    x = torch.randn(1, 3, 32, 32)
    outs = [m.forward_features(x) for m in (ref, tri)]
    assert (outs[0] - outs[1]).abs().max() < 1e-4 * outs[0].abs().max()
    grads = [torch.autograd.grad(o.square().sum(), [p for n, p in m.named_parameters() if ".freq_bias." in n])
             for o, m in zip(outs, (ref, tri))]
    for a, b in zip(*grads):
        assert (a - b).abs().max() < 1e-3 * max(1.0, b.abs().max().item())
