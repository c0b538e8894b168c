"""fastnips.rl.teacher: the ledger, the five builders (exact budget use, the DAgger and BC limits), the SFT file
format, and refusals of bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fastnips.rl.teacher import (
    CONSTRUCTIONS,
    ArithmeticTool,
    BudgetExceededError,
    CombinationLock,
    IllegalActionError,
    KeyDoorMaze,
    Ledger,
    ScriptedTeacher,
    SFTDataset,
    TabularStudent,
    build_dataset,
    make_prompt,
)


class RandomStudent:
    """Uniform over legal actions (the untrained student)."""

    def act(self, prompt, actions, rng):
        return actions[int(rng.integers(len(actions)))]

    def fit(self, rows):
        return self


class AnswerStudent(RandomStudent):
    """Answers at once: on ArithmeticTool its rollout has the reset state only."""

    def act(self, prompt, actions, rng):
        return "answer"


MAZE_ACTIONS = ["go north", "go south", "go east", "go west", "take key", "open door"]


class IllegalTeacher:
    def next_actions(self, env, k):
        return ["fly away"]


class EmptyTeacher:
    def next_actions(self, env, k):
        return []


# --- the ledger ---------------------------------------------------------------------------------------------


def test_ledger_counts_calls_and_tokens_and_refuses_overspending():
    led = Ledger(5)
    assert [led.charge("go north") for _ in range(5)] == [1] * 5
    assert led.spent == 5
    assert led.remaining == 0
    with pytest.raises(BudgetExceededError, match="1 calls, 0 of 5 left"):
        led.charge("go north")
    assert led.spent == 5  # a refused charge spends nothing
    tok = Ledger(20, unit="tokens")
    assert tok.cost("go north") == 8
    assert tok.cost("é") == 2
    assert Ledger(20, unit="tokens", tokenizer=str.split).cost("go north") == 2
    assert not tok.can_afford("x" * 21)
    assert tok.refused == 21


def test_sub_ledgers_charge_the_parent_and_are_capped_by_it():
    parent = Ledger(10)
    a = parent.sub(7)
    for _ in range(7):
        a.charge("a")
    b = parent.sub(7)  # only 3 left
    assert b.budget == 3
    assert parent.remaining == 3
    b.charge("b")
    assert parent.spent == 8
    assert b.spent == 1


@pytest.mark.parametrize("bad", [-1, 2.5, True, "10"])
def test_ledger_refuses_bad_budgets(bad):
    with pytest.raises(ValueError, match="budget: expected a non-negative int"):
        Ledger(bad)
    with pytest.raises(ValueError, match="budget: expected a non-negative int"):
        build_dataset("bc", CombinationLock(3), ScriptedTeacher(), bad)


def test_ledger_refuses_unknown_unit():
    with pytest.raises(ValueError, match=r"unit: expected one of \('calls', 'tokens'\)"):
        Ledger(3, unit="dollars")


# --- exact budget consumption -------------------------------------------------------------------------------


@pytest.mark.parametrize("construction", CONSTRUCTIONS)
@pytest.mark.parametrize("unit", ["calls", "tokens"])
@pytest.mark.parametrize("budget", [0, 1, 37, 200])
def test_each_construction_spends_the_budget_to_within_one_call(construction, unit, budget):
    env = KeyDoorMaze(5, seed=2)
    ds = build_dataset(construction, env, ScriptedTeacher(), budget, student=RandomStudent(), k=3, unit=unit,
                       seed=1)
    info = ds.info
    costs = [Ledger(1, unit).cost(a) for a in MAZE_ACTIONS]
    assert info["spent"] <= budget
    assert budget - info["spent"] < max(costs)  # what is left cannot pay for one more teacher action
    assert info["refused"] is not None
    assert budget - info["spent"] < info["refused"]
    if unit == "calls":
        assert info["spent"] == budget
    # rows kept + rows discarded by the filter account for every charge, each with its own cost
    assert ds.teacher_cost + info["cost_discarded"] == info["spent"]
    assert len(ds) + info["rows_discarded"] == info["charges"]
    for r in ds:
        assert r["metadata"]["teacher_cost"] == Ledger(1, unit).cost(r["completion"])
        assert r["metadata"]["construction"] == construction


def test_filtered_keeps_only_solved_segments_and_pays_for_the_rest():
    env = CombinationLock(6, slack=2)  # little slack: many student states are beyond rescue
    ds = build_dataset("filtered", env, ScriptedTeacher(), 300, student=RandomStudent(), seed=0)
    assert ds.info["rows_discarded"] > 0
    assert ds.info["spent"] == 300
    assert ds.teacher_cost == 300 - ds.info["rows_discarded"]
    # every kept segment ends in an open lock: replay it
    by_episode: dict[int, list[dict]] = {}
    for r in ds:
        by_episode.setdefault(r["metadata"]["episode"], []).append(r)
    for rows in by_episode.values():
        assert rows[-1]["completion"].startswith("turn")
        assert [r["metadata"]["step"] for r in rows] == list(range(rows[0]["metadata"]["step"],
                                                                   rows[0]["metadata"]["step"] + len(rows)))
        assert [r["metadata"]["origin"] for r in rows[1:]] == ["teacher"] * (len(rows) - 1)


def test_failed_only_skips_tasks_the_student_solves():
    env = CombinationLock(4)
    teacher = ScriptedTeacher()
    expert = TabularStudent().fit(build_dataset("bc", env, teacher, 4000, seed=5).rows)
    ds = build_dataset("failed_only", env, teacher, 50, student=expert, seed=0, max_free_rollouts=300)
    assert len(ds) == 0
    assert ds.info["spent"] == 0
    assert "solved rollouts in a row" in ds.info["stopped"]
    ds2 = build_dataset("failed_only", env, teacher, 50, student=RandomStudent(), seed=0)
    assert ds2.info["spent"] == 50
    assert ds2.info["student_solved"] < ds2.info["student_rollouts"]


# --- the limits: DAgger and BC ------------------------------------------------------------------------------


def _strip(rows):
    return [(r["prompt"], r["completion"], r["metadata"]["origin"], r["metadata"]["task"], r["metadata"]["step"],
             r["metadata"]["teacher_cost"]) for r in rows]


@pytest.mark.parametrize("noise", [0.0, 0.3])
def test_one_step_continuations_at_every_student_state_are_daggers_relabelling(noise):
    env = KeyDoorMaze(5, seed=3)
    student = TabularStudent().fit(build_dataset("bc", env, ScriptedTeacher(), 15, seed=9).rows)
    kw = dict(student=student, seed=4)
    dag = build_dataset("dagger", env, ScriptedTeacher(noise, seed=1), 150, **kw)
    cont = build_dataset("continuation", env, ScriptedTeacher(noise, seed=1), 150, k=1, states="all", **kw)
    assert len(dag) == 150
    assert _strip(cont) == _strip(dag)
    # DAgger labels every state of a student episode: T one-step relabellings per episode
    per_episode = np.bincount([r["metadata"]["episode"] for r in dag])
    assert per_episode[:-1].min() >= 1
    assert per_episode[:-1].max() <= env.horizon
    # and it labels states the student reached, not the teacher
    assert {r["metadata"]["origin"] for r in dag} == {"reset", "student"}


def test_full_continuations_from_the_reset_state_are_bc_episodes():
    env = ArithmeticTool(3)
    cont = build_dataset("continuation", env, ScriptedTeacher(), 61, student=AnswerStudent(), k=env.horizon,
                         seed=2)
    episodes: dict[int, list[dict]] = {}
    for r in cont:
        episodes.setdefault(r["metadata"]["episode"], []).append(r)
    assert len(episodes) > 10
    for rows in episodes.values():  # each is the teacher's whole episode from reset(task): a BC episode
        task = rows[0]["metadata"]["task"]
        obs, plan = env.reset(task), env.oracle_plan(env.horizon)
        prompts = [make_prompt(obs)] + [make_prompt(env.step(a)[0]) for a in plan[:-1]]
        assert [r["completion"] for r in rows] == plan[:len(rows)]
        assert [r["prompt"] for r in rows] == prompts[:len(rows)]
        assert [r["metadata"]["origin"] for r in rows] == ["reset"] + ["teacher"] * (len(rows) - 1)


def test_continuation_length_k_caps_each_segment():
    env = CombinationLock(10)
    for k in (1, 3):
        ds = build_dataset("continuation", env, ScriptedTeacher(), 90, student=RandomStudent(), k=k, seed=0)
        per_episode = np.bincount([r["metadata"]["episode"] for r in ds])
        assert per_episode.max() == k
        assert ds.info["spent"] == 90
        firsts = [r for r in ds if r["metadata"]["origin"] in ("student", "reset")]
        assert len(firsts) == ds.info["segments"]


# --- bad input ----------------------------------------------------------------------------------------------


def test_bad_arguments_are_refused_before_any_work():
    env, teacher = CombinationLock(3), ScriptedTeacher()
    with pytest.raises(ValueError, match="construction: expected one of"):
        build_dataset("rejection", env, teacher, 10)
    for k in (0, -2, 1.5):
        with pytest.raises(ValueError, match="k: expected a continuation length >= 1"):
            build_dataset("continuation", env, teacher, 10, student=RandomStudent(), k=k)
    with pytest.raises(ValueError, match="student: construction 'filtered' rolls out a student"):
        build_dataset("filtered", env, teacher, 10)
    with pytest.raises(TypeError, match="teacher: expected an object with"):
        build_dataset("bc", env, object(), 10)
    with pytest.raises(TypeError, match="env: expected an object with"):
        build_dataset("bc", "lock", teacher, 10)
    for seed in (-1, 1.5, "0"):
        with pytest.raises(ValueError, match="seed: expected a non-negative int"):
            build_dataset("bc", env, teacher, 10, seed=seed)
    with pytest.raises(TypeError, match="tokenizer: expected a callable"):
        build_dataset("bc", env, teacher, 10, unit="tokens", tokenizer="gpt2")
    with pytest.raises(ValueError, match="max_free_rollouts: expected a positive int"):
        build_dataset("failed_only", env, teacher, 10, student=RandomStudent(), max_free_rollouts=0)
    with pytest.raises(ValueError, match="states: expected 'one' or 'all'"):
        build_dataset("continuation", env, teacher, 10, student=RandomStudent(), states="some")


@pytest.mark.parametrize("construction", CONSTRUCTIONS)
def test_a_teacher_with_an_illegal_action_is_refused(construction):
    with pytest.raises(IllegalActionError, match=r"teacher returned the illegal action 'fly away' at step \d+"):
        build_dataset(construction, CombinationLock(3), IllegalTeacher(), 10, student=RandomStudent())
    with pytest.raises(IllegalActionError, match="expected a non-empty list of actions"):
        build_dataset(construction, CombinationLock(3), EmptyTeacher(), 10, student=RandomStudent())


def test_an_illegal_student_action_is_refused():
    class Cheater(RandomStudent):
        def act(self, prompt, actions, rng):
            return "open the lock"

    with pytest.raises(IllegalActionError, match="student returned the illegal action 'open the lock'"):
        build_dataset("continuation", CombinationLock(3), ScriptedTeacher(), 10, student=Cheater())


def test_a_nondeterministic_environment_is_detected():
    class Flaky(CombinationLock):
        calls = 0

        def observation(self):
            self.calls += 1
            return super().observation() + str(self.calls)

    with pytest.raises(RuntimeError, match="env is not deterministic"):
        build_dataset("continuation", Flaky(6), ScriptedTeacher(), 20, student=RandomStudent(), states="all")


# --- the SFT file -------------------------------------------------------------------------------------------


def test_jsonl_round_trip_and_refusal_of_a_corrupted_file(tmp_path):
    ds = build_dataset("continuation", CombinationLock(4), ScriptedTeacher(), 25, student=RandomStudent(), k=2)
    path = ds.to_jsonl(tmp_path / "d.jsonl")
    back = SFTDataset.from_jsonl(path)
    assert back.texts()[3] == ds[3]["prompt"] + ds[3]["completion"]
    assert back == ds
    assert back.info["spent"] == 25
    lines = path.read_text().splitlines()
    edited = json.loads(lines[3])
    edited["completion"] = "turn 9"
    for name, text in [("edited", [*lines[:3], json.dumps(edited, sort_keys=True), *lines[4:]]),
                       ("reordered", [lines[0], lines[2], lines[1], *lines[3:]])]:
        (tmp_path / name).write_text("\n".join(text) + "\n")
        with pytest.raises(ValueError, match="do not match the header's sha256"):
            SFTDataset.from_jsonl(tmp_path / name)
    (tmp_path / "cut").write_text("\n".join(lines[:-2]) + "\n")
    with pytest.raises(ValueError, match="truncated or appended"):
        SFTDataset.from_jsonl(tmp_path / "cut")
    (tmp_path / "other").write_text('{"prompt": "p"}\n')
    with pytest.raises(ValueError, match="not a fastnips teacher SFT file"):
        SFTDataset.from_jsonl(tmp_path / "other")
    (tmp_path / "bin").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ValueError, match="not a UTF-8 JSONL file"):
        SFTDataset.from_jsonl(tmp_path / "bin")


def test_rows_are_checked():
    with pytest.raises(ValueError, match="row 0: metadata lacks"):
        SFTDataset([{"prompt": "p", "completion": "c", "metadata": {"origin": "reset"}}])
    with pytest.raises(ValueError, match="origin must be one of"):
        SFTDataset([{"prompt": "p", "completion": "c",
                     "metadata": {"construction": "bc", "origin": "oracle", "teacher_cost": 1}}])


def test_hf_dataset_has_trl_prompt_completion_columns():
    datasets = pytest.importorskip("datasets", reason="datasets is optional (pip install datasets)")
    ds = build_dataset("bc", CombinationLock(4), ScriptedTeacher(), 12)
    hf = ds.to_hf_dataset()
    assert isinstance(hf, datasets.Dataset)
    assert len(hf) == 12
    assert {"prompt", "completion", "metadata"} <= set(hf.column_names)
    assert hf[0]["prompt"] == ds[0]["prompt"]
    assert hf[0]["metadata"]["construction"] == "bc"
    assert hf[5]["prompt"].endswith("\nAction:\n")
    assert ds[5]["prompt"] == make_prompt(ds[5]["prompt"][:-9])


# --- the package surface ------------------------------------------------------------------------------------


def test_public_api_is_documented_and_typed():
    from ..test_api_docs import offenders

    assert offenders("rl.teacher") == []
    pytest.importorskip("torch", reason="TinyDecoderStudent needs torch")
    from fastnips.rl.teacher import TinyDecoderStudent

    assert TinyDecoderStudent.__doc__
    assert TinyDecoderStudent.fit.__doc__
    assert TinyDecoderStudent.act.__doc__


def test_the_package_imports_without_torch():
    import subprocess
    import sys

    code = ("import sys; sys.modules['torch'] = None\n"
            "import fastnips.rl, fastnips.rl.teacher as t\n"
            "ds = t.build_dataset('bc', t.CombinationLock(3), t.ScriptedTeacher(), 5)\n"
            "assert len(ds) == 5 and 'torch' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
            "try:\n    t.TinyDecoderStudent()\nexcept ImportError as e:\n    print('ERR', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "ERR this feature needs the optional package 'torch'" in out.stdout


def test_demo_rows():
    from fastnips.rl.teacher._demo import DEMO_BUDGET, demo_teacher

    rows = demo_teacher(0)
    assert [r["values"]["strategy"] for r in rows] == ["bc", "continuation", "filtered", "failed_only"]
    for r in rows:
        assert set(r) == {"task", "backend", "measure", "result", "detail", "values"}
        assert r["values"]["spent"] == [DEMO_BUDGET] * 3
        assert 0 <= r["values"]["success"] <= 1
    assert demo_teacher(0)[1]["values"]["per_seed"] == rows[1]["values"]["per_seed"]  # seeded


def test_docstring_examples_run():
    import doctest
    import importlib

    for name in ("ledger", "dataset", "builders", "envs", "training"):
        mod = importlib.import_module(f"fastnips.rl.teacher.{name}")
        result = doctest.testmod(mod)
        assert result.failed == 0
        assert result.attempted > 0, name


@pytest.mark.parametrize("noise", [0.0, 0.3])
def test_unexecuted_continuations_of_length_T_are_daggers_relabelling(noise):
    env = CombinationLock(6)
    student = TabularStudent().fit(build_dataset("bc", env, ScriptedTeacher(), 20, seed=9).rows)
    dag = build_dataset("dagger", env, ScriptedTeacher(noise, seed=2), 120, student=student, seed=5)
    win = build_dataset("continuation", env, ScriptedTeacher(noise, seed=2), 120, student=student, seed=5,
                        k=env.horizon, execute=False)
    assert len(dag) == 120
    assert _strip(win) == _strip(dag)
    # shorter windows: k consecutive student states per rollout, none executed
    short = build_dataset("continuation", env, ScriptedTeacher(), 60, student=student, seed=5, k=3, execute=False)
    by_episode: dict[int, list[int]] = {}
    for r in short:
        by_episode.setdefault(r["metadata"]["episode"], []).append(r["metadata"]["step"])
    for steps in list(by_episode.values())[:-1]:
        assert len(steps) == 3
        assert steps == list(range(steps[0], steps[0] + 3))
    assert {r["metadata"]["origin"] for r in short} <= {"reset", "student"}
    with pytest.raises(ValueError, match="execute=False: only for construction='continuation'"):
        build_dataset("filtered", env, ScriptedTeacher(), 10, student=student, execute=False)
