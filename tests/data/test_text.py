"""fastnips.data.text: the stdlib docstring corpus, its split, the byte tokenizer and packed ids."""

from __future__ import annotations

import hashlib
import sys

import pytest

from fastnips.data.text import (
    ByteTokenizer,
    corpus_split,
    docstring_token_ids,
    encode_documents,
    stdlib_docstrings,
)

# the corpus of CPython 3.11.7 with min_chars=200 (documented in fastnips.data.text); other versions differ
PINNED_311 = {"docs": 2093, "chars": 1_165_586,
              "sha256": "1380bb18fc37b0b885548140383a48786675d35b2c911762e449bc6f89a59992"}


def test_corpus_is_deterministic_and_structured():
    docs = stdlib_docstrings()
    assert docs == stdlib_docstrings()  # cached, and a fresh list each time
    assert docs is not stdlib_docstrings()
    docs.append("mutating the returned list does not touch the cache")
    assert stdlib_docstrings()[-1] != docs[-1]
    docs = stdlib_docstrings()
    assert len(docs) > 500
    assert sum(map(len, docs)) > 300_000
    assert all(isinstance(d, str) and len(d) >= 200 for d in docs)
    assert len(set(docs)) == len(docs)  # duplicates kept once
    assert all(d == d.strip() for d in docs[:200])  # ast.get_docstring cleans the indentation


def test_min_chars_filters_monotonically():
    long_ = stdlib_docstrings(1000)
    assert long_
    assert all(len(d) >= 1000 for d in long_)
    assert set(long_) <= set(stdlib_docstrings())
    with pytest.raises(ValueError, match="min_chars"):
        stdlib_docstrings(-1)


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="the corpus is pinned for CPython 3.11")
def test_corpus_pinned_on_311():
    docs = stdlib_docstrings()
    if sys.version_info[:3] != (3, 11, 7):
        pytest.skip("pinned on 3.11.7; patch releases may change docstrings")
    assert len(docs) == PINNED_311["docs"]
    assert sum(map(len, docs)) == PINNED_311["chars"]
    assert hashlib.sha256("\x00".join(docs).encode()).hexdigest() == PINNED_311["sha256"]


def test_split_is_disjoint_deterministic_and_by_document():
    docs = stdlib_docstrings()
    train, held = corpus_split(docs, held_out=0.1, seed=0)
    assert (train, held) == corpus_split(docs, held_out=0.1, seed=0)
    assert len(train) + len(held) == len(docs)
    assert len(held) == round(0.1 * len(docs))
    assert not set(train) & set(held)
    assert set(train) | set(held) == set(docs)
    # both parts keep the corpus order
    pos = {d: i for i, d in enumerate(docs)}
    assert [pos[d] for d in held] == sorted(pos[d] for d in held)
    assert corpus_split(docs, held_out=0.1, seed=1)[1] != held


def test_split_edge_cases():
    texts = [f"doc {i}" for i in range(5)]
    assert corpus_split(texts, held_out=0.0) == (texts, [])
    train, held = corpus_split(texts, held_out=0.01)
    assert len(held) == 1
    assert len(train) == 4
    assert corpus_split(["only"], held_out=0.5) == (["only"], [])
    for bad in (-0.1, 1.0, 2, "0.1", True):
        with pytest.raises(ValueError, match="held_out"):
            corpus_split(texts, held_out=bad)


@pytest.mark.parametrize("text", ["", "plain ascii", "naïve café — ü 中文 🙂", "a\x00b\nc"])
def test_byte_tokenizer_round_trip(text):
    tok = ByteTokenizer()
    ids = tok.encode(text)
    assert ids == list(text.encode("utf-8"))
    assert all(0 <= i < 256 for i in ids)
    assert tok.decode(ids) == text
    framed = tok.encode(text, add_bos=True, add_eos=True)
    assert framed[0] == tok.bos_token_id == 256
    assert framed[-1] == tok.eos_token_id == 257
    assert tok.decode(framed) == text


def test_byte_tokenizer_errors():
    tok = ByteTokenizer()
    assert len(tok) == tok.vocab_size == 258
    assert tok.decode([0xFF, 0x41]) == "\ufffdA"  # invalid UTF-8 is replaced, not an exception
    with pytest.raises(ValueError, match="outside"):
        tok.decode([258])
    with pytest.raises(TypeError):
        tok.encode(b"bytes")


def test_packed_ids_are_eos_separated():
    torch = pytest.importorskip("torch")
    tok = ByteTokenizer()
    ids = encode_documents(tok, ["ab", "c"])
    assert ids.dtype == torch.long
    assert ids.tolist() == [97, 98, 257, 99, 257]
    with pytest.raises(TypeError):
        encode_documents(tok, "a single string")

    held = docstring_token_ids(split="held_out")
    train = docstring_token_ids()  # the default split is "train"
    _, held_docs = corpus_split(stdlib_docstrings())
    assert held.dim() == 1
    assert held.dtype == torch.long
    assert int((held == tok.eos_token_id).sum()) == len(held_docs)
    assert int(held[-1]) == tok.eos_token_id
    assert held.numel() == sum(len(d.encode()) + 1 for d in held_docs)
    assert tok.decode(held[: held.tolist().index(257)]) == held_docs[0]
    assert train.numel() + held.numel() == docstring_token_ids(split="all").numel()
    with pytest.raises(ValueError, match="split"):
        docstring_token_ids(split="test")


def test_packed_ids_with_a_tokenizer_like_hf():
    pytest.importorskip("torch")

    class Fake:  # the two members encode_documents uses from an HF tokenizer
        eos_token_id = 7

        def encode(self, text, add_special_tokens=True):
            assert add_special_tokens is False
            return [len(w) for w in text.split()]

    assert encode_documents(Fake(), ["ab c", "dddd"]).tolist() == [2, 1, 7, 4, 7]

    class NoEos(Fake):
        eos_token_id = None

    with pytest.raises(ValueError, match="eos"):
        encode_documents(NoEos(), ["x"])
