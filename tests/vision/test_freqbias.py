"""FreqRelPosBias / SwinRelPosBias: exact Swin equivalence, equivariance, BCCB, transfer, counts, errors."""

from __future__ import annotations

import warnings

import pytest
import torch

from fastnips.vision import FreqRelPosBias, SwinRelPosBias, count_bias_params, relative_position_index
from fastnips.vision.freqbias import PARAMS, periodic_offset_index

CASES = [(7, None), ((3, 5), None), ((4, 2), None), (4, (8, 6)), (3, 3), ((2, 4), (2, 4))]


def _random(b: FreqRelPosBias, seed: int = 0) -> FreqRelPosBias:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in b.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype))
    return b


def _make(heads, window, grid=None, param="hermitian", seed=0, **kw):
    return _random(FreqRelPosBias(heads, window, grid=grid, param=param, **kw).double(), seed)


def _gather(table: torch.Tensor, window) -> torch.Tensor:
    """Swin/timm gather written here: B[h, i, j] = table[index(i, j), h], index from coordinates."""
    mh, mw = (window, window) if isinstance(window, int) else window
    n = mh * mw
    out = torch.empty(table.shape[1], n, n, dtype=table.dtype)
    for i in range(n):
        for j in range(n):
            dh, dw = i // mw - j // mw, i % mw - j % mw
            out[:, i, j] = table[(dh + mh - 1) * (2 * mw - 1) + (dw + mw - 1)]
    return out


def test_relative_position_index_formula():
    idx = relative_position_index((2, 3))
    assert idx.dtype == torch.long
    assert idx.shape == (6, 6)
    assert idx[0, 0] == (1) * 5 + 2  # zero offset is the centre of the 3x5 table
    assert idx[5, 0] == (1 + 1) * 5 + (2 + 2)  # i=(1,2), j=(0,0): d=(1,2)
    assert idx[0, 5] == 0  # d = (-1, -2): first entry
    assert int(relative_position_index(7).max()) == 168


