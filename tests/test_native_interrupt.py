"""Long native calls stop on Ctrl-C: the kernels poll Python's signal handlers (csrc/common/interrupt.h) every
few milliseconds with the GIL taken back for a moment, so SIGINT ends the call with KeyboardInterrupt within a
second, and the same process then computes correct answers (no state left behind). Each case runs in a
subprocess that announces the call, gets SIGINT a moment later and must catch KeyboardInterrupt within
LIMIT seconds of the signal (generous: the machine may be loaded), then pass a short correctness check;
without the polls none of these calls had stopped 60 s after the signal."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from fastnips import _backend

WHY = _backend.why_unavailable("cpp")
pytestmark = pytest.mark.skipif(bool(WHY), reason=f"backend 'cpp' not available: {WHY}")

LIMIT = 3.0  # seconds from SIGINT to the KeyboardInterrupt, on a shared machine

PRELUDE = """
import signal, sys, time
# A process started with SIGINT ignored (a CI job in the background, nohup) keeps it ignored and Python then
# installs no KeyboardInterrupt handler: put the default one back, as an interactive session has it.
signal.signal(signal.SIGINT, signal.default_int_handler)
import numpy as np
import scipy.sparse as sp
from fastnips import _backend
C = _backend.native()

def laplacian(n, deg, seed):
    rng = np.random.default_rng(seed)
    i, j = rng.integers(0, n, (2, n * deg // 2))
    A = sp.coo_matrix((np.ones(i.size), (i, j)), shape=(n, n)).tocsr()
    A = ((A + A.T) > 0).astype(np.float64) + sp.eye(n)
    d = 1 / np.sqrt(np.asarray(A.sum(axis=1)).ravel())
    return (sp.eye(n) - sp.diags(d) @ A @ sp.diags(d)).tocsr()

def dense_dag(n, seed):
    # a dense random DAG (p = 1/2, random order) with a few bidirected edges (p = 1/20): max-flow HTC runs
    # ~1.5 s at n = 600 and grows like n^3
    rng = np.random.default_rng(seed)
    iu, ju = np.triu_indices(n, k=1)
    order = rng.permutation(n)
    keep = rng.random(iu.size) < 0.5
    d = np.stack([order[iu[keep]], order[ju[keep]]], axis=1)
    keep = rng.random(iu.size) < 0.05
    return d, np.stack([iu[keep], ju[keep]], axis=1)

def dense_scc(s, seed):
    # one strongly connected component of s nodes (each ordered pair an edge with p = 1/2) fed by a parentless
    # node s: the randomized method factorizes an s x s matrix mod p, O(s^3)
    rng = np.random.default_rng(seed)
    i, j = np.nonzero(~np.eye(s, dtype=bool))
    keep = rng.random(i.size) < 0.5
    return np.vstack([np.stack([i[keep], j[keep]], axis=1), [[s, 0]]]), np.zeros((0, 2), np.int64)
"""

# name -> (set-up code, the long call, a short call after the interrupt and its check)
CASES = {
    "tikhonov_cg": (
        "L = laplacian(60000, 8, 0); q = np.full(L.shape[0], 1e-3); X = np.ones((L.shape[0], 32))",
        "C.tikhonov_solve_cg(L.indptr, L.indices, L.data, np.array([1.0, 0.5]), q, X, 1e-300, 10**8)",
        "Ls = laplacian(50, 4, 1); qs = np.ones(50); Xs = np.arange(50.0)[:, None]\n"
        "Y = C.tikhonov_solve_cg(Ls.indptr, Ls.indices, Ls.data, np.array([1.0, 0.5]), qs, Xs, 1e-12, 500)[0]\n"
        "A = (0.5 * (Ls - sp.eye(50)) + sp.eye(50) + sp.diags(qs)).toarray()\n"
        "assert np.allclose(A @ Y, qs[:, None] * Xs, atol=1e-9), 'wrong answer after the interrupt'",
    ),
    "htc_maxflow": (
        "d, b = dense_dag(1500, 0)",
        "C.htc_identify(1500, d, b, method='maxflow')",
        "r = C.htc_identify(3, [(0, 1), (1, 2)], [(0, 2)], method='maxflow')\n"
        "assert r['solved'].tolist() == [True, True, True], r",
    ),
    "htc_randomized": (
        "d, b = dense_scc(1500, 0)",
        "C.htc_identify(1501, d, b)",
        "r = C.htc_identify(3, [(0, 1), (1, 2)], [(0, 2)])\nassert r['solved'].tolist() == [True, True, True], r",
    ),
    "htc_batch": (
        "graphs = [(600,) + dense_dag(600, s) for s in range(40)]",
        "C.htc_identify_many(graphs, method='maxflow')",
        "r = C.htc_identify_many([(3, [(0, 1), (1, 2)], [(0, 2)])])\n"
        "assert r[0]['solved'].tolist() == [True, True, True], r",
    ),
    "generic loop, ancestral": (
        # SEMID's ancestral step over a dense DAG: ~1.5 s at n = 600, ~7 s at n = 1000
        "d, b = dense_dag(1000, 0)",
        "C.generic_identify(1000, d, b, ['ancestral'], tian=False)",
        "r = C.generic_identify(3, [(0, 1), (1, 2)], [(0, 2)], ['ancestral'])\nassert r['node_solved'].all(), r",
    ),
    "lfhtc": (
        # 40 parentless nodes are children of all 14 factors; 10 two-cycles v <-> p (50..69) whose parent is a
        # descendant, so no source reaches it: every (L, Z) with |L| = |Z| is tried and fails its max-flow
        # (C(14, 7) x C(40, 7) pairs at k = 7 alone)
        "d = np.array([e for v in range(50, 70, 2) for e in ((v, v + 1), (v + 1, v))]); "
        "le = np.array([(h, v) for h in range(14) for v in range(40)])",
        "C.lfhtc_identify(70, d, 14, le)",
        "r = C.lfhtc_identify(3, [(0, 1), (1, 2)], 1, [(0, 1), (0, 2)])\nassert r['node_solved'].all(), r",
    ),
    "lfhtc, every L pruned": (
        # 30 factors on {0, 1, 2, 3, 5} and 0..4 -> 5: for node 5 every latent set L leaves too few sources
        # (its factors outside L ban their children), so no max-flow runs while 2^30 sets L are tried
        "d = np.array([(i, 5) for i in range(5)]); le = np.array([(h, v) for h in range(30) for v in (0, 1, 2, 3, 5)])",
        "C.lfhtc_identify(6, d, 30, le)",
        "r = C.lfhtc_identify(3, [(0, 1), (1, 2)], 1, [(0, 1), (0, 2)])\nassert r['node_solved'].all(), r",
    ),
    "evo run": (
        "from fastnips.evo import MOEAD, SelfAdjustingMOEAD, lotz, run",
        "run(lotz(64, 'exp2'), MOEAD(), 10**12, 0, stop_on_full=False, backend='cpp')",
        "r = run(lotz(8), SelfAdjustingMOEAD(), 10**6, 0, backend='cpp')\n"
        "assert r.population_coverage == 9, r",
    ),
}


def interrupt_case(setup: str, call: str, after: str) -> tuple[float, str]:
    """Start the call in a subprocess, send SIGINT 1 s after it began; (seconds from the signal to the
    KeyboardInterrupt in the subprocess, by the wall clock both share; its output)."""
    code = PRELUDE + textwrap.dedent(f"""
        {setup}
        print("start", flush=True)
        t0 = time.perf_counter()
        try:
            {call}
            print("finished", time.perf_counter() - t0, flush=True)
        except KeyboardInterrupt:
            print("interrupted", time.time(), flush=True)
        """) + after + "\nprint('after-ok', flush=True)\n"
    env = dict(os.environ, OMP_NUM_THREADS="2")
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=env) as p:
        try:
            line = p.stdout.readline()
            if line.strip() != "start":
                return float("inf"), line + p.communicate(timeout=60)[1][-3000:]
            time.sleep(1.0)
            sent = time.time()
            p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=120)
            caught = [float(w.split()[1]) for w in out.splitlines() if w.startswith("interrupted ")]
            return (caught[0] - sent if caught else float("inf")), out + err[-3000:]
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()


@pytest.mark.parametrize("name", sorted(CASES))
def test_sigint_stops_a_long_native_call(name):
    setup, call, after = CASES[name]
    elapsed, out = interrupt_case(setup, call, after)
    assert "interrupted" in out, out
    assert "after-ok" in out, out
    assert elapsed < LIMIT, f"{name}: KeyboardInterrupt came {elapsed:.1f} s after SIGINT\n{out}"
