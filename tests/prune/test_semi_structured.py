"""fastnips.prune.semi_structured: the CPU-side checks (pattern, dtype, device, module kind) and, on a CUDA GPU
with sparse tensor cores, outputs of the semi-structured model equal to the dense 2:4 model's."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")

from fastnips.prune import NM, magnitude  # noqa: E402
from fastnips.prune.criteria import block_linears  # noqa: E402
from fastnips.prune.semi_structured import follows_2_4, to_semi_structured_  # noqa: E402

from .conftest import make_decoder  # noqa: E402


def test_follows_2_4():
    w = torch.tensor([[1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 3.0]])
    assert follows_2_4(w)
    w[0, 1] = 5.0
    assert not follows_2_4(w)
    assert not follows_2_4(torch.ones(2, 6))  # columns not a multiple of 4


def test_checks_run_on_the_cpu_and_name_the_layer():
    model = make_decoder("tiny")
    magnitude(model, pattern=NM(2, 4))
    name = "model.layers.0.mlp.up_proj"
    with pytest.raises(ValueError, match=f"{name}: semi-structured 2:4 needs float16 or bfloat16"):
        to_semi_structured_(model, [name])
    model.half()
    with pytest.raises(ValueError, match=f"{name}: torch.sparse.to_sparse_semi_structured needs a CUDA device"):
        to_semi_structured_(model, [name])
    dense = make_decoder("tiny")
    with pytest.raises(ValueError, match="does not follow 2:4"):
        to_semi_structured_(dense, [name])
    with pytest.raises(ValueError, match=r"is not an nn\.Linear"):
        to_semi_structured_(dense, ["model.layers.0.mlp"])
    assert to_semi_structured_(dense) == []  # nothing 2:4, nothing to convert: no device needed


def _sparse_tensor_cores() -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 8


@pytest.mark.skipif(not _sparse_tensor_cores(), reason="to_sparse_semi_structured needs a CUDA GPU with "
                    "compute capability >= 8.0 (sparse tensor cores); none here")
def test_semi_structured_model_equals_the_dense_2_4_model():
    from fastnips.prune.tiny import TinyConfig, TinyDecoder

    torch.manual_seed(0)
    model = TinyDecoder(TinyConfig(vocab=64, d_model=128, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=256,
                                   max_seq=64)).eval()
    magnitude(model, pattern=NM(2, 4))
    model = model.half().cuda()
    ref = copy.deepcopy(model)
    done = to_semi_structured_(model)
    assert sorted(done) == sorted(block_linears(model))
    ids = torch.randint(0, 64, (32, 64), device="cuda")
    with torch.no_grad():
        torch.testing.assert_close(model(input_ids=ids).logits, ref(input_ids=ids).logits, rtol=2e-2, atol=2e-2)
