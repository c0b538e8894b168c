"""The readable reference of the evolutionary loops: the oracle of the native core (``csrc/evo/``).

Every random number comes from :class:`Xoshiro256` (xoshiro256** seeded through splitmix64, Blackman &
Vigna), written out here and, identically, in ``csrc/evo/rng.h``, and every draw happens in the same order,
so for a seed both loops follow the same trajectory, evaluation by evaluation:

* a uniform index below k is ``(r * k) >> 64`` of one 64-bit output r (Lemire's multiply-shift; its bias is
  at most k / 2^64);
* a uniform bit is ``r >> 63``;
* standard bit mutation flips bit i (i = 0..n-1, in order) when its draw r < floor((2^64 - 1) / n), a flip
  probability of 1/n up to 2^-64.

Bit i of a string is x_{i+1} of the papers: LO counts ones from bit 0 up, TZ zeros from bit n-1 down.
"""

from __future__ import annotations

import numpy as np

from .algorithms import MOEAD, RunResult, SelfAdjustingMOEAD
from .problems import Problem, subproblem_value, uniform_weights

__all__ = ["Xoshiro256", "run_moead_reference", "run_self_adjusting_reference"]

_M64 = (1 << 64) - 1
# the trajectory digest (RunResult.digest): FNV-1a's offset basis and prime over 64 bits
_DIGEST0, _FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3


def _rotl(x: int, k: int) -> int:
    return ((x << k) | (x >> (64 - k))) & _M64


class Xoshiro256:
    """xoshiro256** with its state seeded by four splitmix64 outputs of ``seed`` (an int in [0, 2^64))."""

    def __init__(self, seed: int):
        x = int(seed) & _M64
        self.s = []
        for _ in range(4):  # splitmix64
            x = (x + 0x9E3779B97F4A7C15) & _M64
            z = x
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
            self.s.append(z ^ (z >> 31))

    def next(self) -> int:
        s = self.s
        out = (_rotl((s[1] * 5) & _M64, 7) * 9) & _M64
        t = (s[1] << 17) & _M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = _rotl(s[3], 45)
        return out

    def below(self, k: int) -> int:
        """A uniform integer in [0, k)."""
        return (self.next() * k) >> 64

    def bit(self) -> int:
        return self.next() >> 63


def _random_string(rng: Xoshiro256, n: int) -> list[int]:
    return [rng.bit() for _ in range(n)]


def _mutate(rng: Xoshiro256, x: list[int]) -> list[int]:
    thr = _M64 // len(x)
    return [b ^ 1 if rng.next() < thr else b for b in x]


class _Tracker:
    """Evaluations, the ideal point and the coverage bookkeeping shared by both loops."""

    def __init__(self, problem: Problem, archive: bool):
        self.p, self.n = problem, problem.n
        self.evals = 0
        self.z = [-np.inf, -np.inf]
        self.count = [0] * (self.n + 1)  # population members at each Pareto point
        self.covered = 0
        self.first = [-1] * (self.n + 1)
        self.full = -1
        self.archive = [-1] * (self.n + 1) if archive else None
        self.full_archive = -1
        self.in_archive = 0
        self.digest = _DIGEST0

    def evaluate(self, x: list[int]) -> tuple[tuple[int, int], tuple[float, float]]:
        r = self.p.raw(x)
        f = (float(self.p.h1[r[0]]), float(self.p.h2[r[1]]))
        self.evals += 1
        self.digest = ((self.digest ^ (r[0] * (self.n + 1) + r[1])) * _FNV_PRIME) & _M64
        self.z = [max(self.z[0], f[0]), max(self.z[1], f[1])]
        if self.archive is not None and r[0] + r[1] == self.n and self.archive[r[0]] < 0:
            self.archive[r[0]] = self.evals  # a Pareto point never leaves a non-dominated archive
            self.in_archive += 1
            if self.in_archive == self.n + 1:
                self.full_archive = self.evals
        return r, f

    def enter(self, r: tuple[int, int]) -> None:
        if r[0] + r[1] != self.n:
            return
        self.count[r[0]] += 1
        if self.count[r[0]] == 1:
            self.covered += 1
            if self.first[r[0]] < 0:
                self.first[r[0]] = self.evals
            if self.covered == self.n + 1 and self.full < 0:
                self.full = self.evals

    def leave(self, r: tuple[int, int]) -> None:
        if r[0] + r[1] == self.n:
            self.count[r[0]] -= 1
            self.covered -= self.count[r[0]] == 0

    def result(self, rng: Xoshiro256) -> RunResult:
        a = self.archive
        return RunResult(
            evaluations=self.evals, first_population=np.array(self.first, dtype=np.int64),
            final_population=np.array([c > 0 for c in self.count]), full_population=self.full,
            first_archive=None if a is None else np.array(a, dtype=np.int64),
            final_archive=None if a is None else np.array([t >= 0 for t in a]),
            full_archive=None if a is None else self.full_archive, digest=self.digest ^ rng.next(),
            backend="reference")


