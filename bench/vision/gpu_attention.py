"""Standalone GPU table for attention with a relative position bias (bench/vision/bench_attention.py's comparison).

    python bench/vision/gpu_attention.py [--no-flex] [--batch 8] [--dtype bf16] [--mask] [--windows 7,14,28,56]

For N = 49, 196, 784, 3136 (windows 7, 14, 28, 56; ``--windows``) and H = 3, 6, 12, D = 32, forward only: median
times (ms, ``triton.testing.do_bench``) of SDPA without bias (floor), SDPA with the materialised (H, N, N) bias
(gather included), compiled FlexAttention with a table-lookup ``score_mod``, and the fastnips Triton kernel; then
ours/floor (target <= 1.3) and ours/sdpa-bias (target < 1 from N = 784). A second table times forward + backward
(gradients in q, k, v and the bias table) for SDPA with the bias, FlexAttention and the Triton kernels. Every row's
output is checked against SDPA with the bias (2e-2 in bf16, 1e-3 in fp32 with TF32 off). ``--mask``: every call also
takes Swin's shifted-window mask (nW = 4 windows of a 2 x 2-window map shifted by M // 2; -100 across regions), the
same comparison with the masked SDPA reference. Needs a CUDA device; < 5 minutes on one GPU (flex compiles once per
shape). """

from __future__ import annotations

import argparse
import sys

import torch


