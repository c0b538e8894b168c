"""Students of fastnips.rl.teacher and the budgeted schedule: the tabular student, train_on_budget's exact spend,
the covariate-shift claim on the combination lock over a fixed seed set, and the TinyDecoder student (unit
checks by default, end to end under -m slow)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fastnips.rl.teacher import (
    CONSTRUCTIONS,
    CombinationLock,
    KeyDoorMaze,
    ScriptedTeacher,
    TabularStudent,
    build_dataset,
    make_prompt,
    success_rate,
    train_on_budget,
)

SEEDS = range(10)  # the fixed seed set of the statistical test


def test_tabular_student_counts_and_breaks_ties_uniformly():
    rows = [{"prompt": "p", "completion": c, "metadata": {}} for c in ("a", "b", "b", "c", "c")]
    st = TabularStudent().fit(rows)
    rng = np.random.default_rng(0)
    picks = [st.act("p", ["a", "b", "c"], rng) for _ in range(400)]
    assert set(picks) == {"b", "c"}
    assert abs(picks.count("b") / 400 - 0.5) < 0.1
    assert st.act("p", ["a", "b"], rng) == "b"  # the legal subset decides
    unseen = [st.act("q", ["x", "y", "z"], rng) for _ in range(300)]
    assert set(unseen) == {"x", "y", "z"}
    assert st.fit([]).table == {}


@pytest.mark.parametrize("construction", CONSTRUCTIONS)
def test_train_on_budget_spends_the_budget_over_rounds(construction):
    env = KeyDoorMaze(5, seed=1)
    fits = []

    class Spy(TabularStudent):
        def fit(self, rows):
            fits.append(len(rows))
            return super().fit(rows)

    _st, ds = train_on_budget(env, ScriptedTeacher(), Spy(), construction, 101, rounds=4, k=2, seed=3)
    assert ds.info["spent"] == 101
    assert ds.info["budget"] == 101
    assert [r["spent"] for r in ds.info["rounds"]] == [25, 25, 25, 26]
    assert [r["construction"] for r in ds.info["rounds"]] == ["bc"] + [construction] * 3
    assert len(fits) == 4
    assert fits == sorted(fits)
    assert fits[-1] == len(ds)
    assert ds.teacher_cost + sum(r["cost_discarded"] for r in ds.info["rounds"]) == 101


def test_train_on_budget_passes_execute_to_the_continuation_rounds():
    env = CombinationLock(6)
    _, ds = train_on_budget(env, ScriptedTeacher(), TabularStudent(), "continuation", 80, k=3, execute=False)
    assert [r["execute"] for r in ds.info["rounds"]] == [True, False, False, False]
    assert ds.info["spent"] == 80
    assert {r["metadata"]["origin"] for r in ds[20:]} <= {"reset", "student"}  # nothing teacher-induced after BC


def test_train_on_budget_in_tokens_ends_within_one_call():
    env = CombinationLock(6)
    _, ds = train_on_budget(env, ScriptedTeacher(), TabularStudent(), "continuation", 250, unit="tokens", k=3)
    assert 250 - 6 < ds.info["spent"] <= 250  # "turn d" costs 6 bytes, "back" 4


def test_train_on_budget_refuses_bad_arguments():
    env, t = CombinationLock(3), ScriptedTeacher()
    with pytest.raises(ValueError, match="construction: expected one of"):
        train_on_budget(env, t, TabularStudent(), "unfiltered", 10)
    with pytest.raises(ValueError, match="rounds: expected a positive int"):
        train_on_budget(env, t, TabularStudent(), "bc", 10, rounds=0)
    with pytest.raises(ValueError, match="budget: expected a non-negative int"):
        train_on_budget(env, t, TabularStudent(), "bc", -5)
    with pytest.raises(ValueError, match="seed: expected a non-negative int"):
        train_on_budget(env, t, TabularStudent(), "bc", 10, seed=-3)
    with pytest.raises(ValueError, match="n: expected a positive number of episodes"):
        success_rate(env, TabularStudent(), 0)


def test_success_rate_of_the_teacher_and_of_a_blind_student():
    env = CombinationLock(3, n_runes=4)

    class Oracle(TabularStudent):
        def act(self, prompt, actions, rng):
            return env.oracle_plan(1)[0]

    assert success_rate(env, Oracle(), 50) == 1.0
    # uniform play: opening 3 dials within 6 steps, each step right with probability 1/5 -- far below 0.1
    assert success_rate(env, TabularStudent(), 300, seed=1) < 0.1


def _gap(T, seed, budget=60):
    env = CombinationLock(T)
    out = {}
    for c in ("bc", "continuation"):
        st, _ = train_on_budget(env, ScriptedTeacher(), TabularStudent(), c, budget, k=1, rounds=4, seed=seed)
        out[c] = success_rate(env, st, 200, seed=100 + seed)
    return out["continuation"] - out["bc"]


def test_short_continuations_beat_bc_and_the_gap_grows_with_the_horizon():
    """Construction (i) with k = 1 against BC at the same budget (60 calls, 4 rounds), tabular student, 10 seeds,
    horizons 4, 8, 16. BC's student never sees a jammed dial and acts at random there; (i) is taught ``back``.
    Expected from the O(eps T^2) vs O(eps T) bound: no gap at T = 4 (few mistakes, slack absorbs them) and a
    gap that widens with T. Measured on this seed set: mean gaps 0.00, 0.19, 0.32."""
    gaps = {T: np.array([_gap(T, s) for s in SEEDS]) for T in (4, 8, 16)}
    means = {T: g.mean() for T, g in gaps.items()}
    assert means[4] < means[8] < means[16]
    assert (gaps[16] > 0).sum() >= 9  # sign test, one-sided p = 11/1024 ~ 0.011 under "no effect"
    # Welch t statistic of the gap at T = 16 vs T = 4 (df ~ 18; t > 3 is one-sided p < 0.004)
    a, b = gaps[16], gaps[4]
    t = (a.mean() - b.mean()) / math.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
    assert t > 3, (means, t)


# --- the TinyDecoder student --------------------------------------------------------------------------------


@pytest.fixture
def torch1():
    torch = pytest.importorskip("torch", reason="the TinyDecoder student needs torch")
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield torch
    torch.set_num_threads(n)


def _tiny(**kw):
    from fastnips.rl.teacher import TinyDecoderStudent

    return TinyDecoderStudent(d_model=32, n_layers=1, n_heads=2, d_ff=64, progress=False, **kw)


def test_tiny_student_scores_are_the_completion_log_likelihood(torch1):
    st = _tiny(steps=3).fit(build_dataset("bc", CombinationLock(3, n_runes=4), ScriptedTeacher(), 12).rows)
    prompt, actions = make_prompt("The dial is jammed."), ["turn 0", "back", "turn 13"]
    got = st.scores(prompt, actions)
    for a, s in zip(actions, got, strict=True):  # one unpadded sequence at a time, summed by hand
        ids = [256, *prompt.encode(), *a.encode(), 257]
        with torch1.no_grad():
            logp = torch1.log_softmax(st.model(torch1.tensor([ids])).logits[0, :-1].float(), -1)
        start = 1 + len(prompt.encode())
        manual = sum(float(logp[j - 1, ids[j]]) for j in range(start, len(ids)))
        assert s == pytest.approx(manual, abs=1e-4)
    assert st.act(prompt, actions, np.random.default_rng(0)) == actions[int(np.argmax(got))]


def test_tiny_student_shows_a_progress_bar(torch1, capsys):
    pytest.importorskip("tqdm", reason="the bar needs tqdm")
    from fastnips.rl.teacher import TinyDecoderStudent

    rows = build_dataset("bc", CombinationLock(3, n_runes=4), ScriptedTeacher(), 12).rows
    TinyDecoderStudent(d_model=32, n_layers=1, n_heads=2, d_ff=64, steps=3).fit(rows)
    err = capsys.readouterr().err
    assert "fit student" in err
    assert "/3 " in err  # the total (refreshes are throttled by tqdm)


def test_tiny_student_fit_is_seeded_and_bad_arguments_are_refused(torch1):
    rows = build_dataset("bc", CombinationLock(3, n_runes=4), ScriptedTeacher(), 12).rows
    a, b = _tiny(steps=4, seed=1).fit(rows), _tiny(steps=4, seed=1).fit(rows)
    assert a.losses == b.losses
    assert len(a.losses) == 4
    with pytest.raises(RuntimeError, match="call fit"):
        _tiny().act("p", ["x"], np.random.default_rng(0))
    with pytest.raises(ValueError, match="steps: expected a positive int"):
        _tiny(steps=0)
    sampler = _tiny(steps=2, sample=True, temperature=5.0).fit(rows)
    picks = {sampler.act(make_prompt("The dial is jammed."), ["back", "turn 0", "turn 1"], np.random.default_rng(s))
             for s in range(30)}
    assert len(picks) > 1  # a hot softmax over barely trained scores explores


@pytest.mark.slow
def test_tiny_student_end_to_end_learns_the_lock_and_recovery_only_from_its_own_states(torch1):
    from fastnips.rl.teacher import TinyDecoderStudent

    env = CombinationLock(4, n_runes=8)
    jammed = make_prompt("The dial is jammed.")
    students = {}
    for c in ("bc", "continuation"):
        st = TinyDecoderStudent(steps=150, progress=False)
        st, ds = train_on_budget(env, ScriptedTeacher(), st, c, 80, k=1, rounds=2, seed=0)
        assert ds.info["spent"] == 80
        students[c] = (st, ds)
    for c, (st, _) in students.items():
        assert success_rate(env, st, 50, seed=1) >= 0.9, c
        assert st.losses[-1] < 0.1
    bc_rows, cont_rows = students["bc"][1], students["continuation"][1]
    assert not any(r["prompt"] == jammed for r in bc_rows)  # BC never visits a jammed dial
    assert any(r["prompt"] == jammed and r["completion"] == "back" for r in cont_rows)
    cont = students["continuation"][0]
    legal = env.actions
    assert cont.act(jammed, legal, np.random.default_rng(0)) == "back"
    assert TabularStudent().fit(cont_rows).act(jammed, legal, np.random.default_rng(0)) == "back"
