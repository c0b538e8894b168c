"""End to end on the shipped tiny decoder and real text: held-out window losses, perplexity ordering, the
sparse checkpoint, the ``fastnips prune`` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from fastnips.cli import main
from fastnips.data.text import docstring_token_ids
from fastnips.prune import NM
from fastnips.prune.calib import Calibration
from fastnips.prune.criteria import block_linears, wanda
from fastnips.prune.pipeline import parse_pattern, parse_window, run_pipeline
from fastnips.prune.reconstruction import reconstruct
from fastnips.prune.tiny import load_tiny

pytest.importorskip("safetensors")


@pytest.fixture(scope="module")
def text_calib():
    train = docstring_token_ids(split="train")
    held = docstring_token_ids(split="held_out")
    return (Calibration.from_token_ids(train, seqlen=64, n=24, seed=0),
            Calibration.from_token_ids(held, seqlen=64, n=16, seed=0))


def test_reconstruction_lowers_the_window_loss_on_held_out_text(text_calib):
    calib, held = text_calib
    model, _ = load_tiny()
    masks = wanda(load_tiny()[0], calib, sparsity=0.5)
    rep = reconstruct(model, calib, masks, window="attn_mlp", epochs=3, lr=1e-3, batch_size=4, validation=held)
    improved = [w.val_after < w.val_before for w in rep.windows]
    assert sum(improved) >= 0.9 * len(improved), rep.table()
    assert all(w.loss_after <= w.loss_before for w in rep.windows)


def test_pipeline_orders_perplexities_and_saves_a_checkpoint_that_loads(tmp_path):
    from fastnips.prune import load_sparse

    s = run_pipeline("tiny", criterion="wanda", pattern=NM(2, 4), window="block", epochs=3, lr=1e-3, calib_n=32,
                     seqlen=64, eval_n=16, batch_size=8, out=tmp_path, progress=False, log=lambda *_: None)
    assert s["ppl_dense"] < s["ppl_reconstructed"] < s["ppl_pruned"]
    assert s["sparsity"] == pytest.approx(0.5, abs=1e-9)
    model, _ = load_tiny()
    sd = load_sparse(tmp_path / "sparse.safetensors", model)
    for n, lin in block_linears(model).items():
        g = (lin.weight != 0).reshape(lin.weight.shape[0], -1, 4).sum(-1)
        assert bool((g <= 2).all()), n
    assert json.loads((tmp_path / "summary.json").read_text())["ppl_pruned"] == s["ppl_pruned"]
    assert set(sd) == set(model.state_dict())


def test_prune_command_json(tmp_path):
    r = CliRunner().invoke(main, ["prune", "--model", "tiny", "--criterion", "magnitude", "--window", "none",
                                  "--calib-n", "8", "--seqlen", "64", "--eval-n", "4", "--json",
                                  "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    assert s["ppl_pruned"] > s["ppl_dense"]
    assert "ppl_reconstructed" not in s
    assert (tmp_path / "sparse.safetensors").exists()


def test_prune_command_refuses_bad_options():
    r = CliRunner().invoke(main, ["prune", "--model", "tiny", "--pattern", "2-4"])
    assert r.exit_code != 0
    assert "KEEP:GROUP" in r.output
    r = CliRunner().invoke(main, ["prune", "--model", "tiny", "--window", "layers"])
    assert r.exit_code != 0
    assert "window must be" in r.output
    r = CliRunner().invoke(main, ["prune", "--model", "/nonexistent/dir"])
    assert r.exit_code != 0
    assert "nothing is downloaded" in r.output


def test_parsers():
    assert parse_pattern("2:4") == NM(2, 4)
    assert parse_pattern("unstructured") is None
    assert parse_window("none") is None
    assert parse_window("blocks:3").k == 3
    with pytest.raises(ValueError):
        parse_pattern("4:2")


def test_prune_command_on_a_local_hugging_face_folder(tmp_path):
    """Any local HF causal LM folder works: a random Llama with a byte-level BPE tokenizer trained here."""
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    from fastnips.data.text import stdlib_docstrings

    tok = tokenizers.Tokenizer(tokenizers.models.BPE())
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=300, special_tokens=["<eos>"],
                                             initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(stdlib_docstrings()[:200], trainer)
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>")
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=len(fast), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                                   eos_token_id=fast.eos_token_id)
    folder = tmp_path / "llama"
    transformers.LlamaForCausalLM(cfg).save_pretrained(folder)
    fast.save_pretrained(folder)
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["prune", "--model", str(folder), "--criterion", "sparsegpt", "--pattern", "2:4",
                                  "--window", "attn_mlp", "--epochs", "1", "--calib-n", "8", "--seqlen", "32",
                                  "--eval-n", "4", "--json", "--out", str(out)])
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    assert s["sparsity"] == pytest.approx(0.5, abs=1e-9)
    assert (out / "config.json").exists()
    assert (out / "sparse.safetensors").exists()


def _no_load(monkeypatch):
    """Make loading a model fail loudly: a refusal must come before it."""
    import fastnips.prune.hf as hf

    def boom(*_a, **_k):
        raise AssertionError("the model was loaded before the arguments were checked")

    monkeypatch.setattr(hf, "load_causal_lm", boom)


@pytest.mark.parametrize(("args", "match"), [
    (["--pattern", "2-4"], "KEEP:GROUP"),
    (["--pattern", "0:4"], "1 <= keep <= group"),
    (["--window", "layers"], "window must be"),
    (["--model", "/nonexistent/dir"], "nothing is downloaded"),
    (["--criterion", "wanda", "--scope", "block"], "scope 'block' does not apply to wanda"),
    (["--criterion", "sparsegpt", "--scope", "matrix"], "scope 'matrix' does not apply to sparsegpt"),
    (["--criterion", "sparsegpt", "--pattern", "2:4", "--scope", "row"], "unstructured sparsity only"),
])
def test_prune_command_checks_options_before_loading_the_model(monkeypatch, args, match):
    _no_load(monkeypatch)
    r = CliRunner().invoke(main, ["prune", *args])
    assert r.exit_code == 2, r.output  # click's usage error
    assert match in r.output
    assert "Traceback" not in r.output


def test_prune_command_refuses_an_unwritable_out_before_the_run(tmp_path, monkeypatch):
    _no_load(monkeypatch)
    afile = tmp_path / "a_file"
    afile.write_text("x")
    for out, match in ((afile, "is a file"), (afile / "sub", "is not a folder")):
        r = CliRunner().invoke(main, ["prune", "--out", str(out)])
        assert r.exit_code == 2, r.output
        assert match in r.output
        assert "--out" in r.output
    assert afile.read_text() == "x"


def test_prune_command_refuses_a_read_only_folder(tmp_path, monkeypatch):
    """A mode-0500 folder, or (as root, who may write there) /proc, where nobody can create a file."""
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        try:
            (ro / "probe").write_text("")
            (ro / "probe").unlink()
            target = Path("/proc/fastnips-out")
            if not Path("/proc").is_dir():
                pytest.skip("this user writes into mode-0500 folders and there is no /proc")
        except OSError:
            target = ro / "new"
        _no_load(monkeypatch)
        r = CliRunner().invoke(main, ["prune", "--out", str(target)])
        assert r.exit_code == 2, r.output
        assert "is not writable" in r.output
        assert not target.exists()
    finally:
        ro.chmod(0o700)


@pytest.mark.parametrize("kind", ["oserror", "safetensors"])
def test_a_failed_write_after_the_run_is_one_line(tmp_path, monkeypatch, kind):
    """The folder disappears (or the disk fills) during the run: one line naming the folder, no traceback."""
    import safetensors

    import fastnips.prune.pipeline as pl

    def fail(*_a, **_k):
        if kind == "oserror":
            raise OSError(28, "No space left on device")
        raise safetensors.SafetensorError("Error while serializing: No space left on device")

    monkeypatch.setattr(pl, "_save", fail)
    r = CliRunner().invoke(main, ["prune", "--criterion", "magnitude", "--window", "none", "--calib-n", "4",
                                  "--seqlen", "32", "--eval-n", "2", "--no-baseline", "--out", str(tmp_path / "o")])
    assert r.exit_code == 1, r.output
    assert "could not write the results to" in r.output
    assert "No space left on device" in r.output
    assert "Traceback" not in r.output


def test_help_names_only_written_files_and_the_summary_lists_them(tmp_path):
    r = CliRunner().invoke(main, ["prune", "--help"])
    assert "config.json for Hugging Face models" in " ".join(r.output.split())
    out = tmp_path / "o"
    r = CliRunner().invoke(main, ["prune", "--criterion", "sparsegpt", "--window", "none", "--calib-n", "4",
                                  "--seqlen", "32", "--eval-n", "2", "--no-baseline", "--out", str(out)])
    assert r.exit_code == 0, r.output
    written = sorted(p.name for p in out.iterdir())
    assert written == ["sparse.safetensors", "summary.json"]  # the tiny decoder has no HF config
    assert sorted(json.loads((out / "summary.json").read_text())["files"]) == written
    assert "sparse.safetensors, summary.json" in r.output
    assert "per block" in r.output  # sparsegpt's default comparison group
