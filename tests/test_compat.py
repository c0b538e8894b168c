from __future__ import annotations

import sys
import types

import pytest

from fastnips._compat import moved


def test_moved_name_warns_and_resolves():
    mod = types.ModuleType("fastnips_fake_old")
    mod.__getattr__ = moved("fastnips_fake_old", {"dumps": "json"})
    sys.modules["fastnips_fake_old"] = mod
    try:
        with pytest.warns(DeprecationWarning, match=r"fastnips_fake_old.dumps moved to json.dumps"):
            from fastnips_fake_old import dumps
        import json

        assert dumps is json.dumps
        with pytest.raises(AttributeError, match="has no attribute 'nope'"):
            _ = mod.nope
    finally:
        del sys.modules["fastnips_fake_old"]
