"""save_pretrained_sparse / load_pretrained_sparse on randomly initialised HF Llamas built in memory (no download):
pruned by fastnips (2:4 magnitude, unstructured Wanda), exported, reloaded bit for bit; the compressed-tensors
block checked against counts made here and, where compressed-tensors installs, against its own parser."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

from fastnips.prune import NM, apply_masks, load_pretrained_sparse, magnitude, save_pretrained_sparse, wanda  # noqa: E402
from fastnips.prune.criteria import block_linears  # noqa: E402
from fastnips.prune.hf_export import MANIFEST_NAME  # noqa: E402

from .conftest import make_decoder  # noqa: E402

CT_SKIP = "compressed-tensors not installed (pip install compressed-tensors; 0.20.1 still has the sparsity configs)"


@pytest.fixture(autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _pruned(kind: str, calib=None):
    model = make_decoder("llama", seed=0, layers=2)
    if kind == "2:4":
        magnitude(model, pattern=NM(2, 4))
    else:
        wanda(model, calib, sparsity=0.5)
    return model


def _equal_bitwise(a, b) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k].view(torch.uint8), sb[k].view(torch.uint8))
                                          for k in sa)


def _global_sparsity(model) -> float:
    ps = list(model.parameters())  # tied parameters once
    return sum(int((p == 0).sum()) for p in ps) / sum(p.numel() for p in ps)


@pytest.mark.parametrize("kind", ["2:4", "unstructured"])
def test_export_block_and_reload_bitwise(kind, calib, tmp_path):
    model = _pruned(kind, calib)
    man = save_pretrained_sparse(model, tmp_path / "out")
    cfg = json.loads((tmp_path / "out" / "config.json").read_text())
    q = cfg["quantization_config"]
    assert q["quant_method"] == "compressed-tensors"
    assert q["transform_config"] == {}
    block = q["sparsity_config"]
    assert block == man["sparsity_config"]
    assert block["format"] == "dense"
    assert block["sparsity_structure"] == kind
    assert block["targets"] == ["Linear"]
    assert block["ignore"] == ["lm_head"]
    assert block["global_sparsity"] == pytest.approx(_global_sparsity(model), abs=1e-12)
    lin = block_linears(model)
    assert len(lin) == 14
    for name, m in lin.items():  # measured here, per targeted layer
        w = m.weight.detach()
        assert man["layers"][name]["sparsity"] == float((w == 0).double().mean())
        assert man["layers"][name]["target"] is True
        assert man["layers"][name]["sparsity"] == pytest.approx(0.5, abs=1e-12)
    assert man["layers"]["lm_head"]["target"] is False
    back = load_pretrained_sparse(tmp_path / "out")
    assert _equal_bitwise(model, back)
    assert back.fastnips_sparsity == man
    if kind == "2:4":
        for name in lin:
            w = back.get_submodule(name).weight
            assert int((w.reshape(w.shape[0], -1, 4) != 0).sum(-1).max()) <= 2, name


def test_plain_from_pretrained_without_the_block(tmp_path):
    model = _pruned("2:4")
    man = save_pretrained_sparse(model, tmp_path, compressed_tensors=False)
    assert "quantization_config" not in json.loads((tmp_path / "config.json").read_text())
    back = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path), local_files_only=True)
    assert _equal_bitwise(model, back)
    assert json.loads((tmp_path / MANIFEST_NAME).read_text()) == man


def test_compressed_tensors_parses_the_block_and_transformers_loads_it(tmp_path):
    ct = pytest.importorskip("compressed_tensors", reason=CT_SKIP)
    from compressed_tensors.config import DenseSparsityConfig, SparsityCompressionConfig, SparsityStructure

    model = _pruned("2:4")
    save_pretrained_sparse(model, tmp_path)
    block = json.loads((tmp_path / "config.json").read_text())["quantization_config"]["sparsity_config"]
    parsed = SparsityCompressionConfig.load_from_registry(block["format"], **block)
    assert isinstance(parsed, DenseSparsityConfig), ct.__version__
    assert SparsityStructure(parsed.sparsity_structure) is SparsityStructure.TWO_FOUR
    assert {k: getattr(parsed, k) for k in block} == block
    as_vllm = SparsityCompressionConfig.model_validate(block)  # how vLLM's compressed-tensors config reads it
    assert as_vllm.targets == ["Linear"]
    assert as_vllm.ignore == ["lm_head"]
    back = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path), local_files_only=True)
    assert _equal_bitwise(model, back)


def test_tied_embeddings_and_sharded_files(tmp_path):
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True)
    model = transformers.LlamaForCausalLM(cfg).eval()
    magnitude(model, sparsity=0.5)
    man = save_pretrained_sparse(model, tmp_path, max_shard_size="20KB")
    assert len(man["checksums"]) > 1  # several shards, each in the manifest
    assert man["sparsity_config"]["sparsity_structure"] == "unstructured"
    assert man["sparsity_config"]["global_sparsity"] == pytest.approx(_global_sparsity(model), abs=1e-12)
    assert _equal_bitwise(model, load_pretrained_sparse(tmp_path))


def test_claimed_structure_must_hold(calib, tmp_path):
    model = _pruned("unstructured", calib)
    with pytest.raises(ValueError, match=r"2:4 is claimed but model\.layers\.0\.self_attn\.q_proj"):
        save_pretrained_sparse(model, tmp_path / "out", structure="2:4")
    assert not (tmp_path / "out").exists()  # refused before anything is written
    man = save_pretrained_sparse(model, tmp_path / "out", structure="unstructured")
    assert man["sparsity_config"]["sparsity_structure"] == "unstructured"
    for bad in ("3:2", "2-4", 24):
        with pytest.raises(ValueError, match="structure must be"):
            save_pretrained_sparse(model, tmp_path / "x", structure=bad)
    with pytest.raises(ValueError, match="min_sparsity"):
        save_pretrained_sparse(model, tmp_path / "x", min_sparsity=0)


def test_refuses_bad_models_and_paths(tmp_path):
    with pytest.raises(TypeError, match="PreTrainedModel"):
        save_pretrained_sparse(make_decoder("tiny"), tmp_path / "a")
    model = _pruned("2:4")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="exists and is not a folder"):
        save_pretrained_sparse(model, tmp_path / "file")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("keep")
    with pytest.raises(ValueError, match="not empty; pass overwrite=True"):
        save_pretrained_sparse(model, tmp_path / "full")
    save_pretrained_sparse(model, tmp_path / "full", overwrite=True)
    assert (tmp_path / "full" / "notes.txt").read_text() == "keep"
    masked = _pruned("2:4")
    apply_masks(masked, {"model.layers.0.mlp.up_proj": masked.model.layers[0].mlp.up_proj.weight != 0})
    with pytest.raises(ValueError, match="strip_masks"):
        save_pretrained_sparse(masked, tmp_path / "m")


def test_overwrite_replaces_an_earlier_export(tmp_path):
    save_pretrained_sparse(_pruned("2:4"), tmp_path, max_shard_size="20KB")
    model = make_decoder("llama", seed=3, layers=2)
    magnitude(model, sparsity=0.6)
    save_pretrained_sparse(model, tmp_path, overwrite=True)  # one file now; stale shards removed
    assert sorted(p.name for p in tmp_path.glob("*.safetensors")) == ["model.safetensors"]
    assert _equal_bitwise(model, load_pretrained_sparse(tmp_path))


def test_corrupted_or_foreign_folders_are_refused(tmp_path):
    model = _pruned("2:4")
    save_pretrained_sparse(model, tmp_path)
    f = tmp_path / "model.safetensors"
    raw = bytearray(f.read_bytes())
    raw[-1] ^= 0x40  # an exponent bit of the last float32 stored
    f.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="corrupted: the checksum of tensor"):
        load_pretrained_sparse(tmp_path)
    (tmp_path / MANIFEST_NAME).write_text('{"format_version": 1, "checksums": []}')
    with pytest.raises(ValueError, match="is malformed or of another version"):
        load_pretrained_sparse(tmp_path)
    (tmp_path / MANIFEST_NAME).unlink()
    with pytest.raises(ValueError, match=r"has no fastnips_sparsity\.json"):
        load_pretrained_sparse(tmp_path)
    other = tmp_path / "other"
    save_pretrained_sparse(model, other)
    cfg = json.loads((other / "config.json").read_text())
    cfg["quantization_config"]["sparsity_config"]["sparsity_structure"] = "unstructured"
    (other / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="not the dense sparsity block of its manifest"):
        load_pretrained_sparse(other)


def test_load_pretrained_sparse_needs_no_compressed_tensors(tmp_path, monkeypatch):
    qc = pytest.importorskip("transformers.utils.quantization_config")
    if not hasattr(qc, "is_compressed_tensors_available"):
        pytest.skip("this transformers does not gate compressed-tensors configs on is_compressed_tensors_available")
    model = _pruned("2:4")
    save_pretrained_sparse(model, tmp_path)
    monkeypatch.setattr(qc, "is_compressed_tensors_available", lambda: False)  # as where it is not installed
    with pytest.raises(ImportError, match="compressed-tensors"):  # the caveat of the module docstring
        transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path), local_files_only=True)
    assert _equal_bitwise(model, load_pretrained_sparse(tmp_path))


def test_cli_helpers_check_before_and_export_after(tmp_path):
    from fastnips.prune.hf_export import check_export_hf, export_hf

    with pytest.raises(ValueError, match="not the tiny decoder"):
        check_export_hf(tmp_path / "e", "tiny")
    (tmp_path / "f").write_text("x")
    with pytest.raises(ValueError, match="not a folder"):
        check_export_hf(tmp_path / "f", "smollm2")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x").write_text("x")
    with pytest.raises(ValueError, match="not empty"):
        check_export_hf(tmp_path / "d", "smollm2")
    assert check_export_hf(tmp_path / "e" / "f", "smollm2") == tmp_path / "e" / "f"
    model = _pruned("2:4")
    files = export_hf(model, tmp_path / "e", NM(2, 4))
    assert {"config.json", "model.safetensors", MANIFEST_NAME} <= set(files)
    assert _equal_bitwise(model, load_pretrained_sparse(tmp_path / "e"))
    with pytest.raises(ValueError, match="1:4 is claimed"):
        export_hf(model, tmp_path / "g", NM(1, 4))


def test_few_targets_are_named(tmp_path):
    model = make_decoder("llama", seed=0, layers=2)
    chosen = ["model.layers.0.mlp.up_proj", "model.layers.1.self_attn.q_proj"]
    magnitude(model, per_layer={n: NM(2, 4) for n in chosen})
    block = save_pretrained_sparse(model, tmp_path)["sparsity_config"]
    assert block["sparsity_structure"] == "2:4"
    assert block["targets"] == chosen
    assert sorted(block["ignore"]) == sorted(set(block_linears(model)) - set(chosen) | {"lm_head"})


def test_run_pipeline_exports_hf(tmp_path):
    import inspect

    from fastnips.data.text import ByteTokenizer
    from fastnips.prune import pipeline

    if "export_hf" not in inspect.signature(pipeline.run_pipeline).parameters:
        pytest.skip("run_pipeline has no export_hf yet (the --export-hf change of fastnips prune is not merged yet)")
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=260, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    net = transformers.LlamaForCausalLM(cfg).eval()
    s = pipeline.run_pipeline((net, ByteTokenizer()), criterion="wanda", pattern=NM(2, 4), window=None, calib_n=4,
                              seqlen=32, eval_n=2, batch_size=2, export_hf=tmp_path / "e", progress=False,
                              log=lambda *_: None)
    assert MANIFEST_NAME in s["export_hf_files"]
    back = load_pretrained_sparse(s["export_hf"])
    assert _equal_bitwise(net, back)
    assert back.fastnips_sparsity["sparsity_config"]["sparsity_structure"] == "2:4"
    with pytest.raises(ValueError, match="not the tiny decoder"):
        pipeline.run_pipeline("tiny", export_hf=tmp_path / "x")
