"""Shared pieces of the pruning tests: the ``backend`` fixture over the backends of the cpp-backed ops (mask
selection, packing; modules whose ops have others override it), and small decoders: our TinyDecoder and,
when transformers is installed, a randomly initialised Hugging Face Llama built in memory (no download).
Both have HF Llama's module names."""

from __future__ import annotations

import pytest
import torch

from fastnips.prune.calib import Calibration

from ..helpers import backend_fixture

backend = backend_fixture("reference", "cpp")


def make_decoder(kind: str, seed: int = 0, layers: int = 3):
    torch.manual_seed(seed)
    if kind == "tiny":
        from fastnips.prune.tiny import TinyConfig, TinyDecoder

        return TinyDecoder(TinyConfig(vocab=64, d_model=32, n_layers=layers, n_heads=4, n_kv_heads=2, d_ff=64,
                                      max_seq=64)).eval()
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    return transformers.LlamaForCausalLM(cfg).eval()


@pytest.fixture(params=["tiny", "llama"])
def decoder_kind(request):
    return request.param


@pytest.fixture
def calib():
    ids = torch.randint(0, 64, (4000,), generator=torch.Generator().manual_seed(1))
    return Calibration.from_token_ids(ids, seqlen=16, n=8, seed=0)
