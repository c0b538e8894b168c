"""Spend a teacher budget on agent SFT data, four ways, and train students on it (``fastnips.rl.teacher``).

1. A 12-dial rune combination lock (a wrong turn jams the dial, ``back`` frees it) and its scripted teacher.
2. 80 teacher calls spent on BC, on construction (i) one-step unfiltered continuations at states the student
   reaches, (ii) full continuations filtered for success, (iii) the same only on tasks the student fails:
   4 rounds, the count-based student refit each round; success rate over 300 episodes.
3. The (i) data as a JSONL file with a checksummed header (and as a ``datasets.Dataset`` when installed, the
   prompt-completion format trl's SFTTrainer reads), then the byte-level TinyDecoder student fine-tuned on it on
   the CPU (with torch installed).

Run: ``python examples/teacher_budget.py`` (numpy; torch for step 3's student; about 20 seconds). Seeded.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from fastnips import _optional
from fastnips.rl.teacher import (
    CombinationLock,
    ScriptedTeacher,
    SFTDataset,
    TabularStudent,
    success_rate,
    train_on_budget,
)

env, budget = CombinationLock(12, n_digits=4, n_runes=32), 80
print(f"lock: {env.length} dials, {env.n_digits} digits, {env.n_runes} runes, horizon {env.horizon}; "
      f"budget {budget} teacher calls")

# 2. the four strategies at the same budget
data = {}
for construction in ("bc", "continuation", "filtered", "failed_only"):
    student, ds = train_on_budget(env, ScriptedTeacher(), TabularStudent(), construction, budget, k=1, seed=0)
    data[construction] = ds
    origins = {o: sum(r["metadata"]["origin"] == o for r in ds) for o in ("reset", "student", "teacher")}
    print(f"{construction:>12}: spent {ds.info['spent']}, kept {len(ds)} rows {origins}; "
          f"success {success_rate(env, student, 300, seed=1):.2f}")

# 3. the file, the HF dataset, the TinyDecoder student
with tempfile.TemporaryDirectory() as tmp:
    path = data["continuation"].to_jsonl(Path(tmp) / "continuation.jsonl")
    back = SFTDataset.from_jsonl(path)
    print(f"wrote and re-read {path.name}: {len(back)} rows, identical: {back == data['continuation']}")
if _optional.installed("datasets"):
    hf = data["continuation"].to_hf_dataset()
    print(f"datasets.Dataset for trl's SFTTrainer: {hf.num_rows} rows, columns {hf.column_names}")
if _optional.installed("torch"):
    import torch

    from fastnips.rl.teacher import TinyDecoderStudent

    torch.set_num_threads(1)
    tiny = TinyDecoderStudent(d_model=48, n_layers=2, n_heads=2, d_ff=96, steps=300, batch_size=16, progress=False)
    tiny.fit(data["continuation"].rows)
    greedy = success_rate(env, tiny, 100, seed=1)
    tiny.sample = True
    print(f"TinyDecoder student ({sum(p.numel() for p in tiny.model.parameters()):,} parameters) on the (i) rows: "
          f"final loss {tiny.losses[-1]:.3f}, success {greedy:.2f} greedy, "
          f"{success_rate(env, tiny, 100, seed=1):.2f} sampled")
    # Below the count-based student: at a rune it was never taught, greedy decoding repeats one wrong digit
    # (jam, back, the same digit ...) where the count-based student retries at random.