def neighbourhoods(N: int, T: int) -> list[list[int]]:
    """B(i): the T subproblems with the nearest weights to lambda_i (distance |i - j|, ties to the smaller j).

    Only j within distance T - 1 of i can be among the T nearest (at least T indices lie that close), so each
    row sorts that window rather than all N + 1 indices (which took about half an hour at N = 10^5 before the
    first evaluation)."""
    return [sorted(range(max(0, i - T), min(N, i + T) + 1), key=lambda j: (abs(i - j), j))[:T]
            for i in range(N + 1)]


def run_moead_reference(problem: Problem, algorithm: MOEAD, budget: int, seed: int,
                        stop_on_full: bool = True) -> RunResult:
    """Classic MOEA/D (see :class:`~fastnips.evo.MOEAD`) in plain Python: the oracle of the native loop."""
    n = problem.n
    N, T = algorithm.sizes(n)
    lam = uniform_weights(N).tolist()
    B = neighbourhoods(N, T)
    rng = Xoshiro256(seed)
    tr = _Tracker(problem, algorithm.archive)
    pop: list[tuple[list[int], tuple[int, int], tuple[float, float]]] = []
    for _ in range(N + 1):
        if tr.evals >= budget:
            return tr.result(rng)
        x = _random_string(rng, n)
        r, f = tr.evaluate(x)
        pop.append((x, r, f))
        tr.enter(r)

    def done() -> bool:
        return tr.evals >= budget or (stop_on_full and tr.full >= 0)

    while not done():
        for i in range(N + 1):
            if done():
                break
            x = pop[B[i][rng.below(T)]][0]
            y = _mutate(rng, x)
            r, f = tr.evaluate(y)
            for k in B[i]:
                g_y = subproblem_value(algorithm.decomposition, lam[k], tr.z, f)
                if g_y <= subproblem_value(algorithm.decomposition, lam[k], tr.z, pop[k][2]):
                    tr.leave(pop[k][1])
                    pop[k] = (y, r, f)
                    tr.enter(r)
    return tr.result(rng)


def _dominates(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] >= b[0] and a[1] >= b[1] and a != b


def run_self_adjusting_reference(problem: Problem, algorithm: SelfAdjustingMOEAD, budget: int, seed: int,
                                 stop_on_full: bool = True) -> RunResult:
    """The self-adjusting MOEA/D (see :class:`~fastnips.evo.SelfAdjustingMOEAD`) in plain Python.

    State: F, the non-dominated (raw objectives, string) pairs sorted by the first objective, and the two
    boundary solutions. Subproblem k of the 2|F| + 1: 0 = boundary (0, 1), 1 = boundary (1, 0), 2 + 2m =
    point F[m], 3 + 2m = gap (F[m], F[m+1]).
    """
    n = problem.n
    rng = Xoshiro256(seed)
    tr = _Tracker(problem, algorithm.archive)
    if budget < 1:
        return tr.result(rng)
    x0 = _random_string(rng, n)
    r0, _ = tr.evaluate(x0)
    front = [(r0, x0)]
    tr.enter(r0)
    lo, hi = (r0, x0), (r0, x0)  # boundary solutions: the best second / first objective, ties accepted
    while tr.evals < budget and not (stop_on_full and tr.full >= 0):
        k = rng.below(2 * len(front) + 1)
        if k < 2:
            parent = (lo, hi)[k][1]
        elif k % 2 == 0:
            parent = front[(k - 2) // 2][1]
        else:
            m = (k - 3) // 2
            parent = front[m + rng.bit()][1]
        y = _mutate(rng, parent)
        r, _ = tr.evaluate(y)
        if r[1] >= lo[0][1]:
            lo = (r, y)
        if r[0] >= hi[0][0]:
            hi = (r, y)
        if any(_dominates(q, r) for q, _ in front):
            continue
        for q, _ in front:
            if q[0] <= r[0] and q[1] <= r[1]:
                tr.leave(q)
        front = sorted([e for e in front if not (e[0][0] <= r[0] and e[0][1] <= r[1])] + [(r, y)],
                       key=lambda e: e[0][0])
        tr.enter(r)
    return tr.result(rng)
