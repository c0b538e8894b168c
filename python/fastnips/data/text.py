r"""An offline text corpus (the standard library's docstrings), a byte tokenizer and packed token ids.

No natural-language corpus ships on PyPI without a download at run time, but every Python installation
carries one: the docstrings of its standard library. They are English prose about code, with some
doctest and reST markup, which is close enough to the text a small LLM such as SmolLM2 was trained on to
make perplexity meaningful, and large enough for calibration and evaluation.

Corpus
------
:func:`stdlib_docstrings` walks ``sysconfig.get_paths()["stdlib"]``, every ``*.py`` file sorted by its
relative path, skipping the folders ``test``/``tests``, ``idlelib``, ``tkinter`` and ``site-packages``.
Each file is parsed with :mod:`ast` (files that do not parse are skipped; warnings are silenced, so the
result does not depend on the warning filters in force) and the module, class and function docstrings
are collected in source order, cleaned by :func:`ast.get_docstring`. Docstrings shorter than
``min_chars`` are dropped and exact duplicates are kept once (the first), so that a held-out split
cannot contain a copy of a training document.

The corpus depends on the interpreter's version. On CPython 3.11.7 with ``min_chars=200`` it has
**2,093 documents, 1,165,586 characters, 1,165,625 UTF-8 bytes** (sha256 of the documents joined by
``"\x00"``: see ``tests/data/test_text.py``); the default split holds out 209 documents (104,411 byte
tokens with EOS) and trains on 1,884 (1,063,307). Extraction parses every file once and is cached per
process.

Splits and tokens
-----------------
:func:`corpus_split` splits by document with a seeded shuffle (held-out documents never appear in the
training split). :class:`ByteTokenizer` maps text to its UTF-8 bytes (ids 0..255) plus BOS 256 and EOS 257.
:func:`docstring_token_ids` returns a split as one 1-D ``torch.LongTensor``: the documents' ids
concatenated in order, each followed by the tokenizer's EOS id; with an HF tokenizer the documents are
encoded without special tokens.

Only the standard library is imported at module level; torch is imported by
:func:`docstring_token_ids` and :func:`encode_documents` alone.
"""

from __future__ import annotations

import ast
import functools
import random
import sysconfig
import warnings
from pathlib import Path

__all__ = [
    "SKIP_DIRS",
    "ByteTokenizer",
    "corpus_split",
    "docstring_token_ids",
    "encode_documents",
    "stdlib_docstrings",
]

#: Folder names (anywhere in the relative path) whose files are not read: test suites, GUI code and
#: third-party packages.
SKIP_DIRS = frozenset({"test", "tests", "idlelib", "tkinter", "site-packages", "__pycache__"})

_SPLITS = ("train", "held_out", "all")


def _docstrings_of(tree: ast.Module) -> list[str]:
    """Module, class and function docstrings of a parsed file, in source order (depth first)."""
    out: list[str] = []
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)

    def visit(node: ast.AST) -> None:
        if isinstance(node, kinds):
            doc = ast.get_docstring(node, clean=True)
            if doc:
                out.append(doc)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


@functools.cache
def _stdlib_docstrings(root: str) -> tuple[str, ...]:
    """Every distinct docstring under ``root`` (first occurrence kept), any length; parsed once per process."""
    base = Path(root)
    files = sorted(
        (p for p in base.rglob("*.py") if not SKIP_DIRS.intersection(p.relative_to(base).parts[:-1])),
        key=lambda p: p.relative_to(base).as_posix(),
    )
    seen: set[str] = set()
    docs: list[str] = []
    for path in files:
        try:
            source = path.read_bytes()
            with warnings.catch_warnings():  # SyntaxWarning (invalid escapes) must not depend on the filters
                warnings.simplefilter("ignore")
                tree = ast.parse(source, filename=str(path))
        except (OSError, SyntaxError, ValueError, UnicodeDecodeError, RecursionError, MemoryError):
            continue
        for doc in _docstrings_of(tree):
            if doc not in seen:
                seen.add(doc)
                docs.append(doc)
    return tuple(docs)


def stdlib_docstrings(min_chars: int = 200) -> list[str]:
    """The running interpreter's standard-library docstrings of at least ``min_chars`` characters.

    Deterministic for a given Python installation (files sorted by relative path, docstrings in source
    order, exact duplicates dropped); cached per process. See the module docstring for the rules and the
    size on CPython 3.11.

    Parameters
    ----------
    min_chars : int
        Minimum length in characters of a kept docstring (after :func:`ast.get_docstring` cleaning), >= 0.

    Returns
    -------
    list of str
        A fresh list (the cached tuple is not exposed to mutation).
    """
    if isinstance(min_chars, bool) or not isinstance(min_chars, int) or min_chars < 0:
        raise ValueError(f"stdlib_docstrings: min_chars must be an int >= 0, got {min_chars!r}")
    root = sysconfig.get_paths()["stdlib"]
    if not Path(root).is_dir():
        raise FileNotFoundError(f"stdlib_docstrings: the standard library folder {root!r} does not exist")
    return [d for d in _stdlib_docstrings(root) if len(d) >= min_chars]


