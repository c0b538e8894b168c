"""The synthetic text environments of fastnips.rl.teacher and their scripted teachers: optimality against
independent oracles (breadth-first search over observations, Python's own arithmetic), recoverable mistakes,
horizons, determinism, refusals; TextWorld games generated offline where textworld is installed."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from fastnips.rl.teacher import (
    ArithmeticTool,
    CombinationLock,
    IllegalActionError,
    KeyDoorMaze,
    ScriptedTeacher,
    TextEnv,
    build_dataset,
)


def _play(env, task, actions):
    obs = env.reset(task)
    done = False
    for a in actions:
        obs, done = env.step(a)
    return obs, done


def _bfs_shortest(env, task, max_depth=40, prune=True):
    """Fewest actions to success from reset(task), by BFS over action sequences via the public API only;
    ``prune`` merges sequences that reach the same observation (right where observations are the state)."""
    start = env.reset(task)
    seen, todo = {start}, deque([()])
    while todo:
        path = todo.popleft()
        if len(path) > max_depth:
            break
        _play(env, task, path)
        for a in env.available_actions():
            obs, done = _play(env, task, (*path, a))
            if env.success():
                return len(path) + 1
            if not done and (not prune or obs not in seen):
                seen.add(obs)
                todo.append((*path, a))
    return None


def _teacher_episode(env, task, teacher=None):
    teacher = teacher or ScriptedTeacher()
    env.reset(task)
    steps, done = 0, False
    while not done:
        plan = teacher.next_actions(env, 3)
        for a in plan:
            _, done = env.step(a)
            steps += 1
            if done:
                break
    return steps, env.success()


@pytest.mark.parametrize("env", [CombinationLock(4, seed=1), KeyDoorMaze(5, seed=4), KeyDoorMaze(4, 0.0, seed=1)],
                         ids=["lock", "maze", "open-maze"])
def test_scripted_teacher_is_optimal(env):
    assert isinstance(env, TextEnv)
    for task in range(min(env.n_tasks, 6)):
        steps, solved = _teacher_episode(env, task)
        assert solved
        # the lock's observation names the rune, not the dial: no merging of equal observations there
        assert steps == _bfs_shortest(env, task, prune=not isinstance(env, CombinationLock))


def test_arithmetic_teacher_solves_every_task_in_the_canonical_order():
    env = ArithmeticTool(2, seed=3)
    shorter = 0
    for task in range(12):
        steps, solved = _teacher_episode(env, task)
        assert solved
        assert steps <= env.n_ops + 1
        best = _bfs_shortest(env, task)
        assert best <= steps
        shorter += best < steps  # a coincidence (e.g. (a + b) - b) can give a shorter way to the answer
    assert shorter < 12


def test_lock_combination_lengths_and_branching():
    env = CombinationLock(7, n_digits=3, slack=2)
    assert env.horizon == 9
    for task in range(5):
        env.reset(task)
        assert env.available_actions() == ["turn 0", "turn 1", "turn 2", "back"]
        assert _teacher_episode(env, task) == (7, True)


def test_lock_mistakes_are_recoverable_within_the_slack():
    env = CombinationLock(4, slack=2)
    env.reset(0)
    right = env.oracle_plan(1)[0]
    wrong = next(a for a in env.available_actions() if a.startswith("turn") and a != right)
    env.step(wrong)
    assert env.observation() == "The dial is jammed."
    assert env.oracle_plan(2) == ["back", right]
    for a in env.oracle_plan(10):
        env.step(a)
    assert env.success()
    assert env.t == 6
    env.reset(0)  # two mistakes use the slack up: no way to open within the horizon
    env.step(wrong)
    env.step("back")
    env.step(wrong)
    for a in env.oracle_plan(10):
        _, done = env.step(a)
    assert done
    assert not env.success()


def test_arithmetic_answers_match_python_and_clear_recovers():
    env = ArithmeticTool(3, seed=7)
    for task in range(20):
        env.reset(task)
        expected = eval(env.expr)  # the expression as printed, evaluated by Python
        steps, solved = _teacher_episode(env, task)
        assert solved
        assert steps <= env.n_ops + 1
        assert env.answered == expected
    env.reset(0)
    nums, ops = env.problem(0)
    bad = next(a for a in env.available_actions() if a not in ("clear", "answer", f"{ops[0]} {nums[1]}")
               and int(a.split()[1]) != nums[1])
    env.step(bad)
    assert env.oracle_plan(1) == ["clear"]
    assert _teacher_episode(env, 0)[1]


def test_maze_branching_follows_wall_density():
    open_maze, walled = KeyDoorMaze(6, 0.0, seed=0), KeyDoorMaze(6, 0.35, seed=0)
    def mean_exits(env):
        return np.mean([len(list(env._neighbours(c))) for c in env.cells])
    assert mean_exits(open_maze) > mean_exits(walled)
    assert open_maze.n_tasks == 35  # 36 rooms but the door's


@pytest.mark.parametrize("env", [CombinationLock(6), KeyDoorMaze(5, seed=2), ArithmeticTool(3)],
                         ids=["lock", "maze", "arith"])
def test_random_play_respects_the_horizon_and_is_deterministic(env):
    rng = np.random.default_rng(0)
    for task in range(10):
        obs, done, trace, actions = env.reset(task), False, [], []
        while not done:
            a = env.available_actions()[int(rng.integers(len(env.available_actions())))]
            obs, done = env.step(a)
            trace.append(obs)
            actions.append(a)
        assert len(actions) <= env.horizon
        assert env.available_actions() == []
        with pytest.raises(RuntimeError, match="the episode is over"):
            env.step(actions[-1])
        env.reset(task)
        assert [env.step(a)[0] for a in actions] == trace


def test_bad_environment_arguments():
    with pytest.raises(ValueError, match="length: expected an int >= 1"):
        CombinationLock(0)
    with pytest.raises(ValueError, match="n_digits: expected an int >= 2"):
        CombinationLock(3, n_digits=1)
    with pytest.raises(ValueError, match=r"wall_density: expected a float in \[0, 1\)"):
        KeyDoorMaze(4, wall_density=1.2)
    with pytest.raises(ValueError, match="slack: expected a float >= 1"):
        KeyDoorMaze(4, slack=0.5)
    with pytest.raises(ValueError, match=r"task: expected an int in \[0, 5\)"):
        CombinationLock(3, n_tasks=5).reset(5)
    env = CombinationLock(3)
    env.reset(0)
    with pytest.raises(IllegalActionError, match="step returned the illegal action 'turn 7'"):
        env.step("turn 7")
    with pytest.raises(ValueError, match="noise: expected a probability"):
        ScriptedTeacher(noise=1.5)


def test_noisy_teacher_answers_one_legal_action_and_sometimes_errs():
    env = CombinationLock(6)
    teacher = ScriptedTeacher(noise=0.5, seed=0)
    env.reset(0)
    answers = [teacher.next_actions(env, 4) for _ in range(200)]
    assert all(len(a) == 1 and a[0] in env.available_actions() for a in answers)
    share_optimal = np.mean([a == env.oracle_plan(1) for a in answers])
    assert 0.5 < share_optimal < 0.75  # 1 - 0.5 + 0.5/5 = 0.6 expected


def test_textworld_games_generate_offline_and_their_walkthrough_is_a_teacher(tmp_path):
    pytest.importorskip("textworld", reason="textworld is optional (pip install textworld); its wheel ships "
                                            "Inform 7, so games are generated here without a download")
    from fastnips.rl.teacher.textworld_env import TextWorldEnv, make_textworld_games

    files = make_textworld_games(1, tmp_path, seed=3, nb_rooms=2, nb_objects=2, quest_length=2)
    env = TextWorldEnv(files, horizon=12)
    try:
        assert isinstance(env, TextEnv)
        steps, solved = _teacher_episode(env, 0)
        assert solved
        assert steps == 2

        class Wanderer:
            def act(self, prompt, actions, rng):
                return actions[int(rng.integers(len(actions)))]

            def fit(self, rows):
                return self

        ds = build_dataset("continuation", env, ScriptedTeacher(), 9, student=Wanderer(), k=2, seed=0)
        assert ds.info["spent"] == 9
        assert len(ds) == 9
        assert all(r["prompt"].endswith("\nAction:\n") and "Goal:" in r["prompt"] for r in ds)
    finally:
        env.close()
