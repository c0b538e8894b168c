"""fastnips samplers (FDS included) inside a diffusers-style denoising loop, and k-diffusion-style model wrappers.

``FastnipsScheduler`` offers the scheduler interface a diffusers pipeline calls (``set_timesteps``,
``scale_model_input``, ``step``, ``init_noise_sigma``, ``timesteps``) and runs any fastnips sampler behind it;
``EpsDenoiser`` turns the same eps-prediction network into a denoiser ``D(x, sigma)`` for calling the samplers
directly. The script runs the pipeline loop with several samplers on one network and checks that each matches
the direct call. The network is a small randomly initialised diffusers ``UNet2DModel`` when diffusers is
installed, else a small convolutional stand-in with the same call signature (no weights are downloaded; the
samples are not meant to look like anything).

Run: ``python examples/diffusion_diffusers.py`` (needs torch; diffusers optional; a few seconds).
"""

from __future__ import annotations

import torch

import fastnips.diffusion as fd


def make_network() -> tuple[torch.nn.Module, str]:
    torch.manual_seed(0)
    try:
        import diffusers
    except ImportError:
        conv = torch.nn.Conv2d(1, 1, 3, padding=1)
        return (lambda x, t: torch.tanh(conv(x)) * (1 + t.reshape(-1, 1, 1, 1) / 1000)), "conv stand-in"
    net = diffusers.UNet2DModel(sample_size=8, in_channels=1, out_channels=1, layers_per_block=1,
                                block_out_channels=(8, 16), down_block_types=("DownBlock2D", "DownBlock2D"),
                                up_block_types=("UpBlock2D", "UpBlock2D"), norm_num_groups=4).eval()
    return net, "diffusers UNet2DModel (random weights)"


def pipeline_loop(net, scheduler: fd.FastnipsScheduler, noise: torch.Tensor, steps: int) -> torch.Tensor:
    """The loop of a diffusers pipeline, as StableDiffusionPipeline writes it."""
    scheduler.set_timesteps(steps)
    latents = noise * scheduler.init_noise_sigma
    with torch.no_grad():
        for t in scheduler.timesteps:
            model_input = scheduler.scale_model_input(latents, t)
            out = net(model_input, t)
            eps = out.sample if hasattr(out, "sample") else out
            latents = scheduler.step(eps, t, latents).prev_sample
    return latents


def main() -> None:
    torch.set_num_threads(1)
    net, what = make_network()
    noise = torch.randn(4, 1, 8, 8, generator=torch.Generator().manual_seed(1))
    print(f"network: {what}; 6 sampler steps")
    print(f"{'sampler':<14} {'model calls':>11} {'max |pipeline - direct|':>24}")
    for name, kw in [("euler", {}), ("heun", {}), ("dpmpp_2m", {}), ("dpmpp_sde", {"seed": 0}),
                     ("fds", {"seed": 0, "driver": "lorenz"})]:
        sch = fd.FastnipsScheduler(name, num_train_timesteps=1000, sampler_kwargs=kw)
        out = pipeline_loop(net, sch, noise, 6)
        direct = fd.SAMPLERS[name](fd.EpsDenoiser(net, sch.alphas_cumprod), noise * sch.init_noise_sigma,
                                   sch.sigmas.float(), disable=True, **kw)
        diff = float((out - direct).abs().max())
        print(f"{name:<14} {len(sch.timesteps):>11} {diff:>24.2e}")
        assert diff < 1e-3 * max(1.0, float(direct.abs().max())), name


if __name__ == "__main__":
    main()