def shift_mask(m: int, device) -> torch.Tensor:
    """Swin's SW-MSA mask of a 2 x 2-window map (windows of m x m tokens) after a cyclic shift by m // 2: (4, N, N),
    0 within a region, -100 across."""
    axis = torch.zeros(2 * m, dtype=torch.long)
    axis[m:2 * m - m // 2] = 1
    axis[2 * m - m // 2:] = 2
    label = (axis[:, None] * 3 + axis[None, :]).reshape(2, m, 2, m).permute(0, 2, 1, 3).reshape(4, m * m)
    return torch.where(label[:, :, None] == label[:, None, :], 0.0, -100.0).to(device)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-flex", action="store_true")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--dtype", choices=["bf16", "fp16", "fp32"], default="bf16")
    ap.add_argument("--mask", action="store_true", help="Swin's shifted-window mask in every call (batch % 4 == 0)")
    ap.add_argument("--windows", default="7,14,28,56",
                    help="window sides M (N = M^2 tokens), comma-separated; default 7,14,28,56 (N = 49 ... 3136)")
    args = ap.parse_args()
    try:
        args.windows = tuple(int(w) for w in args.windows.split(","))
    except ValueError:
        ap.error(f"--windows must be comma-separated integers, got {args.windows!r}")
    if not args.windows or min(args.windows) < 1:
        ap.error("--windows must list positive window sides")
    if args.mask and args.batch % 4:
        ap.error("--mask needs --batch divisible by 4 (nW = 4 windows)")
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    import triton.testing

    from fastnips.vision import FreqRelPosBias
    from fastnips.vision.attention import BiasSpec, attention_with_bias, bias_spec

    torch.backends.cuda.matmul.allow_tf32 = False
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    tol = 1e-3 if dtype == torch.float32 else 2e-2
    B, D = args.batch, 32
    print(f"# {torch.cuda.get_device_name()}  torch {torch.__version__}  triton {triton.__version__}  "
          f"dtype {args.dtype}  B={B} D={D}  mask={args.mask}  forward, median ms")
    hdr = f"{'N':>5} {'H':>3} {'sdpa-nobias':>12} {'sdpa-bias':>10} {'flex':>8} {'ours':>8} {'ours/floor':>11} " \
          f"{'ours/bias':>10} {'ours/flex':>10}  max|err| (bias, flex, ours)"
    print(hdr)
    ok_all = True
    for m in args.windows:
        for h in (3, 6, 12):
            n = m * m
            g = torch.Generator(device="cuda").manual_seed(n + h)
            q, k, v = (torch.randn(B, h, n, D, device="cuda", generator=g, dtype=dtype) for _ in range(3))
            mod = FreqRelPosBias(h, m, init_std=1.0).cuda()
            mk = {"mask": shift_mask(m, "cuda")} if args.mask else {}
            with torch.no_grad():
                s = bias_spec(mod)
                spec = BiasSpec(s.kernel.detach(), s.window, s.grid, s.periodic)
                ref = attention_with_bias(q.float(), k.float(), v.float(), BiasSpec(spec.kernel.float(), spec.window,
                                          spec.grid), backend="reference", **mk)
                fns = {
                    "floor": lambda q=q, k=k, v=v: torch.nn.functional.scaled_dot_product_attention(q, k, v),
                    "bias": lambda q=q, k=k, v=v, spec=spec, mk=mk: attention_with_bias(q, k, v, spec,
                                                                                       backend="reference", **mk),
                    "ours": lambda q=q, k=k, v=v, spec=spec, mk=mk: attention_with_bias(q, k, v, spec, backend="triton",
                                                                                       **mk),
                }
                if not args.no_flex:
                    fns["flex"] = lambda q=q, k=k, v=v, spec=spec, mk=mk: attention_with_bias(q, k, v, spec,
                                                                                             backend="flex", **mk)
                t, err = {}, {}
                for name, fn in fns.items():
                    out = fn()
                    if name != "floor":
                        err[name] = (out.float() - ref).abs().max().item()
                        ok_all &= err[name] < tol
                    t[name] = triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")
            fl = t.get("flex", float("nan"))
            print(f"{n:5d} {h:3d} {t['floor']:12.4f} {t['bias']:10.4f} {fl:8.4f} {t['ours']:8.4f} "
                  f"{t['ours'] / t['floor']:11.2f} {t['ours'] / t['bias']:10.2f} {t['ours'] / fl:10.2f}  "
                  f"{err['bias']:.1e} {err.get('flex', float('nan')):.1e} {err['ours']:.1e}", flush=True)
    ok_all &= _backward_table(args, dtype, tol)
    print("outputs agree" if ok_all else f"OUTPUT MISMATCH (tolerance {tol})")
    return 0 if ok_all else 1


def _backward_table(args, dtype, tol) -> bool:
    """Forward + backward (gradients in q, k, v and the bias table): SDPA with the materialised bias (autograd
    through the gather) vs compiled FlexAttention vs the Triton forward + backward kernels. The gradients of
    every row are checked against the float32 reference (relative max error)."""
    import triton.testing

    from fastnips.vision import FreqRelPosBias
    from fastnips.vision.attention import BiasSpec, attention_with_bias, bias_spec

    B, D = args.batch, 32
    print(f"# forward + backward, median ms; gradients checked against float32 SDPA (rel. tol {tol})")
    print(f"{'N':>5} {'H':>3} {'sdpa-bias':>10} {'flex':>8} {'ours':>8} {'ours/bias':>10} {'ours/flex':>10}  "
          "max rel|grad err| (bias, flex, ours)")
    ok = True
    for m in args.windows:
        for h in (3, 6, 12):
            n = m * m
            g = torch.Generator(device="cuda").manual_seed(n + h + 1)
            q, k, v = (torch.randn(B, h, n, D, device="cuda", generator=g, dtype=dtype).requires_grad_(True)
                       for _ in range(3))
            do = torch.randn(B, h, n, D, device="cuda", generator=g, dtype=dtype)
            s = bias_spec(FreqRelPosBias(h, m, init_std=1.0).cuda())
            tab = s.kernel.detach().clone().requires_grad_(True)
            mk = {"mask": shift_mask(m, "cuda")} if args.mask else {}

            def grads(backend, q=q, k=k, v=v, tab=tab, do=do, m=m, s=s, mk=mk):
                out = attention_with_bias(q, k, v, BiasSpec(tab, s.window, s.grid, s.periodic), backend=backend, **mk)
                return torch.autograd.grad(out, (q, k, v, tab), do)

            q32, k32, v32, t32 = (t.detach().float().requires_grad_(True) for t in (q, k, v, tab))
            out32 = attention_with_bias(q32, k32, v32, BiasSpec(t32, s.window, s.grid, s.periodic), backend="reference",
                                        **mk)
            want = torch.autograd.grad(out32, (q32, k32, v32, t32), do.float())
            names = ["reference"] + ([] if args.no_flex else ["flex"]) + ["triton"]
            t, err = {}, {}
            for name in names:
                got = grads(name)
                err[name] = max(((a.float() - b).abs().max() / b.abs().max().clamp_min(1.0)).item()
                                for a, b in zip(got, want))
                ok &= err[name] < tol
                t[name] = triton.testing.do_bench(lambda name=name: grads(name), warmup=10, rep=50,
                                                  return_mode="median")
            fl = t.get("flex", float("nan"))
            print(f"{n:5d} {h:3d} {t['reference']:10.4f} {fl:8.4f} {t['triton']:8.4f} "
                  f"{t['triton'] / t['reference']:10.2f} {t['triton'] / fl:10.2f}  "
                  f"{err['reference']:.1e} {err.get('flex', float('nan')):.1e} {err['triton']:.1e}", flush=True)
    return ok


if __name__ == "__main__":
    sys.exit(main())
