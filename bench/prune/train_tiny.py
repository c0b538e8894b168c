"""Train the shipped tiny decoder: ``python/fastnips/data/tiny_decoder.pt`` (issue 7).

    OMP_NUM_THREADS=1 python bench/prune/train_tiny.py [--out PATH] [--steps N] [--seed S]

A byte-level Llama-style decoder (:class:`fastnips.prune.tiny.TinyDecoder`; d_model 128, 4 layers, 4 heads,
SwiGLU 352, context 128, vocab 258; 870,016 parameters, 1.74 MB in fp16) trained from scratch with
:func:`fastnips.prune.tiny.train_tiny` on the training split (90% of the documents, seed 0) of the
standard-library docstring corpus (:func:`fastnips.data.text.docstring_token_ids`): AdamW (lr 3e-3, betas
0.9/0.95, weight decay 0.1), 100 warmup steps then cosine decay to 3e-4, batch 16 x 128 bytes,
1,800 steps = 3.7 M tokens (about 3.5 passes over the 1.06 M training bytes).

Perplexity is then measured on the **saved fp16 weights** (loaded back in float32) with
:func:`fastnips.prune.hf.perplexity` (non-overlapping 128-byte windows): on the whole held-out split and on
as many training tokens, from the start of the training split. Both are stored in the checkpoint's ``info``
with the seed, steps, tokens, time and the Python/torch versions (the corpus depends on the Python version).

The run is deterministic given the seed, torch version, Python version (corpus) and thread count; run it
with ``OMP_NUM_THREADS=1`` for the recorded result. Result on CPython 3.11.7, torch 2.13.0 CPU, one
thread: see ``load_tiny()[0].train_info`` (the lead's report lists the numbers).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import torch

from fastnips.data.text import docstring_token_ids
from fastnips.prune.hf import perplexity
from fastnips.prune.tiny import TinyConfig, load_tiny, save_tiny, train_tiny

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "python" / "fastnips" / "data" / "tiny_decoder.pt"
CONFIG = TinyConfig(vocab=258, d_model=128, n_layers=4, n_heads=4, d_ff=352, max_seq=128)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--steps", type=int, default=1800)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    train_ids = docstring_token_ids(split="train")
    held_ids = docstring_token_ids(split="held_out")
    print(f"corpus: {train_ids.numel():,} train / {held_ids.numel():,} held-out byte tokens; "
          f"python {platform.python_version()}, torch {torch.__version__}, {torch.get_num_threads()} thread(s)")
    t0 = time.perf_counter()
    model, losses = train_tiny(CONFIG, train_ids, args.steps, batch_size=args.batch_size, lr=args.lr,
                               seed=args.seed, log_every=100)
    seconds = time.perf_counter() - t0
    info = dict(model.train_info)
    info.update(seconds=seconds, python=platform.python_version(), corpus="stdlib_docstrings(min_chars=200), "
                "corpus_split(held_out=0.1, seed=0), ByteTokenizer, EOS-separated",
                train_tokens_available=int(train_ids.numel()), held_out_tokens=int(held_ids.numel()),
                parameters=model.num_parameters())
    save_tiny(model, args.out, info=info)

    shipped, _ = load_tiny(args.out)  # measure what ships: fp16 weights, loaded in float32
    held_ppl = perplexity(shipped, held_ids, seqlen=128, batch_size=32)
    train_ppl = perplexity(shipped, train_ids[: held_ids.numel()], seqlen=128, batch_size=32)
    info.update(held_out_ppl=held_ppl, train_ppl=train_ppl)
    save_tiny(shipped, args.out, info=info)
    print(f"trained {args.steps} steps ({info['tokens']:,} tokens) in {seconds:.0f} s; "
          f"{info['parameters']:,} parameters; final train loss {losses[-1]:.4f}")
    print(f"perplexity (bytes, fp16 weights): train {train_ppl:.3f}  held-out {held_ppl:.3f}")
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
