"""fastnips.diffusion.models: SmallUNet, EDM preconditioning and loss, training, the shipped digits denoiser."""

from __future__ import annotations

import itertools
import math
from importlib.resources import files

import pytest

torch = pytest.importorskip("torch")

from fastnips.diffusion.models import (  # noqa: E402
    CHECKPOINT_FORMAT,
    CIFAR_CONFIG,
    DIGITS_CONFIG,
    EDMDenoiser,
    SmallUNet,
    edm_loss,
    load_denoiser,
    load_digits_denoiser,
    save_denoiser,
    train_edm,
)


class Probe(torch.nn.Module):
    """F(x, c) = 2 x + c (per sample), to check the preconditioning wiring."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor(2.0))
        self.seen: list = []

    def forward(self, x, c_noise):
        self.seen.append((x.clone(), c_noise.clone()))
        return self.w * x + c_noise.reshape(-1, 1, 1, 1)


@pytest.mark.parametrize(("sigma", "expected"), [
    # sigma_data = 0.5: (c_skip, c_out, c_in, c_noise) by hand
    (0.5, (0.5, 0.25 / math.sqrt(0.5), 1 / math.sqrt(0.5), math.log(0.5) / 4)),
    (2.0, (0.25 / 4.25, 1.0 / math.sqrt(4.25), 1 / math.sqrt(4.25), math.log(2.0) / 4)),
    (0.01, (0.25 / 0.2501, 0.005 / math.sqrt(0.2501), 1 / math.sqrt(0.2501), math.log(0.01) / 4)),
])
def test_precond_formulas(sigma, expected):
    m = EDMDenoiser(Probe(), sigma_data=0.5)
    got = m.precond(torch.tensor([sigma], dtype=torch.float64))
    for g, e in zip(got, expected):
        assert float(g) == pytest.approx(e, rel=1e-12)
    cs, co, ci, _ = (float(v) for v in got)
    assert cs + co**2 / 0.25 == pytest.approx(1.0, rel=1e-12)  # c_skip + (c_out / sigma_d)^2 = 1
    assert ci * co == pytest.approx(sigma * 0.5 / (sigma**2 + 0.25), rel=1e-12)


def test_edm_denoiser_wiring():
    probe = Probe()
    m = EDMDenoiser(probe, sigma_data=0.7).double()
    x = torch.randn(3, 1, 2, 2, dtype=torch.float64)
    sig = torch.tensor([0.1, 1.0, 5.0], dtype=torch.float64)
    out = m(x, sig, class_labels=None)  # k-diffusion call; extra args ignored
    sd2 = 0.49
    for i, s in enumerate(sig.tolist()):
        c_skip, c_out, c_in = sd2 / (s * s + sd2), s * 0.7 / math.sqrt(s * s + sd2), 1 / math.sqrt(s * s + sd2)
        ref = c_skip * x[i] + c_out * (2 * c_in * x[i] + math.log(s) / 4)
        torch.testing.assert_close(out[i], ref)
    # a scalar sigma broadcasts; sigma = 0 gives D = x
    torch.testing.assert_close(m(x, 1.0), m(x, torch.ones(3, dtype=torch.float64)))
    torch.testing.assert_close(m(x, 0.0), x)
    with pytest.raises(ValueError, match="sigma"):
        m(x, torch.ones(2))
    with pytest.raises(ValueError, match="sigma_data"):
        EDMDenoiser(probe, sigma_data=0.0)


def test_small_unet_shapes_and_zero_init():
    torch.manual_seed(0)
    digits = EDMDenoiser(SmallUNet(**DIGITS_CONFIG))
    x = torch.randn(5, 1, 8, 8)
    out = digits(x, torch.linspace(0.1, 10, 5))
    assert out.shape == x.shape
    # the output conv starts at zero: an untrained model is c_skip x
    torch.testing.assert_close(out, x * (0.25 / (torch.linspace(0.1, 10, 5) ** 2 + 0.25)).reshape(-1, 1, 1, 1))
    assert digits.net.num_parameters() < 500_000  # the fp16 checkpoint stays under 1 MB
    cifar = SmallUNet(**CIFAR_CONFIG)
    torch.nn.init.normal_(cifar.conv_out.weight, std=0.01)
    y = cifar(torch.randn(2, 3, 32, 32), torch.zeros(2))
    assert y.shape == (2, 3, 32, 32)
    assert bool(torch.isfinite(y).all())
    assert SmallUNet(in_ch=2, base=8, mults=(1, 2, 2, 2), n_res=2)(torch.randn(1, 2, 16, 24), torch.zeros(1)).shape \
        == (1, 2, 16, 24)
    with pytest.raises(ValueError, match=r"\(B, 3"):
        cifar(torch.randn(2, 1, 32, 32), torch.zeros(2))
    with pytest.raises(ValueError, match="divisible"):
        cifar(torch.randn(2, 3, 30, 30), torch.zeros(2))
    with pytest.raises(ValueError, match="mults"):
        SmallUNet(mults=())
    with pytest.raises(ValueError, match="base"):
        SmallUNet(base=0)


def test_train_edm_smoke_loss_decreases(tmp_path):
    from fastnips.data.images import digits

    y = 2 * torch.from_numpy(digits("train")[0][:256]) - 1
    torch.manual_seed(0)
    model = EDMDenoiser(SmallUNet(in_ch=1, base=8, mults=(1, 2), n_res=1))
    def mean_loss():
        g = torch.Generator().manual_seed(5)
        with torch.no_grad():
            return sum(float(edm_loss(model, y, generator=g)) for _ in range(4)) / 4

    before = mean_loss()
    losses = train_edm(model, y, epochs=20, batch_size=64, lr=3e-3, seed=0, progress=False, warmup=5)
    assert len(losses) == 80
    assert all(math.isfinite(v) for v in losses)
    after = mean_loss()
    assert after < 0.8 * before
    assert model.train_info["steps"] == 80
    assert not model.training
    # deterministic given the seed and the initial weights (a shorter run shares the warm-up steps, whose
    # learning rates do not depend on the total, so its first 6 losses are bitwise the same)
    torch.manual_seed(0)
    again = EDMDenoiser(SmallUNet(in_ch=1, base=8, mults=(1, 2), n_res=1))
    first = train_edm(again, y, epochs=20, batch_size=64, lr=3e-3, seed=0, progress=True, warmup=5, max_steps=10)
    assert len(first) == 10
    assert first[:6] == losses[:6]
    # save / load round trip (fp32: exact; fp16: close)
    save_denoiser(model, tmp_path / "m32.pt", half=False)
    save_denoiser(model, tmp_path / "m16.pt")
    x, s = torch.randn(4, 1, 8, 8), torch.tensor([0.1, 0.5, 1.0, 3.0])
    with torch.no_grad():
        ref = model(x, s)
        torch.testing.assert_close(load_denoiser(tmp_path / "m32.pt")(x, s), ref)
        torch.testing.assert_close(load_denoiser(tmp_path / "m16.pt")(x, s), ref, rtol=0, atol=2e-2)
    with pytest.raises(ValueError, match="data"):
        train_edm(model, torch.zeros(3, 8, 8), epochs=1)


def test_load_rejects_foreign_files(tmp_path):
    torch.save({"format": "something/else"}, tmp_path / "x.pt")
    with pytest.raises(ValueError, match=CHECKPOINT_FORMAT):
        load_denoiser(tmp_path / "x.pt")


# ---------------------------------------------------------------------------------------------- the shipped model


@pytest.fixture(scope="module")
def shipped():
    return load_digits_denoiser()


@pytest.fixture(scope="module")
def heldout():
    from fastnips.data.images import digits

    return 2 * torch.from_numpy(digits("test")[0]) - 1


def test_shipped_checkpoint_loads(shipped):
    path = files("fastnips.data").joinpath("digits_unet.pt")
    assert path.is_file()
    assert path.stat().st_size < 1_000_000
    assert isinstance(shipped.net, SmallUNet)
    assert shipped.net.config["in_ch"] == 1
    assert shipped.sigma_data == 0.5
    assert not shipped.training
    info = shipped.train_info
    for key in ("epochs", "steps", "seed", "final_train_loss", "heldout_edm_loss", "seconds", "parameters"):
        assert key in info
    assert info["parameters"] == shipped.net.num_parameters()


@torch.no_grad()
def test_shipped_model_denoises_heldout_digits(shipped, heldout):
    g = torch.Generator().manual_seed(0)
    y = heldout
    for sigma, ratio in ((0.1, 0.8), (0.3, 0.6), (1.0, 0.45)):
        x = y + sigma * torch.randn(y.shape, generator=g)
        err_id = float(((x - y) ** 2).mean().sqrt())
        err = float(((shipped(x, sigma) - y) ** 2).mean().sqrt())
        assert err < ratio * err_id, (sigma, err, err_id)
    # a few Heun steps of the probability-flow ODE from sigma = 0.3 to 0.02, then one final denoise
    sigma = 0.3
    x = y + sigma * torch.randn(y.shape, generator=g)
    ts = [0.3, 0.15, 0.06, 0.02]
    z = x.clone()
    for t0, t1 in itertools.pairwise(ts):
        d0 = (z - shipped(z, t0)) / t0
        z1 = z + (t1 - t0) * d0
        d1 = (z1 - shipped(z1, t1)) / t1
        z = z + (t1 - t0) * 0.5 * (d0 + d1)
    z = shipped(z, ts[-1])
    err_id = float(((x - y) ** 2).mean().sqrt())
    err = float(((z - y) ** 2).mean().sqrt())
    assert err < 0.65 * err_id, (err, err_id)
