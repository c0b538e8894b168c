"""The public namespace of ``fastnips``: every field reachable lazily, nothing private in ``dir()``."""

from __future__ import annotations

import importlib

import pytest

import fastnips


def test_dir_shows_only_the_public_api():
    assert dir(fastnips) == sorted(fastnips.__all__)
    assert not {"sys", "platform", "importlib"} & set(dir(fastnips))


@pytest.mark.parametrize("field", fastnips._SUBPACKAGES)
def test_every_field_is_a_lazy_attribute(field):
    if field in fastnips._NEEDS_TORCH:
        pytest.importorskip("torch")
    assert getattr(fastnips, field) is importlib.import_module(f"fastnips.{field}")