def corpus_split(texts, held_out: float = 0.1, seed: int = 0) -> tuple[list[str], list[str]]:
    """Split documents into (train, held_out) by a seeded shuffle; both keep the input order.

    ``round(held_out * len(texts))`` documents are held out (at least one when ``held_out > 0`` and there
    are two or more documents, and never all of them). Documents are assigned as units: no document is
    split between the two parts. The same texts, ``held_out`` and ``seed`` give the same split.

    Parameters
    ----------
    texts : sequence of str
    held_out : float in [0, 1)
    seed : int
    """
    texts = list(texts)
    if not isinstance(held_out, (int, float)) or isinstance(held_out, bool) or not 0.0 <= held_out < 1.0:
        raise ValueError(f"corpus_split: held_out must be a fraction in [0, 1), got {held_out!r}")
    n = len(texts)
    n_held = round(held_out * n)
    if held_out > 0 and n >= 2:
        n_held = min(max(n_held, 1), n - 1)
    order = list(range(n))
    random.Random(seed).shuffle(order)
    held = set(order[:n_held])
    train = [t for i, t in enumerate(texts) if i not in held]
    test = [t for i, t in enumerate(texts) if i in held]
    return train, test


class ByteTokenizer:
    """UTF-8 bytes as tokens: ids 0..255 are bytes, 256 is BOS, 257 is EOS (``vocab_size = 258``).

    A lossless tokenizer that needs no vocabulary file. Attribute names follow HF tokenizers
    (``vocab_size``, ``bos_token_id``, ``eos_token_id``) so code can take either.
    """

    vocab_size = 258
    bos_token_id = 256
    eos_token_id = 257

    def __len__(self) -> int:
        return self.vocab_size

    def __repr__(self) -> str:
        return "ByteTokenizer(vocab_size=258, bos=256, eos=257)"

    def __eq__(self, other) -> bool:
        return isinstance(other, ByteTokenizer)

    def __hash__(self) -> int:
        return hash(ByteTokenizer)

    def encode(self, text: str, *, add_bos: bool = False, add_eos: bool = False) -> list[int]:
        """The UTF-8 bytes of ``text`` as ints, optionally framed by BOS/EOS."""
        if not isinstance(text, str):
            raise TypeError(f"ByteTokenizer.encode: expected str, got {type(text).__name__}")
        ids = list(text.encode("utf-8"))
        if add_bos:
            ids.insert(0, self.bos_token_id)
        if add_eos:
            ids.append(self.eos_token_id)
        return ids

    def decode(self, ids, *, errors: str = "replace") -> str:
        """Text from ids; BOS/EOS are dropped, invalid UTF-8 is handled by ``errors`` (as bytes.decode).

        Accepts any iterable of ints, including a 1-D tensor or array. Ids outside 0..257 raise.
        """
        out = bytearray()
        for i in ids:
            i = int(i)
            if 0 <= i < 256:
                out.append(i)
            elif i not in (self.bos_token_id, self.eos_token_id):
                raise ValueError(f"ByteTokenizer.decode: id {i} is outside the vocabulary 0..257")
        return out.decode("utf-8", errors=errors)


def _encode_one(tokenizer, text: str) -> list[int]:
    if isinstance(tokenizer, ByteTokenizer):
        return list(text.encode("utf-8"))
    return list(tokenizer.encode(text, add_special_tokens=False))  # an HF tokenizer


def encode_documents(tokenizer, texts):
    """Token ids of ``texts`` concatenated into one 1-D ``torch.LongTensor``, each document followed by EOS.

    ``tokenizer`` is a :class:`ByteTokenizer` or an HF tokenizer (``encode(text, add_special_tokens=False)``
    and ``eos_token_id``); documents are encoded without special tokens, then ``eos_token_id`` is appended.
    """
    from .._optional import torch as _torch

    torch = _torch()
    if tokenizer is None:
        tokenizer = ByteTokenizer()
    eos = getattr(tokenizer, "eos_token_id", None)
    if eos is None:
        raise ValueError("encode_documents: the tokenizer has no eos_token_id to separate documents with")
    if isinstance(texts, str):
        raise TypeError("encode_documents: expected a sequence of documents, got one str")
    ids: list[int] = []
    for text in texts:
        ids.extend(_encode_one(tokenizer, text))
        ids.append(int(eos))
    return torch.tensor(ids, dtype=torch.long)


def docstring_token_ids(tokenizer=None, split: str = "train", *, min_chars: int = 200, held_out: float = 0.1,
                        seed: int = 0):
    """Token ids of a split of :func:`stdlib_docstrings`: a 1-D ``torch.LongTensor``, EOS after every document.

    Parameters
    ----------
    tokenizer : ByteTokenizer, HF tokenizer or None
        None means :class:`ByteTokenizer` (bytes, EOS = 257).
    split : {"train", "held_out", "all"}
        A part of :func:`corpus_split` ``(docs, held_out, seed)``, or every document.
    min_chars, held_out, seed
        Passed to :func:`stdlib_docstrings` and :func:`corpus_split`.
    """
    if split not in _SPLITS:
        raise ValueError(f"docstring_token_ids: split must be one of {_SPLITS}, got {split!r}")
    docs = stdlib_docstrings(min_chars)
    if split != "all":
        train, test = corpus_split(docs, held_out=held_out, seed=seed)
        docs = train if split == "train" else test
    return encode_documents(tokenizer, docs)
