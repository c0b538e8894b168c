r"""The real student: fastnips.prune's byte-level TinyDecoder, fine-tuned on SFT rows on the CPU (needs torch).

Training (SFT, trl's prompt-completion convention): a row becomes the byte sequence
:math:`x = [\mathrm{BOS}]\,\mathrm{prompt}\,\mathrm{completion}\,[\mathrm{EOS}]` and the loss is the next-token
cross entropy on the completion and EOS only,

.. math::  \mathcal L(\theta) = -\frac{1}{\sum_i |c_i| + 1} \sum_i \sum_{j \in c_i \cup \{\mathrm{EOS}\}}
           \log p_\theta(x_{i,j} \mid x_{i,<j}),

minimised with AdamW for ``steps`` minibatches drawn uniformly from the rows (a fresh model each ``fit``, as
DAgger retrains on the aggregate). Acting is decoding restricted to the legal actions:
:math:`\hat a = \arg\max_{a \in \mathcal A(s)} \log p_\theta(a\,\mathrm{EOS} \mid \mathrm{BOS}\,\mathrm{prompt})`
(greedy over the legal set, scored exactly in one batched forward pass; ``sample=True`` draws from the softmax
of these scores over ``temperature`` instead). Scoring whole legal actions rather than greedy bytes through a
prefix trie was chosen because the two agree whenever the legal actions differ early (all shipped ones do), and
one forward pass per state is several times cheaper on a CPU.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ... import _optional

__all__ = ["TinyDecoderStudent"]

BOS, EOS = 256, 257


def _bar(total: int, enabled: bool):
    if not enabled or not _optional.installed("tqdm"):
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="fit student", unit="step", leave=False)


class TinyDecoderStudent:
    """A byte-level :class:`~fastnips.prune.tiny.TinyDecoder` as a :class:`~fastnips.rl.teacher.Student`.

    Parameters
    ----------
    d_model, n_layers, n_heads, d_ff, max_seq : int
        The :class:`~fastnips.prune.tiny.TinyConfig` of the fresh model (vocab 258: bytes, BOS, EOS).
    steps : int
        AdamW steps per :meth:`fit`.
    batch_size : int
        Rows per step.
    lr : float
        Learning rate (constant after 10 % linear warm-up).
    seed : int
        Initial weights and minibatch order.
    sample : bool
        Sample actions instead of taking the most likely legal one.
    temperature : float
        Softmax temperature when sampling.
    progress : bool
        Show a tqdm bar while training (when tqdm is installed).

    Examples
    --------
    >>> from fastnips.rl.teacher import CombinationLock, ScriptedTeacher, build_dataset  # doctest: +SKIP
    >>> rows = build_dataset("bc", CombinationLock(3, n_runes=4), ScriptedTeacher(), 60).rows  # doctest: +SKIP
    >>> student = TinyDecoderStudent(steps=150, progress=False).fit(rows)  # doctest: +SKIP
    """

    def __init__(self, d_model: int = 64, n_layers: int = 2, n_heads: int = 2, d_ff: int = 160,
                 max_seq: int = 256, *, steps: int = 200, batch_size: int = 32, lr: float = 3e-3, seed: int = 0,
                 sample: bool = False, temperature: float = 1.0, progress: bool = True):
        torch = _optional.torch()
        from ...prune.tiny import TinyConfig

        for name, v in (("steps", steps), ("batch_size", batch_size)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name}: expected a positive int, got {v!r}")
        if not lr > 0 or not temperature > 0:
            raise ValueError(f"lr and temperature must be positive, got lr={lr!r}, temperature={temperature!r}")
        self.config = TinyConfig(vocab=258, d_model=d_model, n_layers=n_layers, n_heads=n_heads, d_ff=d_ff,
                                 max_seq=max_seq)
        self.steps, self.batch_size, self.lr, self.seed = steps, batch_size, float(lr), int(seed)
        self.sample, self.temperature, self.progress = bool(sample), float(temperature), bool(progress)
        self.model = None
        self.losses: list[float] = []
        self._cache: dict = {}
        self._torch = torch

    def _encode(self, prompt: str, completion: str) -> tuple[list[int], int]:
        p = list(prompt.encode("utf-8"))
        ids = [BOS, *p, *completion.encode("utf-8"), EOS]
        if len(ids) > 4 * self.config.max_seq:
            raise ValueError(f"a row of {len(ids)} tokens exceeds 4 x max_seq={self.config.max_seq}")
        return ids, 1 + len(p)  # tokens, index of the first completion token

    def _batch(self, encoded: Sequence[tuple[list[int], int]]):
        torch = self._torch
        width = max(len(ids) for ids, _ in encoded)
        inp = torch.full((len(encoded), width), EOS, dtype=torch.long)
        lab = torch.full((len(encoded), width), -100, dtype=torch.long)
        for i, (ids, start) in enumerate(encoded):
            inp[i, :len(ids)] = torch.tensor(ids)
            lab[i, start:len(ids)] = inp[i, start:len(ids)]
        return inp, lab  # right padding: causal attention never lets it reach the real tokens

    def fit(self, rows: Sequence[dict]) -> TinyDecoderStudent:
        """Train a fresh decoder on ``rows`` (prompt-completion dicts); return self."""
        torch = self._torch
        from ...prune.tiny import TinyDecoder

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            self.model = TinyDecoder(self.config)
        self._cache.clear()
        self.losses = []
        if not rows:
            self.model.eval()
            return self
        encoded = [self._encode(r["prompt"], r["completion"]) for r in rows]
        opt = torch.optim.AdamW(self.model.parameters(), lr=self.lr, weight_decay=0.0)
        rng = np.random.default_rng(self.seed)
        warm = max(1, self.steps // 10)
        bar = _bar(self.steps, self.progress)
        self.model.train()
        for step in range(self.steps):
            for g in opt.param_groups:
                g["lr"] = self.lr * min(1.0, (step + 1) / warm)
            pick = rng.integers(len(encoded), size=min(self.batch_size, len(encoded)))
            inp, lab = self._batch([encoded[i] for i in pick])
            loss = self.model(inp, labels=lab).loss
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            opt.step()
            self.losses.append(float(loss.detach()))
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{self.losses[-1]:.3f}", refresh=False)
        if bar is not None:
            bar.close()
        self.model.eval()
        return self

    def scores(self, prompt: str, actions: Sequence[str]) -> np.ndarray:
        """:math:`\\log p(a\\,\\mathrm{EOS} \\mid \\mathrm{prompt})` for each legal action (cached per state)."""
        if self.model is None:
            raise RuntimeError("TinyDecoderStudent: call fit(rows) before acting")
        key = (prompt, tuple(actions))
        if key not in self._cache:
            torch = self._torch
            inp, lab = self._batch([self._encode(prompt, a) for a in actions])
            with torch.no_grad():
                logp = torch.log_softmax(self.model(inp).logits[:, :-1].float(), -1)
            tgt = lab[:, 1:]
            picked = logp.gather(-1, tgt.clamp(min=0)[..., None])[..., 0] * (tgt != -100)
            self._cache[key] = picked.sum(1).numpy().astype(np.float64)
        return self._cache[key]

    def act(self, prompt: str, actions: Sequence[str], rng: np.random.Generator) -> str:
        """The most likely legal action (or one sampled from their scores when ``sample``)."""
        s = self.scores(prompt, list(actions))
        if not self.sample:
            return actions[int(np.argmax(s))]
        p = np.exp((s - s.max()) / self.temperature)
        return actions[int(rng.choice(len(actions), p=p / p.sum()))]
