"""The self-adjusting rule in exact arithmetic: its Tchebycheff subproblems accept exactly the vectors that are
non-dominated by the front found so far, under any monotone distortion. This is the equivalence the loops rely
on when they decide acceptances by order comparisons (fastnips.evo.SelfAdjustingMOEAD)."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import pytest

H = {"id": lambda v: Fraction(v), "square": lambda v: Fraction(v * v), "exp2": lambda v: Fraction(2) ** v}


def _nondominated(points):
    return sorted(p for p in points if not any(q != p and q[0] >= p[0] and q[1] >= p[1] for q in points))


def _accepted_by_rule(F, y, z):
    """Whether some subproblem of the rule takes y: a point subproblem on a tie or better (g <= 1), a gap or a
    boundary subproblem on a strict improvement. F and y are distorted objective vectors (Fractions)."""
    d = lambda p: (z[0] - p[0], z[1] - p[1])
    g = lambda lam, p: max(lam[0] * d(p)[0], lam[1] * d(p)[1])
    if any(g((1 / d(p)[0], 1 / d(p)[1]), y) <= 1 for p in F):
        return True
    if any(g((1 / d(a)[0], 1 / d(b)[1]), y) < 1 for a, b in itertools.pairwise(F)):
        return True
    return y[0] > max(p[0] for p in F) or y[1] > max(p[1] for p in F)  # the boundary subproblems (1,0), (0,1)


@pytest.mark.parametrize(("h1", "h2"), [("id", "id"), ("exp2", "id"), ("square", "exp2")])
def test_rule_accepts_exactly_the_nondominated(h1, h2):
    n = 9
    raw = [(lo, tz) for lo in range(n + 1) for tz in range(n + 1 - lo)]  # every LOTZ value (lo + tz <= n)
    f = {r: (H[h1](r[0]), H[h2](r[1])) for r in raw}
    rng = random.Random(0)
    for _ in range(60):
        F = _nondominated([f[r] for r in rng.sample(raw, rng.randint(1, 8))])
        for r in raw:
            y = f[r]
            eps = Fraction(1, 7)  # z* just above the ideal point of everything seen, y included
            z = (max(max(p[0] for p in F), y[0]) + eps, max(max(p[1] for p in F), y[1]) + eps)
            nondominated = not any(q != y and q[0] >= y[0] and q[1] >= y[1] for q in F)
            assert _accepted_by_rule(F, y, z) == nondominated, (F, y)


def test_gap_weights_prefer_the_inside():
    """The proof sketch: every point strictly between p_a and p_b beats both endpoints, for 2^v at n = 30."""
    n = 30
    front = [(H["exp2"](i), Fraction(n - i)) for i in range(n + 1)]
    z = (front[-1][0] + 1, front[0][1] + 1)
    for a, b in itertools.combinations(range(n + 1), 2):
        lam = (1 / (z[0] - front[a][0]), 1 / (z[1] - front[b][1]))
        g = [max(lam[0] * (z[0] - p[0]), lam[1] * (z[1] - p[1])) for p in front]
        assert g[a] == g[b] == 1
        assert all(g[i] < 1 for i in range(a + 1, b))
