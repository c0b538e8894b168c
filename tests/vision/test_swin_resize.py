"""SwinRelPosBias.resize: timm's geometric-grid resize (default) and plain bicubic, on hand-computed cases.
The comparison with timm's own function is in test_timm_peer.py (skipped where timm does not import)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from fastnips.vision import SwinRelPosBias
from fastnips.vision.swin import RESIZE_MODES, _geometric_offsets


def _swin(window, heads=2, seed=0, dtype=torch.float64):
    s = SwinRelPosBias(heads, window, init_std=0.0).to(dtype)
    with torch.no_grad():
        s.relative_position_bias_table.normal_(generator=torch.Generator().manual_seed(seed))
    return s


def _grid(s):
    """The table as (H, 2Mh-1, 2Mw-1): offset d at index d + M - 1."""
    (mh, mw), H = s.window, s.num_heads
    return s.relative_position_bias_table.detach().t().reshape(H, 2 * mh - 1, 2 * mw - 1)


def test_window_2_to_3_is_edge_replication():
    """3 source offsets sit at -1, 0, 1 whatever the ratio; the new offsets +-2 lie outside: edge values."""
    s = _swin(2)
    t, big = _grid(s), _grid(s.resize(3))
    clip = torch.tensor([0, 0, 1, 2, 2])  # offsets -2..2 -> source index of clip(d, -1, 1)
    assert torch.equal(big, t[:, clip][:, :, clip])


@pytest.mark.parametrize(("old", "new"), [(7, 14), (7, 4), ((3, 5), (6, 4)), (4, 9)])
def test_centre_offsets_kept(old, new):
    """Offsets 0 and +-1 are on both grids (the geometric grid starts 0, 1, 1+q, ...): kept exactly."""
    s = _swin(old)
    t, big = _grid(s), _grid(s.resize(new))
    (mh, mw), (nh, nw) = s.window, (new, new) if isinstance(new, int) else new
    assert torch.allclose(big[:, nh - 2:nh + 1, nw - 2:nw + 1], t[:, mh - 2:mh + 1, mw - 2:mw + 1], atol=1e-12)


def test_geometric_offsets_reach_the_new_range():
    pos = _geometric_offsets(13, 27)  # window 7 -> 14: 6 source steps must reach offset 13
    assert len(pos) == 13
    assert pos[6] == 0.0
    assert pos[7] == 1.0
    assert pos == [-p for p in reversed(pos)]
    q = pos[8] - pos[7]
    assert 1.01 <= q <= 1.5
    assert all(abs((pos[8 + i] - pos[7 + i]) - q ** (i + 1)) < 1e-12 for i in range(5))  # steps 1, q, q^2, ...
    assert abs(pos[-1] - 13) < 1e-4  # sum_{k<6} q^k = 13 up to the bisection tolerance
    shrink = _geometric_offsets(13, 7)  # 7 -> 4: the ratio stops at its lower bound 1.01
    assert abs((shrink[8] - shrink[7]) - 1.01) < 1e-5


def test_linear_ramp_gives_the_inverse_position_map():
    """A table equal to its column index k (offset pos_k on the geometric grid) resizes to the piecewise-linear
    inverse of the positions: at new offset t between pos_k and pos_{k+1}, k + (t - pos_k) / (pos_{k+1} - pos_k)."""
    s = SwinRelPosBias(1, 7, init_std=0.0).double()
    with torch.no_grad():
        s.relative_position_bias_table.copy_(torch.arange(13.0).repeat(13)[:, None])
    row = _grid(s.resize(14))[0, 0]  # 27 new offsets -13..13
    pos = _geometric_offsets(13, 27)
    for t in (2, 5, -7, 12):
        k = max(i for i in range(12) if pos[i] <= t)
        assert abs(row[t + 13].item() - (k + (t - pos[k]) / (pos[k + 1] - pos[k]))) < 1e-12
    assert abs(row[0].item()) < 1e-5  # the ends: pos[-1] = 13 to 1e-4
    assert abs(row[-1].item() - 12) < 1e-5


@pytest.mark.parametrize("mode", RESIZE_MODES)
def test_constant_stays_constant_and_shapes(mode):
    s = SwinRelPosBias(3, (3, 5), init_std=0.0).float()
    with torch.no_grad():
        s.relative_position_bias_table.fill_(0.25)
    r = s.resize((5, 2), mode=mode)
    assert r.window == (5, 2)
    assert r.relative_position_bias_table.shape == (9 * 3, 3)
    assert r.relative_position_bias_table.dtype == torch.float32
    assert r.relative_position_bias_table.grad_fn is None
    assert torch.allclose(r.relative_position_bias_table, torch.full_like(r.relative_position_bias_table, 0.25),
                          atol=1e-6)
    same = s.resize((3, 5), mode=mode)
    assert torch.equal(same.relative_position_bias_table, s.relative_position_bias_table)


def test_bicubic_mode_is_plain_interpolate():
    s = _swin(7)
    want = F.interpolate(_grid(s)[None], size=(19, 19), mode="bicubic", align_corners=False)[0]
    assert torch.equal(_grid(s.resize(10, mode="bicubic")), want)
    assert not torch.allclose(_grid(s.resize(10)), want)  # the default is the geometric (timm) resize


def test_resize_errors():
    s = _swin(4)
    with pytest.raises(ValueError, match="mode must be one of"):
        s.resize(8, mode="nearest")
    with pytest.raises(ValueError, match="window"):
        s.resize(0)
