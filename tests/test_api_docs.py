"""Every public callable of every field is documented and has typed parameters (issue: a new user's first
hour). Public = the names in each subpackage's ``__all__``; for classes, the constructor and the public
methods and properties the class itself defines. ``python tests/test_api_docs.py`` lists the offenders."""

from __future__ import annotations

import importlib
import inspect
import sys

import pytest

import fastnips

FIELDS = fastnips._SUBPACKAGES
TORCH_FIELDS = set(fastnips._NEEDS_TORCH)


def _params_untyped(fn) -> list[str]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    return [p.name for p in sig.parameters.values()
            if p.name not in ("self", "cls") and p.annotation is inspect.Parameter.empty]


def _own_members(cls):
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        fn = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
        if getattr(fn, "__module__", cls.__module__) != cls.__module__:
            continue  # attached at run time by a base class (PyG's MessagePassing sets a generated `propagate`)
        if isinstance(member, property):
            yield name, member.fget, True
        elif isinstance(member, staticmethod | classmethod):
            yield name, member.__func__, False
        elif inspect.isfunction(member):
            yield name, member, False


def offenders(field: str) -> list[str]:
    mod = importlib.import_module(f"fastnips.{field}")
    out = []
    for name in getattr(mod, "__all__", []):
        obj = getattr(mod, name)
        where = f"fastnips.{field}.{name}"
        if inspect.isclass(obj):
            if not (obj.__doc__ or "").strip():
                out.append(f"{where}: no docstring")
            if "__init__" in vars(obj) and (bad := _params_untyped(obj.__init__)):
                out.append(f"{where}.__init__: untyped {bad}")
            for mname, fn, is_prop in _own_members(obj):
                if not (fn.__doc__ or "").strip():
                    out.append(f"{where}.{mname}: no docstring")
                if not is_prop and (bad := _params_untyped(fn)):
                    out.append(f"{where}.{mname}: untyped {bad}")
        elif inspect.isfunction(obj):
            if not (obj.__doc__ or "").strip():
                out.append(f"{where}: no docstring")
            if bad := _params_untyped(obj):
                out.append(f"{where}: untyped {bad}")
    return out


@pytest.mark.parametrize("field", FIELDS)
def test_public_api_documented_and_typed(field):
    if field in TORCH_FIELDS:
        pytest.importorskip("torch")
    assert offenders(field) == []


if __name__ == "__main__":
    total = 0
    for f in sys.argv[1:] or FIELDS:
        rows = offenders(f)
        total += len(rows)
        print(f"== {f}: {len(rows)}")
        for r in rows:
            print("  ", r)
    sys.exit(int(total > 0))
