"""fastnips.prune.pack: N:M and bitmask packing round-trip bit for bit (cpp == reference), sizes match the
documented formulas, malformed packs are refused, and sparse safetensors checkpoints reload exactly."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

import fastnips.prune.pack as P  # noqa: E402
from fastnips.prune.checkpoint import FORMAT_VERSION, load_sparse, save_sparse  # noqa: E402
from fastnips.prune.masks import NM, select_mask  # noqa: E402
from fastnips.prune.pack import PackedBitmask, PackedNM, pack_bitmask, pack_nm, unpack_bitmask, unpack_nm  # noqa: E402

DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
BITS = {2: torch.int16, 4: torch.int32, 8: torch.int64}


def bits(t):
    """Raw element bits, so NaN payloads and signed zeros compare exactly."""
    return t.contiguous().view(BITS[t.element_size()])


def nm_weight(rows, cols, pattern, dtype, seed=0):
    """A weight that follows `pattern`, with some groups holding fewer nonzeros, -0.0, NaN and inf entries."""
    g = torch.Generator().manual_seed(seed)
    W = torch.randn(rows, cols, generator=g).to(dtype)
    W = W.masked_fill(~select_mask(W.abs().float(), pattern=pattern), 0.0)
    W[0, : pattern.group] = 0.0  # an empty group
    kept = W[1].nonzero()[:, 0]
    W[1, kept[0]] = float("nan")  # NaN and inf in kept slots round-trip bit for bit
    W[1, kept[-1]] = float("inf")
    W[2, W[2].nonzero()[0, 0]] = -0.0  # a signed zero where a value was kept: it is a zero, it unpacks as +0
    return W


def plus_zero(W):
    return W.masked_fill(W == 0, 0.0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("pattern", [NM(1, 4), NM(2, 4), NM(4, 8), NM(3, 8)], ids=str)
def test_nm_round_trip_is_bitwise(backend, pattern, dtype):
    W = nm_weight(9, 48, pattern, dtype)
    p = pack_nm(W, pattern, backend=backend)
    assert isinstance(p, PackedNM)
    assert p.values.dtype == dtype
    assert p.indices.dtype == torch.uint8
    assert tuple(p.values.shape) == (9, 48 // pattern.group * pattern.keep)
    idx = p.indices.reshape(9, -1, pattern.keep).long()
    assert (idx < pattern.group).all()
    if pattern.keep > 1:
        assert (idx[..., 1:] > idx[..., :-1]).all()
    assert torch.equal(bits(unpack_nm(p, backend=backend)), bits(plus_zero(W)))
    ref = pack_nm(W, pattern, backend="reference")
    assert torch.equal(bits(p.values), bits(ref.values))
    assert torch.equal(p.indices, ref.indices)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cols", [1, 8, 37])
def test_bitmask_round_trip_is_bitwise(backend, dtype, cols):
    g = torch.Generator().manual_seed(cols)
    W = torch.randn(7, cols, generator=g).to(dtype)
    W = W.masked_fill(torch.rand(7, cols, generator=g) < 0.6, 0.0)
    W[0] = 0.0  # an empty row
    W[1] = torch.arange(1, cols + 1).to(dtype)  # a full row
    W[2, 0] = float("nan")
    W[3, -1] = -0.0
    p = pack_bitmask(W, backend=backend)
    assert isinstance(p, PackedBitmask)
    assert p.values.dtype == dtype
    assert tuple(p.bitmask.shape) == (7, (cols + 7) // 8)
    assert int(p.row_offsets[-1]) == p.values.numel() == int((W != 0).sum())
    assert torch.equal(bits(unpack_bitmask(p, backend=backend)), bits(plus_zero(W)))
    ref = pack_bitmask(W, backend="reference")
    assert torch.equal(bits(p.values), bits(ref.values))
    assert torch.equal(p.bitmask, ref.bitmask)
    assert torch.equal(p.row_offsets, ref.row_offsets)


def test_layouts_by_hand(backend):
    W = torch.tensor([[0.0, 1.5, 0.0, 0.0, 2.0, 0.0, 0.0, 3.0, 0.0, 4.0],
                      [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]])
    p = pack_bitmask(W, backend=backend)
    assert p.values.tolist() == [1.5, 2.0, 3.0, 4.0]
    assert p.bitmask.tolist() == [[0b10010010, 0b10], [0, 0]]  # column j is bit j % 8 of byte j // 8
    assert p.row_offsets.tolist() == [0, 4, 4]
    V = torch.tensor([[0.0, 5.0, 0.0, 0.0, 7.0, 0.0, 0.0, 8.0]])
    q = pack_nm(V, NM(2, 4), backend=backend)
    assert q.indices.tolist() == [[0, 1, 0, 3]]  # the first group is completed by its lowest zero position
    assert q.values.tolist() == [[0.0, 5.0, 7.0, 8.0]]


@pytest.mark.parametrize("dtype", DTYPES)
def test_packed_sizes_match_the_formulas(dtype):
    rows, cols = 16, 64
    W = nm_weight(rows, cols, NM(2, 4), dtype)
    b = W.element_size()
    dense = rows * cols * b
    p = pack_nm(W, NM(2, 4))
    assert p.nbytes == rows * cols // 4 * 2 * (b + 1)
    assert p.nbytes / dense == pytest.approx(0.5 * (1 + 1 / b))  # 2:4 fp16: 50 % values + 25 % indices = 75 %
    if dtype == torch.float16:
        assert p.nbytes / dense == 0.75
    q = pack_bitmask(W)
    nnz = int((W != 0).sum())
    assert q.nbytes == nnz * b + rows * ((cols + 7) // 8) + 8 * (rows + 1)


def test_nm_violation_names_row_and_group(backend):
    W = nm_weight(6, 16, NM(2, 4), torch.float32)
    W[4, 9] = 1.0
    W[4, 8] = W[4, 10] = W[4, 11] = 2.0  # row 4, group 2 now holds 4 nonzeros
    W[5, 0:4] = 1.0  # a later violation: the first one is reported
    with pytest.raises(ValueError, match=r"row 4, group 2 \(columns 8..11\) holds 4 nonzeros"):
        pack_nm(W, NM(2, 4), backend=backend)
    with pytest.raises(ValueError, match="not a multiple of the N:M group 4"):
        pack_nm(torch.zeros(2, 6), NM(2, 4), backend=backend)
    with pytest.raises(TypeError, match="must be an NM"):
        pack_nm(W, "2:4", backend=backend)
    with pytest.raises(TypeError, match="float16, bfloat16, float32 or float64"):
        pack_nm(W.long(), NM(2, 4), backend=backend)
    with pytest.raises(ValueError, match="must be 2-D"):
        pack_bitmask(W[0], backend=backend)


def test_malformed_packs_are_refused(backend):
    W = nm_weight(4, 16, NM(2, 4), torch.float32)
    p = pack_nm(W, NM(2, 4))
    bad = p.indices.clone()
    bad[1, 3] = bad[1, 2]  # repeated position in row 1, group 1
    with pytest.raises(ValueError, match=r"strictly increasing.*row 1, group 1"):
        unpack_nm(PackedNM(p.values, bad, p.shape, p.pattern), backend=backend)
    bad = p.indices.clone()
    bad[2, 0] = 4
    bad[2, 1] = 5
    with pytest.raises(ValueError, match=r"strictly increasing.*row 2, group 0"):
        unpack_nm(PackedNM(p.values, bad, p.shape, p.pattern), backend=backend)
    with pytest.raises(ValueError, match="must have shape"):
        unpack_nm(PackedNM(p.values[:, :4], p.indices[:, :4], p.shape, p.pattern), backend=backend)
    q = pack_bitmask(W)
    off = q.row_offsets.clone()
    off[2] += 1
    with pytest.raises(ValueError, match="row_offsets disagree"):
        unpack_bitmask(PackedBitmask(q.values, q.bitmask, off, q.shape), backend=backend)
    r = pack_bitmask(torch.ones(2, 5))
    bm = r.bitmask.clone()
    bm[1, 0] |= 0b100000  # column 5 of a 5-column matrix
    off = r.row_offsets.clone()
    off[2] += 1
    vals = torch.ones(11)
    with pytest.raises(ValueError, match="bitmask row 1 has bits set past the last column"):
        unpack_bitmask(PackedBitmask(vals, bm, off, r.shape), backend=backend)
    with pytest.raises(ValueError, match="bitmask must be uint8 of shape"):
        unpack_bitmask(PackedBitmask(q.values, q.bitmask[:, :1], q.row_offsets, q.shape), backend=backend)


class Tiny(torch.nn.Module):
    def __init__(self, vocab=32, d=16, ff=32, dtype=torch.float32):
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(vocab, d, dtype=dtype)
        self.up = torch.nn.Linear(d, ff, dtype=dtype)
        self.down = torch.nn.Linear(ff, d, bias=False, dtype=dtype)
        self.lm_head = torch.nn.Linear(d, vocab, bias=False, dtype=dtype)
        self.lm_head.weight = self.embed_tokens.weight  # tied
        self.register_buffer("steps", torch.tensor([3, 1, 4], dtype=torch.int64))


def pruned_tiny(dtype, seed=0):
    torch.manual_seed(seed)
    m = Tiny(dtype=dtype)
    with torch.no_grad():
        for lin in (m.up, m.down):
            lin.weight.mul_(select_mask(lin.weight.abs().float(), pattern=NM(2, 4)))  # leaves -0.0 entries
        m.embed_tokens.weight[0] = 0.0  # a sparse-ish embedding is still stored dense
    return m


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("fmt", ["bitmask", "nm"])
def test_save_load_round_trip(tmp_path, dtype, fmt):
    pytest.importorskip("safetensors")
    from safetensors import safe_open

    m = pruned_tiny(dtype)
    path = tmp_path / "model.safetensors"
    meta = save_sparse(m, path, fmt=fmt, pattern=NM(2, 4) if fmt == "nm" else None)
    assert meta["format_version"] == FORMAT_VERSION
    with safe_open(str(path), framework="pt") as f:
        keys = set(f.keys())
        header = json.loads(f.metadata()["fastnips_sparse"])
    parts = {"bitmask": ("values", "bitmask", "row_offsets"), "nm": ("values", "indices")}[fmt]
    for name in ("up.weight", "down.weight"):
        assert {f"{name}.{s}" for s in parts} <= keys
        assert name not in keys
        assert header["tensors"][name]["format"] == fmt
        assert header["tensors"][name]["shape"] == list(m.state_dict()[name].shape)
    assert header["tensors"]["lm_head.weight"] == {"alias_of": "embed_tokens.weight"}
    assert header["tensors"]["embed_tokens.weight"]["format"] == "dense"
    assert {"embed_tokens.weight", "up.bias", "steps"} <= keys
    assert "lm_head.weight" not in keys
    state = load_sparse(path)
    want = m.state_dict()
    assert list(state) == list(want)
    for k, v in want.items():
        assert state[k].dtype == v.dtype
        assert torch.equal(bits(state[k]) if v.is_floating_point() else state[k],
                           bits(plus_zero(v)) if v.is_floating_point() else v), k
    assert state["lm_head.weight"] is state["embed_tokens.weight"]
    fresh = Tiny(dtype=dtype)
    load_sparse(path, fresh)
    for k, v in fresh.state_dict().items():
        assert torch.equal(v, want[k])


def test_state_dict_input_min_sparsity_and_errors(tmp_path):
    pytest.importorskip("safetensors")
    m = pruned_tiny(torch.float32)
    path = tmp_path / "m.safetensors"
    meta = save_sparse(m.state_dict(), path, min_sparsity=0.6)  # 2:4 is 50 %: nothing packed
    assert all(e.get("format", "dense") == "dense" for e in meta["tensors"].values())
    with pytest.raises(ValueError, match=r"up\.weight: weight does not follow the N:M pattern"):
        save_sparse({"up.weight": torch.ones(4, 8).masked_fill(torch.eye(4, 8).bool(), 0.0)}, path, fmt="nm",
                    pattern=NM(1, 4), min_sparsity=0.1)
    with pytest.raises(ValueError, match="fmt='nm' needs pattern"):
        save_sparse(m, path, fmt="nm")
    with pytest.raises(ValueError, match="fmt must be"):
        save_sparse(m, path, fmt="csr")
    with pytest.raises(ValueError, match="min_sparsity must be"):
        save_sparse(m, path, min_sparsity=2.0)
    with pytest.raises(ValueError, match="collides"):
        save_sparse({"w": torch.zeros(4, 4), "w.values": torch.ones(2)}, path)
    with pytest.raises(TypeError, match="not a tensor"):
        save_sparse({"w": [1.0]}, path)
    save_sparse(m, path)
    other = torch.nn.Linear(3, 3)
    with pytest.raises(ValueError, match="does not match the model: missing"):
        load_sparse(path, other)
    wrong = Tiny(ff=64)
    with pytest.raises(ValueError, match=r"up.weight: model torch.float32 \(64, 16\)"):
        load_sparse(path, wrong)


def test_foreign_and_corrupted_files_are_refused(tmp_path):
    st = pytest.importorskip("safetensors.torch")
    plain = tmp_path / "plain.safetensors"
    st.save_file({"w": torch.ones(2, 2)}, str(plain))
    with pytest.raises(ValueError, match="not a fastnips sparse checkpoint"):
        load_sparse(plain)
    W = nm_weight(4, 16, NM(2, 4), torch.float32)
    p = pack_bitmask(W)
    meta = {"format_version": 1,  # a version-1 file (no checksums): the packed parts are still checked
            "tensors": {"w": {"shape": [4, 16], "dtype": "float32", "format": "bitmask", "pattern": None}}}
    off = p.row_offsets.clone()
    off[1] += 1
    bad = tmp_path / "bad.safetensors"
    st.save_file({"w.values": p.values, "w.bitmask": p.bitmask, "w.row_offsets": off}, str(bad),
                 metadata={"fastnips_sparse": json.dumps(meta)})
    with pytest.raises(ValueError, match="w: row_offsets disagree"):
        load_sparse(bad)
    st.save_file({"w.values": p.values, "w.bitmask": p.bitmask}, str(bad),
                 metadata={"fastnips_sparse": json.dumps(meta)})
    with pytest.raises(ValueError, match=r"lacks the tensor 'w\.row_offsets'"):
        load_sparse(bad)
    meta["format_version"] = 99
    st.save_file({"w": W}, str(bad), metadata={"fastnips_sparse": json.dumps(meta)})
    with pytest.raises(ValueError, match="unsupported fastnips sparse checkpoint version 99"):
        load_sparse(bad)


def test_missing_safetensors_is_a_clear_error(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "safetensors", None)
    with pytest.raises(ImportError, match="pip install safetensors"):
        save_sparse({"w": torch.zeros(2, 2)}, tmp_path / "x.safetensors")


def test_checkpoint_names_moved_from_pack_with_a_deprecation_warning():
    for name, obj in (("save_sparse", save_sparse), ("load_sparse", load_sparse), ("FORMAT_VERSION", FORMAT_VERSION)):
        with pytest.warns(DeprecationWarning, match=f"fastnips.prune.checkpoint.{name}"):
            assert getattr(P, name) is obj
    with pytest.raises(AttributeError):
        P.no_such_name  # noqa: B018
