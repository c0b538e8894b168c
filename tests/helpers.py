"""Shared test helpers: the one backend parametrisation and the builders several test folders use.

Import with a relative import from a test module or a folder's conftest (``from ..helpers import ...``);
``--import-mode=importlib`` resolves it from the tests folder.
"""

from __future__ import annotations

import copy
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from fastnips import _backend

REPO = Path(__file__).resolve().parents[1]


def backend_params(*names: str) -> list:
    """pytest params over ``names`` (default: every backend); a backend not available here is marked to skip
    with the reason, so the test id still says which backend was skipped and why."""
    params = []
    for name in names or _backend.BACKENDS:
        why = _backend.why_unavailable(name)
        marks = [pytest.mark.skip(reason=f"backend {name!r} not available: {why}")] if why else []
        params.append(pytest.param(name, id=name, marks=marks))
    return params


def backend_fixture(*names: str, name: str = "backend"):
    """A fixture parametrized over the backends ``names`` (default: every backend) that yields the backend's
    name; unavailable ones skip with the reason. In a conftest or test module::

        backend = backend_fixture("reference", "cpp")
    """

    @pytest.fixture(params=backend_params(*names), name=name)
    def _fixture(request):
        return request.param

    return _fixture


def load_bench_script(relpath: str):
    """A script of bench/ (e.g. "graph/eval_tikhonov.py") as a module, for tests of its helpers."""
    path = REPO / "bench" / relpath
    name = "_bench_" + relpath.removesuffix(".py").replace("/", "_")
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # registered first: dataclasses and pickling look the module up by name
    spec.loader.exec_module(mod)
    return mod


def captured_call(name: str, run) -> tuple:
    """The (args, kwargs) of the first call the public API makes to binding ``name`` while ``run()`` runs: a
    valid call in the exact form the package produces (deep copies: some bindings write into their arguments)."""
    C = _backend.native()
    orig, seen = getattr(C, name), []

    def spy(*a, **k):
        seen.append(copy.deepcopy((list(a), dict(k))))
        return orig(*a, **k)

    setattr(C, name, spy)
    try:
        run()
    finally:
        setattr(C, name, orig)
    assert seen, f"the public API never called {name}"
    return seen[0]


def new_field_calls() -> dict:
    """Valid calls of the causal criteria, submodular and functional bindings, captured from their public API."""
    from fastnips.causal import (
        global_identifiable,
        identify,
        lfhtc_identify,
        trek_separation_identify,
    )
    from fastnips.causal.generators import random_latent_factor_graph, random_mixed_graph
    from fastnips.functional import BSplineBasis, curve_coefficients
    from fastnips.submodular import FacilityLocation, FeatureBased, PairwiseSubmodular, certify, greedy

    g = random_mixed_graph(9, p_directed=0.3, p_bidirected=0.3, seed=1)
    lg, children = random_latent_factor_graph(9, 2, p_directed=0.3, p_child=0.5, seed=1)
    f = PairwiseSubmodular.random(8, channels=2, seed=0)
    X = np.abs(np.random.default_rng(0).normal(size=(10, 4)))
    t1, t2 = np.linspace(0, 1, 12), np.linspace(0, 1, 9)
    curves = [(t1, np.sin(t1)), (t2, np.cos(t2))]
    runs = {
        "trek_edge_identified": lambda: trek_separation_identify(g, backend="cpp"),
        "htc_sweep": lambda: trek_separation_identify(g, backend="cpp"),
        "htc_sweeps": lambda: trek_separation_identify(g, backend="cpp"),
        "ancestral_sweep": lambda: identify(g, ["trek_separation", "ancestral"], backend="cpp"),
        "global_identifiable": lambda: global_identifiable(g, backend="cpp"),
        "lfhtc_identify": lambda: lfhtc_identify(lg, children, backend="cpp"),
        "generic_identify": lambda: identify(g, ["htc", "edgewise"], backend="cpp"),
        "submodular_greedy_pairwise": lambda: greedy(f, 3, backend="cpp"),
        "submodular_certify": lambda: certify(f, backend="cpp"),
        "submodular_greedy_feature": lambda: greedy(FeatureBased(X), 3, backend="cpp"),
        "submodular_greedy_facility": lambda: greedy(FacilityLocation(X @ X.T), 3, backend="cpp"),
        "functional_coefficients": lambda: curve_coefficients(curves, BSplineBasis(6, (0.0, 1.0)), backend="cpp"),
    }
    out = {}
    for name, run in runs.items():
        args, kwargs = captured_call(name, run)
        out[name] = lambda a=args, k=kwargs: copy.deepcopy((a, k))
    return out

