r"""Students, the budgeted training schedule and the success rate.

:func:`train_on_budget` spends a budget :math:`B` in ``rounds`` rounds, DAgger's schedule (Ross et al. 2011):
round 0 is BC with :math:`\lfloor B / R \rfloor` (DAgger's first iteration uses the expert, :math:`\beta_1 = 1`),
the student is trained on it; each later round :math:`r` builds the strategy's data with the current student
from :math:`\lfloor \text{left} / (R - r) \rfloor` (the last round takes all that is left), appends it to
everything so far and retrains the student from scratch on the aggregate. Strategy ``"bc"`` spends every
round on BC, so all strategies see the same budget, the same number of fits and the same warm start.

:class:`TabularStudent` is the fast stand-in for statistical tests: a count table
:math:`\hat\pi(a \mid x) \propto N(x, a)` over exact prompts, greedy with uniform tie-breaking among legal
actions, uniform at prompts it never saw. Unseen states are where covariate shift bites, so it shows the
mechanism with no function approximation at all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from .builders import CONSTRUCTIONS, build_dataset
from .dataset import SFTDataset
from .ledger import Ledger
from .protocols import Student, Teacher, TextEnv, check_action, check_protocols, make_prompt

__all__ = ["TabularStudent", "success_rate", "train_on_budget"]


class TabularStudent:
    """Count-based imitation of SFT rows (module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> st = TabularStudent().fit([{"prompt": "p", "completion": "b", "metadata": {}}])
    >>> st.act("p", ["a", "b"], np.random.default_rng(0))
    'b'
    """

    def __init__(self) -> None:
        self.table: dict[str, Counter] = {}

    def fit(self, rows: Sequence[dict]) -> TabularStudent:
        """Count ``(prompt, completion)`` pairs of ``rows`` (replacing earlier counts); return self."""
        table: dict[str, Counter] = {}
        for r in rows:
            table.setdefault(r["prompt"], Counter())[r["completion"]] += 1
        self.table = table
        return self

    def act(self, prompt: str, actions: Sequence[str], rng: np.random.Generator) -> str:
        """The most frequent legal completion for ``prompt`` (ties and unseen prompts: uniform)."""
        counts = self.table.get(prompt)
        if counts:
            best = max(counts[a] for a in actions)
            if best > 0:
                tied = [a for a in actions if counts[a] == best]
                return tied[0] if len(tied) == 1 else tied[int(rng.integers(len(tied)))]
        return actions[int(rng.integers(len(actions)))]


def success_rate(env: TextEnv, student: Student, n: int = 200, *, seed: int = 0,
                 tasks: Sequence[int] | None = None) -> float:
    """Fraction of episodes the student solves alone, on ``tasks`` or on ``n`` tasks drawn with ``seed``.

    With tasks drawn at random, the standard error is :math:`\\sqrt{p(1-p)/n} \\le 0.5/\\sqrt{n}`.
    """
    check_protocols(env, None, student)
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed: expected a non-negative int, got {seed!r}")
    rng = np.random.default_rng([seed, 0xE7A1])
    if tasks is None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n: expected a positive number of episodes, got {n!r}")
        tasks = rng.integers(env.n_tasks, size=n)
    solved = 0
    for task in tasks:
        obs, done = env.reset(int(task)), False
        while not done:
            legal = env.available_actions()
            a = check_action(student.act(make_prompt(obs), legal, rng), legal, "student", f"in task {task}")
            obs, done = env.step(a)
        solved += bool(env.success())
    return solved / max(1, len(tasks))


def train_on_budget(env: TextEnv, teacher: Teacher, student: Student, construction: str, budget: int, *,
                    k: int = 1, rounds: int = 4, seed: int = 0, unit: str = "calls", tokenizer: object = None,
                    states: str = "one", execute: bool = True,
                    callback: Callable[[int, SFTDataset], object] | None = None) -> tuple[Student, SFTDataset]:
    r"""Train ``student`` with one strategy on a teacher budget, in rounds (module docstring).

    Parameters
    ----------
    env, teacher, student
        The three roles; ``student.fit`` is called once per round on all rows so far.
    construction : str
        One of :data:`~fastnips.rl.teacher.CONSTRUCTIONS`.
    budget : int
        :math:`B`; the total spend ends within one teacher call of it.
    k, states, unit, tokenizer, execute
        Passed to :func:`~fastnips.rl.teacher.build_dataset` (``execute`` to the ``"continuation"`` rounds).
    rounds : int
        :math:`R \ge 1`; with ``R = 1`` every strategy is plain BC.
    seed : int
        Round ``r`` builds with seed ``(seed, r)``.
    callback : callable, optional
        ``callback(round, aggregate)`` after each fit (for learning curves).

    Returns
    -------
    (student, SFTDataset)
        The trained student and the aggregated rows; ``info["spent"]`` and ``info["budget"]`` are the totals,
        ``info["rounds"]`` each round's build facts.
    """
    if construction not in CONSTRUCTIONS:
        raise ValueError(f"construction: expected one of {CONSTRUCTIONS}, got {construction!r}")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"rounds: expected a positive int, got {rounds!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed: expected a non-negative int, got {seed!r}")
    ledger = Ledger(budget, unit, tokenizer)
    rows: list[dict] = []
    per_round = []
    for r in range(rounds):
        amount = ledger.remaining if r == rounds - 1 else ledger.remaining // (rounds - r)
        kind = "bc" if r == 0 or construction == "bc" else construction
        seed_r = int(np.random.SeedSequence([seed, r]).generate_state(1)[0])
        ds = build_dataset(kind, env, teacher, ledger.sub(amount), student=student, k=k, states=states, seed=seed_r,
                           execute=execute or kind != "continuation")
        rows += ds.rows
        per_round.append(ds.info)
        student.fit(rows)
        if callback is not None:
            callback(r, SFTDataset(rows, {"construction": construction}))
    info = {"construction": construction, "k": k if construction == "continuation" else None, "seed": seed,
            **ledger.summary(), "rounds": per_round}
    return student, SFTDataset(rows, info)