@pytest.mark.parametrize("param", PARAMS)
@pytest.mark.parametrize(("window", "grid"), CASES)
def test_equals_swin_gather_of_table(param, window, grid):
    b = _make(3, window, grid, param)
    B = b()
    mh, mw = b.window
    assert B.shape == (3, mh * mw, mh * mw)
    assert B.dtype == torch.float64
    t = b.to_swin_table()
    assert t.shape == ((2 * mh - 1) * (2 * mw - 1), 3)
    assert (B - _gather(t, b.window)).abs().max() < 1e-12
    # and the definition, B_h[i,j] = k_h((p_i - p_j) mod grid), k = irfft2(spectrum)
    k = torch.fft.irfft2(b.spectrum(), s=b.grid)
    assert (k - b.kernel()).abs().max() < 1e-12
    nh, nw = b.grid
    for i, j in [(0, 0), (1, 0), (0, mh * mw - 1), (mh * mw - 1, 2)]:
        dh, dw = (i // mw - j // mw) % nh, (i % mw - j % mw) % nw
        assert abs(B[:, i, j] - k[:, dh, dw]).max() < 1e-12


def test_alias_free_table_is_lossless_both_ways():
    g = torch.Generator().manual_seed(1)
    table = torch.randn(13 * 9, 2, generator=g, dtype=torch.float64)
    b = FreqRelPosBias.from_swin_table(table, (7, 5))
    assert b.grid == (13, 9)
    assert (b.to_swin_table() - table).abs().max() < 1e-12
    s = SwinRelPosBias(2, (7, 5)).double()
    with torch.no_grad():
        s.relative_position_bias_table.copy_(table)
    assert (b() - s()).abs().max() < 1e-12


@pytest.mark.parametrize("param", PARAMS)
def test_translation_equivariance(param):
    b = _make(2, (4, 5), None, param)
    B = b()
    mh, mw = b.window
    for s_h, s_w in [(1, 0), (0, 2), (2, 3)]:
        for ph in range(mh - s_h):
            for pw in range(mw - s_w):
                for qh in range(mh - s_h):
                    for qw in range(mw - s_w):
                        i, j = ph * mw + pw, qh * mw + qw
                        i2, j2 = (ph + s_h) * mw + pw + s_w, (qh + s_h) * mw + qw + s_w
                        assert abs(B[:, i2, j2] - B[:, i, j]).max() < 1e-12


@pytest.mark.parametrize("window", [(4, 4), (3, 5), (4, 6)])
def test_circular_matvec_is_fft_convolution(window):
    b = _make(2, window, window, "hermitian")
    B = b()
    v = torch.randn(2, *window, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    direct = torch.einsum("hij,hj->hi", B, v.flatten(1)).reshape(2, *window)
    fft = torch.fft.irfft2(torch.fft.rfft2(v) * torch.fft.rfft2(b.kernel()), s=window)
    assert (direct - fft).abs().max() < 1e-12
    assert (b.spectrum() - torch.fft.rfft2(b.kernel())).abs().max() < 1e-10


@pytest.mark.parametrize("param", PARAMS)
@pytest.mark.parametrize(("window", "grid"), [(7, None), ((3, 4), None), (4, (8, 6)), ((3, 2), (6, 5))])
@pytest.mark.parametrize("factor", [2, 3, 4])
def test_refine_keeps_original_samples(param, window, grid, factor):
    b = _make(2, window, grid, param)
    b2 = b.transfer(mode="refine", factor=factor)
    assert b2.param == b.param
    assert b2.grid == (factor * b.grid[0], factor * b.grid[1])
    assert b2.window == (factor * b.window[0], factor * b.window[1])
    assert sum(p.numel() for p in b2.parameters()) == count_bias_params(
        "freq", b2.window, 2, grid=b2.grid, param=param, **({"band": b2.band} if param == "band" else {}))
    k, k2 = b.kernel(), b2.kernel()
    assert (k2[:, ::factor, ::factor] - k).abs().max() < 1e-12  # round trip by decimation
    B, B2 = b(), b2()
    mh, mw = b.window
    mw2 = b2.window[1]
    sub = torch.tensor([factor * (i // mw) * mw2 + factor * (i % mw) for i in range(mh * mw)])
    assert (B2[:, sub][:, :, sub] - B).abs().max() < 1e-12  # original tokens see the original bias
    assert (b2.to_swin_table()[:, 0] != 0).any()


def test_refine_non_square_factor_and_grad_free():
    b = _make(1, (3, 4), None, "hermitian")
    b2 = b.transfer(mode="refine", factor=(2, 3))
    assert b2.grid == (10, 21)
    assert (b2.kernel()[:, ::2, ::3] - b.kernel()).abs().max() < 1e-12
    assert all(p.grad_fn is None and p.requires_grad for p in b2.parameters())


def test_swin_bicubic_resize_does_not_keep_samples():
    """Documented contrast: the plain bicubic table resize moves the original offsets' values."""
    s = SwinRelPosBias(2, 7).double()
    with torch.no_grad():
        s.relative_position_bias_table.normal_(generator=torch.Generator().manual_seed(3))
    s2 = s.resize(window=14, mode="bicubic")
    assert isinstance(s2, SwinRelPosBias)
    assert s2.relative_position_bias_table.shape == (27 * 27, 2)
    t = s.relative_position_bias_table.reshape(13, 13, 2)
    t2 = s2.relative_position_bias_table.reshape(27, 27, 2)
    # offset d (coarse) is offset 2d on the refined grid: table index 2d + 13 vs d + 6
    err = (t2[1::2, 1::2] - t).abs().max()
    assert err > 1e-3
    # the frequency refine of the same table keeps them exactly
    f2 = FreqRelPosBias.from_swin_table(s.relative_position_bias_table, 7).transfer(mode="refine", factor=2)
    k2 = f2.kernel()  # grid 26: offset 2d at index (2d mod 26)
    d = torch.arange(-6, 7)
    kk = k2[:, (2 * d % 26)][:, :, (2 * d % 26)].permute(1, 2, 0)
    assert (kk - t).abs().max() < 1e-12


@pytest.mark.parametrize("param", PARAMS)
def test_extend_exact_with_room(param):
    b = _make(2, 4, (11, 11), param)  # grid >= 2*6-1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b2 = b.transfer(window=6, mode="extend")
    assert b2.window == (6, 6)
    assert b2.grid == b.grid
    t, t2 = b.to_swin_table().reshape(7, 7, 2), b2.to_swin_table().reshape(11, 11, 2)
    assert (t2[2:9, 2:9] - t).abs().max() < 1e-12  # shared offsets |d| <= 3
    # no aliasing: all 121 offsets read distinct kernel samples, i.e. the table is the whole kernel
    assert torch.unique(periodic_offset_index(6, (11, 11))).numel() == 121
    assert (b2.kernel() - b.kernel()).abs().max() == 0


def test_extend_warns_and_wraps_without_room():
    b = _make(2, 7, None, "hermitian")  # grid 13 < 2*8-1
    with pytest.warns(UserWarning, match="periodic extension"):
        b2 = b.transfer(window=8, mode="extend")
    t2 = b2.to_swin_table().reshape(15, 15, 2)
    assert (t2[2:13, 2:13] - b.to_swin_table().reshape(13, 13, 2)[1:12, 1:12]).abs().max() < 1e-12
    assert (t2[14] - t2[1]).abs().max() < 1e-12  # offset +7 wraps to -6


@pytest.mark.parametrize("param", PARAMS)
def test_gradcheck_through_spectrum(param):
    b = FreqRelPosBias(2, (3, 2), param=param).double()
    names = [n for n, _ in b.named_parameters()]
    params = [p.detach().clone().requires_grad_(True) for p in b.parameters()]

    def f(*ps):
        out = torch.func.functional_call(b, dict(zip(names, ps)), ())
        return out

    assert torch.autograd.gradcheck(f, tuple(params), eps=1e-6, atol=1e-8)


@pytest.mark.parametrize("grid", [(5, 5), (4, 6), (3, 4)])
def test_hermitian_map_is_orthogonal(grid):
    """No redundant storage: params -> kernel is an orthogonal Nh*Nw x Nh*Nw map."""
    b = FreqRelPosBias(1, (2, 2), grid=grid).double()
    n = grid[0] * grid[1]
    assert b.weight.shape == (1, n)
    w0 = b.weight.detach().clone()

    def kernel_of(w):
        return torch.fft.irfft2(b._spec(w), s=grid)

    J = torch.autograd.functional.jacobian(kernel_of, w0).reshape(n, n)
    assert (J.T @ J - torch.eye(n, dtype=torch.float64)).abs().max() < 1e-12


def test_parameter_counts():
    assert count_bias_params("swin", 7, 1) == 169
    assert count_bias_params("swin", (7, 5), 3) == 13 * 9 * 3
    assert count_bias_params("freq", 7, 1) == 169
    assert count_bias_params("freq", 7, 1, grid=7) == 49
    assert count_bias_params("freq", 7, 1, param="band") == 49
    assert count_bias_params("freq", 7, 1, param="band", band=(2, 3)) == 35
    assert count_bias_params("freq", 7, 1, param="separable") == 52  # 169 / 52 = 3.25
    assert count_bias_params("freq", 7, 1, param="separable", rank=1) == 26
    assert count_bias_params("freq", 4, 1, grid=(8, 6), param="band", band=(4, 1)) == 8 * 3
    assert count_bias_params("swin", 7, 1) / count_bias_params("freq", 7, 1, param="separable") == 3.25
    assert sum(p.numel() for p in SwinRelPosBias(3, 7).parameters()) == count_bias_params("swin", 7, 3)
    for window, grid in CASES:
        for param in PARAMS:
            b = FreqRelPosBias(3, window, grid=grid, param=param)
            assert sum(p.numel() for p in b.parameters()) == count_bias_params("freq", window, 3, grid=grid,
                                                                               param=param)


@pytest.mark.parametrize("param", PARAMS)
def test_init_is_near_zero(param):
    torch.manual_seed(0)
    b = FreqRelPosBias(4, 7, param=param)
    B = b()
    assert B.dtype == torch.float32
    assert 0.002 < B.std() < 0.05
    assert B.abs().max() < 0.5
    z = FreqRelPosBias(2, 7, param=param, init_std=0.0)
    assert z().abs().max() == 0
    # a zero-initialised bias can still learn
    (z() * torch.randn(2, 49, 49)).sum().backward()
    assert any(p.grad is not None and p.grad.abs().max() > 0 for p in z.parameters())


def test_swin_forward_equals_written_gather():
    s = SwinRelPosBias(3, (3, 4)).double()
    assert s.relative_position_bias_table.shape == (5 * 7, 3)
    assert 0.005 < s.relative_position_bias_table.std() < 0.05
    assert (s() - _gather(s.relative_position_bias_table, (3, 4))).abs().max() == 0


def test_lazy_subpackage():
    import fastnips

    assert "vision" in fastnips.__all__
    assert fastnips.vision.FreqRelPosBias is FreqRelPosBias


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: FreqRelPosBias(2, 7, grid=5), "larger than grid"),
        (lambda: FreqRelPosBias(2, (3, 4), grid=(3, 3)), "larger than grid"),
        (lambda: FreqRelPosBias(0, 7), "num_heads"),
        (lambda: FreqRelPosBias(-1, 7), "num_heads"),
        (lambda: FreqRelPosBias(2, 0), "window"),
        (lambda: FreqRelPosBias(2, (3, -1)), "window"),
        (lambda: FreqRelPosBias(2, 2.5), "window"),
        (lambda: FreqRelPosBias(2, 7, param="complex"), "unknown param"),
        (lambda: FreqRelPosBias(2, 7, param="band", band=(7, 1)), "band"),
        (lambda: FreqRelPosBias(2, 7, band=(1, 1)), "only used with param='band'"),
        (lambda: FreqRelPosBias(2, 7, param="separable", rank=0), "rank"),
        (lambda: FreqRelPosBias(2, 7, init_std=float("nan")), "init_std"),
        (lambda: FreqRelPosBias(2, 7).transfer(window=9, mode="stretch"), "unknown mode"),
        (lambda: FreqRelPosBias(2, 7).transfer(mode="extend"), "needs window"),
        (lambda: FreqRelPosBias(2, 7).transfer(window=14, mode="extend"), "larger than grid"),
        (lambda: FreqRelPosBias(2, 7).transfer(mode="refine", factor=0), "factor"),
        (lambda: FreqRelPosBias(2, 7).transfer(mode="refine", factor=1.5), "factor"),
        (lambda: FreqRelPosBias(2, 7).transfer(mode="refine", factor=(2, 3, 4)), "factor"),
        (lambda: FreqRelPosBias(2, 7).transfer(mode="refine", factor=2, window=27), "larger than grid"),
        (lambda: FreqRelPosBias(2, 7).factors(), "separable"),
        (lambda: FreqRelPosBias(2, 3).load_kernel_(torch.zeros(2, 4, 4)), "shape"),
        (lambda: FreqRelPosBias(2, 3).load_kernel_(torch.full((2, 5, 5), float("nan"))), "NaN"),
        (lambda: FreqRelPosBias.from_swin_table(torch.zeros(10, 2), 7), "table must be"),
        (lambda: SwinRelPosBias(0, 7), "num_heads"),
        (lambda: SwinRelPosBias(2, (7, 0)), "window"),
        (lambda: count_bias_params("alibi", 7, 2), "unknown kind"),
        (lambda: count_bias_params("freq", 7, 0), "heads"),
        (lambda: count_bias_params("freq", 7, 2, param="x"), "unknown param"),
        (lambda: count_bias_params("freq", 7, 2, bands=(1, 1)), "unknown options"),
        (lambda: count_bias_params("freq", 7, 2, grid=3), "larger than grid"),
        (lambda: relative_position_index(0), "window"),
    ],
)
def test_bad_input_raises(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize("factor", [2, 3])
def test_refine_band_through_nyquist_of_even_grid(factor):
    """Band that includes the old Nyquist bins: the split Nyquist stays inside the band, samples kept."""
    b = _make(2, 4, (8, 6), "band", band=(4, 3))
    assert b.weight.shape == (2, 48)
    b2 = b.transfer(mode="refine", factor=factor)
    assert b2.band == (4, 3)
    assert (b2.kernel()[:, ::factor, ::factor] - b.kernel()).abs().max() < 1e-12


@pytest.mark.parametrize(("name", "where"), [("SwinRelPosBias", "swin"), ("relative_position_index", "swin"),
                                             ("MODES", "freqbias_transfer"), ("_refine_kernel", "freqbias_transfer")])
def test_moved_names_old_import_path_warns(name, where):
    import importlib

    import fastnips.vision.freqbias as fb

    with pytest.warns(DeprecationWarning, match=f"moved to fastnips.vision.{where}"):
        assert getattr(fb, name) is getattr(importlib.import_module(f"fastnips.vision.{where}"), name)
    with pytest.raises(AttributeError):
        fb.no_such_name  # noqa: B018
