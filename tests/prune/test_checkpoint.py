"""fastnips.prune.checkpoint: every stored tensor carries a SHA-256 checksum, so a corrupted file (one flipped
bit) is refused with a message naming the tensor; malformed metadata is a ValueError naming the field, never a
KeyError / AttributeError / TypeError; version-1 files (no checksums) still load."""

from __future__ import annotations

import json
import struct

import pytest

torch = pytest.importorskip("torch")
st = pytest.importorskip("safetensors.torch")

from fastnips.prune.checkpoint import FORMAT_VERSION, load_sparse, save_sparse  # noqa: E402
from fastnips.prune.masks import NM, select_mask  # noqa: E402


def sparse_state(dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    W = torch.randn(8, 16, generator=g).to(dtype)
    W = W.masked_fill(~select_mask(W.abs().float(), pattern=NM(2, 4)), 0.0)
    return {"w": W, "b": torch.randn(8, generator=g).to(dtype)}


def flip_bit(path, tensor: str, byte: int, bit: int) -> None:
    """Flip one bit of ``tensor``'s data in a safetensors file (8-byte header length, JSON header, data)."""
    raw = bytearray(path.read_bytes())
    (n,) = struct.unpack("<Q", raw[:8])
    start = json.loads(raw[8 : 8 + n])[tensor]["data_offsets"][0]
    raw[8 + n + start + byte] ^= 1 << bit
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("fmt", ["bitmask", "nm"])
def test_a_flipped_exponent_bit_in_values_is_refused(tmp_path, fmt):
    sd = sparse_state()
    path = tmp_path / "m.safetensors"
    meta = save_sparse(sd, path, fmt=fmt, pattern=NM(2, 4) if fmt == "nm" else None)
    assert meta["format_version"] == FORMAT_VERSION == 2
    assert set(meta["checksums"]) == set(st.load_file(str(path)))
    assert torch.equal(load_sparse(path)["w"], sd["w"])
    flip_bit(path, "w.values", byte=3, bit=6)  # float32 little endian: byte 3 holds the top exponent bits
    changed = st.load_file(str(path))["w.values"]
    assert not torch.equal(changed, save_sparse_values(sd, fmt))  # the file really changed
    with pytest.raises(ValueError, match=r"corrupted: the checksum of tensor 'w\.values' does not match"):
        load_sparse(path)


def save_sparse_values(sd, fmt):
    from fastnips.prune.pack import pack_bitmask, pack_nm

    return (pack_nm(sd["w"], NM(2, 4)) if fmt == "nm" else pack_bitmask(sd["w"])).values


def test_a_corrupted_dense_tensor_is_refused(tmp_path):
    path = tmp_path / "m.safetensors"
    save_sparse(sparse_state(torch.bfloat16), path)
    flip_bit(path, "b", byte=1, bit=0)
    with pytest.raises(ValueError, match=r"checksum of tensor 'b'"):
        load_sparse(path)


def write(path, meta, tensors=None):
    tensors = tensors if tensors is not None else {"w": torch.ones(2, 2)}
    raw = meta if isinstance(meta, str) else json.dumps(meta)
    st.save_file(tensors, str(path), metadata={"fastnips_sparse": raw})


GOOD = {"shape": [2, 2], "dtype": "float32", "format": "dense", "pattern": None}


@pytest.mark.parametrize(("meta", "match"), [
    ("{not json", "not JSON"),
    ([1, 2], "expected a JSON object, got list"),
    ({"format_version": 1, "tensors": [GOOD]}, "'tensors' must be an object"),
    ({"format_version": 1, "tensors": {"w": "dense"}}, "entry 'w' must be an object"),
    ({"format_version": 1, "tensors": {"w": {"dtype": "float32", "format": "dense"}}}, "'shape' must be a list"),
    ({"format_version": 1, "tensors": {"w": {**GOOD, "shape": ["2", 2]}}}, "'shape' must be a list"),
    ({"format_version": 1, "tensors": {"w": {**GOOD, "shape": 4}}}, "'shape' must be a list"),
    ({"format_version": 1, "tensors": {"w": {**GOOD, "dtype": 7}}}, "'dtype' must be a string"),
    ({"format_version": 1, "tensors": {"w": {**GOOD, "format": "csr"}}}, "'format' must be one of"),
    ({"format_version": 1, "tensors": {"w": {**GOOD, "format": "nm", "pattern": "2:4"}}}, "'pattern' must be"),
    ({"format_version": 1, "tensors": {"w": {**GOOD, "format": "nm", "pattern": [2]}}}, "'pattern' must be"),
    ({"format_version": 1, "tensors": {"w": GOOD, "v": {"alias_of": "x"}}}, "alias of 'x'"),
    ({"format_version": 1, "tensors": {"w": GOOD, "v": {"alias_of": ["w"]}}}, "alias of"),
    ({"format_version": 2, "tensors": {"w": GOOD}}, "'checksums' must be an object"),
    ({"format_version": 2, "tensors": {"w": GOOD}, "checksums": {"w": 5}}, "'checksums' must be an object"),
])
def test_malformed_metadata_is_a_named_value_error(tmp_path, meta, match):
    path = tmp_path / "bad.safetensors"
    write(path, meta)
    with pytest.raises(ValueError, match="malformed fastnips sparse checkpoint metadata: .*" + match):
        load_sparse(path)


def test_an_nm_pattern_that_is_no_pattern_is_named(tmp_path):
    path = tmp_path / "bad.safetensors"
    write(path, {"format_version": 1, "tensors": {"w": {**GOOD, "format": "nm", "pattern": [5, 4]}}},
          {"w.values": torch.ones(2, 1), "w.indices": torch.zeros(2, 1, dtype=torch.uint8)})
    with pytest.raises(ValueError, match="w: NM needs 1 <= keep <= group"):
        load_sparse(path)


def test_version_one_files_without_checksums_still_load(tmp_path):
    path = tmp_path / "v1.safetensors"
    W = torch.arange(4.0).reshape(2, 2)
    write(path, {"format_version": 1, "tensors": {"w": GOOD}}, {"w": W})
    assert torch.equal(load_sparse(path)["w"], W)
