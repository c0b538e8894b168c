"""Frequency-domain relative position bias (``fastnips.vision``): fewer parameters, exact transfer, a tiny ViT.

1. Parameters per head of a 7 x 7 window: Swin's table against the frequency families (lower is smaller).
2. ``to_swin_table`` / ``from_swin_table``: a Swin (timm) table goes in and comes back unchanged.
3. ``transfer(mode="refine", factor=2)``: the 14 x 14 bias of the same field of view keeps every old offset
   exactly (largest difference printed).
4. ``attention_with_bias`` against the plain softmax(QK^T / sqrt(d) + B) V: the same output.
5. ``FreqWindowAttention``, the drop-in for timm's Swin ``WindowAttention``: with Swin's shifted-window mask it
   computes softmax(QK^T scale + B + mask) V per window (largest difference printed); where timm imports,
   ``use_freq_bias`` converts a small random ``SwinTransformer`` and the output is unchanged.
6. ``DDRViT.tiny`` (spectral mixer + gated attention with the frequency bias) trained on scikit-learn's 8 x 8
   digits for a fixed number of epochs: test accuracy (higher is better) and which branch each block leans on.

Run: ``python examples/freqbias.py`` (needs torch and scikit-learn; about 15 s on 2 cores). Seeded:
step-budgeted training, so the numbers repeat for a given torch build and thread count.
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F

import fastnips.vision as fv
from fastnips.data.images import digits

EPOCHS = 12


def bias_examples() -> None:
    print("bias parameters per head at M = 7 (lower = smaller):",
          f"swin {fv.count_bias_params('swin', 7, 1)},",
          f"freq hermitian {fv.count_bias_params('freq', 7, 1, param='hermitian')},",
          f"freq separable rank 2 {fv.count_bias_params('freq', 7, 1, param='separable', rank=2)}")

    table = torch.randn(169, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    back = fv.FreqRelPosBias.from_swin_table(table, 7).to_swin_table().detach()
    print(f"Swin table -> FreqRelPosBias -> Swin table: max difference {float((back - table).abs().max()):.1e}")

    torch.manual_seed(0)
    bias = fv.FreqRelPosBias(num_heads=3, window=7, param="separable", rank=2).double()
    B7 = bias().detach()  # (3, 49, 49)
    B14 = bias.transfer(mode="refine", factor=2)().detach()  # (3, 196, 196)
    a, b = torch.meshgrid(torch.arange(7), torch.arange(7), indexing="ij")
    fine = (2 * a * 14 + 2 * b).reshape(-1)  # token (a, b) of the 7 x 7 window is (2a, 2b) of the 14 x 14 one
    err = float((B14[:, fine][:, :, fine] - B7).abs().max())
    print(f"refine x2: {tuple(B7.shape)} -> {tuple(B14.shape)}, old offsets kept: max difference {err:.1e}")

    q, k, v = (torch.randn(2, 3, 49, 32, generator=torch.Generator().manual_seed(s)) for s in (1, 2, 3))
    bias = bias.float()
    with torch.no_grad():
        out = fv.attention_with_bias(q, k, v, bias)
        ref = F.softmax(q @ k.transpose(-1, -2) / 32 ** 0.5 + bias(), dim=-1) @ v
    print(f"attention_with_bias vs softmax(QK^T/sqrt(d) + B)V: max difference {float((out - ref).abs().max()):.1e}")


def swin_example() -> None:
    torch.manual_seed(0)
    attn = fv.FreqWindowAttention(dim=32, num_heads=2, window_size=4).double()
    x = torch.randn(8, 16, 32, dtype=torch.float64)  # 2 images x 4 windows of 4 x 4 tokens
    region = torch.tensor([0, 0, 1, 1] * 4)  # two regions per window after the cyclic shift (as in Swin)
    mask = torch.where(region[:, None] == region[None, :], 0.0, -100.0).double().expand(4, 16, 16)
    with torch.no_grad():
        out = attn(x, mask=mask)
        q, k, v = attn.qkv(x).reshape(8, 16, 3, 2, 16).permute(2, 0, 3, 1, 4)
        p = F.softmax(q @ k.transpose(-1, -2) * attn.scale + attn.freq_bias() + mask.repeat(2, 1, 1)[:, None], -1)
        ref = attn.proj((p @ v).transpose(1, 2).reshape(8, 16, 32))
    print(f"FreqWindowAttention with a shifted-window mask vs the formula: max difference "
          f"{float((out - ref).abs().max()):.1e}")
    try:
        from timm.models.swin_transformer import SwinTransformer
    except Exception as e:  # timm needs a torchvision whose native ops load with this torch
        print(f"timm does not import here ({type(e).__name__}); skipping the SwinTransformer conversion")
        return
    model = SwinTransformer(img_size=32, patch_size=2, window_size=4, embed_dim=16, depths=(2, 2),
                            num_heads=(2, 4), num_classes=5).double().eval()
    img = torch.randn(1, 3, 32, 32, dtype=torch.float64)
    with torch.no_grad():
        before = model(img)
        n = fv.use_freq_bias(model)
        after = model(img)
    print(f"timm SwinTransformer: {n} WindowAttention modules now train a spectrum; output change "
          f"{float((after - before).abs().max()):.1e}")


def vit_example(seed: int = 0) -> None:
    torch.set_num_threads(1)  # a 30k-parameter model: more threads only add synchronisation (and vary results)
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    (Xtr, ytr), (Xte, yte) = digits("train"), digits("test")
    Xtr, ytr, Xte, yte = (torch.from_numpy(x.copy()) for x in (Xtr, ytr, Xte, yte))
    model = fv.DDRViT.tiny(img_size=8, patch=2, bias="freq")
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.05)
    t = time.perf_counter()
    model.train()
    for _ in range(EPOCHS):
        perm = torch.randperm(len(Xtr), generator=gen)
        for i in range(0, len(Xtr), 32):
            idx = perm[i:i + 32]
            loss = F.cross_entropy(model(Xtr[idx]), ytr[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    s_train = time.perf_counter() - t
    model.eval()
    with torch.no_grad():
        acc = float((model(Xte).argmax(1) == yte).float().mean())
    n_params = sum(p.numel() for p in model.parameters())
    print(f"DDRViT.tiny ({n_params:,} parameters) on digits: {EPOCHS} epochs in {s_train:.1f} s, "
          f"test accuracy {acc:.3f} on {len(yte)} images (higher is better)")
    print(fv.gate_report(model))


def main() -> None:
    bias_examples()
    swin_example()
    vit_example()


if __name__ == "__main__":
    main()
