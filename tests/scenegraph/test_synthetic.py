"""synthetic_scenes: shapes, determinism, the predicate rules on the true geometry, refusals."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from fastnips.scenegraph import PREDICATES, synthetic_scenes  # noqa: E402
from fastnips.scenegraph.synthetic import PREDICATES_CATEGORICAL  # noqa: E402


def test_shapes_batching_and_determinism():
    b = synthetic_scenes(5, n_classes=6, n_objects=(3, 5), seed=2)
    N, E = b.x.shape[0], b.edge_index.shape[1]
    assert b.x.shape == (N, 4 + 6)
    assert b.pos.shape == (N, 3)
    assert b.edge_y_multi.shape == (E, len(PREDICATES))
    sizes = torch.bincount(b.batch)
    assert len(sizes) == 5
    assert int((sizes * (sizes - 1)).sum()) == E  # all ordered pairs of each scene
    assert torch.equal(b.batch[b.edge_index[0]], b.batch[b.edge_index[1]])
    assert not torch.any(b.edge_index[0] == b.edge_index[1])
    again = synthetic_scenes(5, n_classes=6, n_objects=(3, 5), seed=2)
    assert torch.equal(b.x, again.x)
    assert torch.equal(b.edge_y, again.edge_y)
    assert not torch.equal(b.x[:4], synthetic_scenes(5, n_classes=6, n_objects=(3, 5), seed=3).x[:4])


def test_the_world_is_shared_across_scene_seeds():
    """Class size priors come from world_seed: noise-free sizes of one class agree (within the 15 % jitter)
    between two scene seeds, and differ for another world."""
    def size_of_class(b, c):
        return b.x[b.y == c, :3].mean(0)

    a, b = synthetic_scenes(60, seed=1, noise=0.0), synthetic_scenes(60, seed=2, noise=0.0)
    other = synthetic_scenes(60, seed=2, noise=0.0, world_seed=7)
    same = max(float((size_of_class(a, c) / size_of_class(b, c) - 1).abs().max()) for c in range(8))
    diff = max(float((size_of_class(a, c) / size_of_class(other, c) - 1).abs().max()) for c in range(8))
    assert same < 0.1
    assert diff > 0.2


def test_predicate_rules_are_consistent():
    b = synthetic_scenes(40, seed=0, noise=0.0)
    m = b.edge_y_multi.bool()
    col = {p: m[:, i] for i, p in enumerate(PREDICATES)}
    assert not torch.any(col["left"] & col["right"])
    assert not torch.any(col["front"] & col["behind"])
    # left(i, j) iff right(j, i): look the reverse edge up
    key = {(int(s), int(o)): k for k, (s, o) in enumerate(b.edge_index.T)}
    rev = torch.tensor([key[(int(o), int(s))] for s, o in b.edge_index.T])
    assert torch.equal(col["left"], col["right"][rev])
    assert torch.equal(col["near"], col["near"][rev])
    # categorical label: 'none' iff no predicate holds, else one that holds
    none = b.edge_y == 0
    assert torch.equal(none, ~m.any(1))
    held = m[~none, b.edge_y[~none] - 1]
    assert bool(held.all())
    assert PREDICATES_CATEGORICAL[0] == "none"
    assert int(col["above"].sum()) > 0  # small objects do get stacked


@pytest.mark.parametrize(("kw", "match"), [({"n_scenes": 0}, "n_scenes"), ({"n_classes": 1}, "n_classes"),
                                           ({"n_objects": (1, 3)}, "n_objects"), ({"n_objects": (5, 3)}, "n_objects"),
                                           ({"noise": -1.0}, "noise")])
def test_bad_input(kw, match):
    args = {"n_scenes": 2, **kw}
    with pytest.raises(ValueError, match=match):
        synthetic_scenes(args.pop("n_scenes"), **args)
