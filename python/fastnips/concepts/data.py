r"""Data for concept decompositions: planted concepts with known activations, and loaders for a user's own
embeddings and concept vocabulary.

**Planted concepts** (:func:`planted_concepts`): a dictionary of K random unit concepts in
:math:`\mathbb{R}^d`; each sample activates ``active`` of them, chosen with a per-class preference (``n_classes``
classes, each favouring its own block of concepts, so a linear probe has a task), with weights uniform in
[0.5, 1.5]; :math:`x = \mathrm{normalise}(C^\top a + \sigma \varepsilon)`. The true codes are returned for the
recovery metrics. Honest synthetic data: the paper's image and video benchmarks and their VLM embeddings
cannot be had here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch


@dataclass
class PlantedConcepts:
    """Embeddings with known concept activations.

    Attributes
    ----------
    X : torch.Tensor, (N, d) float32
        Unit-norm embeddings.
    C : torch.Tensor, (K, d) float32
        Unit-norm concepts.
    A : torch.Tensor, (N, K) float32
        True non-negative activations (``active`` non-zeros per row).
    y : torch.Tensor, (N,) int64
        Class of each sample.
    """

    X: torch.Tensor
    C: torch.Tensor
    A: torch.Tensor
    y: torch.Tensor


def planted_concepts(n: int, *, d: int = 64, n_concepts: int = 100, active: int = 4, n_classes: int = 5,
                     noise: float = 0.05, seed: int = 0) -> PlantedConcepts:
    """Embeddings built from known sparse non-negative concept activations (module docstring).

    Parameters
    ----------
    n : int
        Samples (>= 1).
    d : int, default 64
        Embedding dimension.
    n_concepts : int, default 100
        K (>= ``active``).
    active : int, default 4
        Non-zero activations per sample (>= 1).
    n_classes : int, default 5
        Classes; class c draws half its concepts from its own block of K / n_classes concepts.
    noise : float, default 0.05
        Std of the Gaussian noise added before normalising (>= 0).
    seed : int, default 0
        The concepts and the samples come from ``numpy.random.default_rng(seed)``.

    Returns
    -------
    PlantedConcepts

    Examples
    --------
    >>> p = planted_concepts(10, d=16, n_concepts=20, seed=1)
    >>> tuple(p.X.shape), tuple(p.A.shape), int((p.A[0] > 0).sum())
    ((10, 16), (10, 20), 4)
    """
    for name, v, lo in (("n", n, 1), ("d", d, 1), ("n_concepts", n_concepts, 1), ("active", active, 1),
                        ("n_classes", n_classes, 1)):
        if not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
    if active > n_concepts:
        raise ValueError(f"active ({active}) must be at most n_concepts ({n_concepts})")
    if not noise >= 0:
        raise ValueError(f"noise must be >= 0, got {noise!r}")
    rng = np.random.default_rng(seed)
    C = rng.standard_normal((n_concepts, d))
    C /= np.linalg.norm(C, axis=1, keepdims=True)
    y = rng.integers(0, n_classes, size=n)
    blocks = np.array_split(np.arange(n_concepts), n_classes)
    A = np.zeros((n, n_concepts))
    for i in range(n):
        own = blocks[y[i]]
        k_own = min(len(own), (active + 1) // 2)
        idx = set(rng.choice(own, size=k_own, replace=False).tolist())
        rest = [j for j in range(n_concepts) if j not in idx]
        idx.update(rng.choice(rest, size=active - k_own, replace=False).tolist())
        A[i, sorted(idx)] = rng.uniform(0.5, 1.5, size=active)
    X = A @ C + noise * rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    f = lambda m: torch.from_numpy(m.astype(np.float32))
    return PlantedConcepts(X=f(X), C=f(C), A=f(A), y=torch.from_numpy(y).long())


def load_embeddings(path: str | Path) -> np.ndarray:
    """A user's embeddings from a ``.npy`` file: a finite 2-D float array (N, d), returned as float32.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    numpy.ndarray, (N, d) float32

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "e.npy"); np.save(p, np.eye(3))
    >>> load_embeddings(p).shape
    (3, 3)
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no embeddings file at {path}")
    try:
        M = np.load(path, allow_pickle=False)
    except ValueError as exc:
        raise ValueError(f"{path} is not a plain .npy array ({exc})") from None
    if M.ndim != 2 or M.size == 0 or M.dtype.kind not in "fiu":
        raise ValueError(f"{path}: expected a non-empty 2-D numeric array (N, d), got dtype {M.dtype} shape {M.shape}")
    M = M.astype(np.float32)
    if not np.isfinite(M).all():
        raise ValueError(f"{path}: the embeddings have NaN or infinite entries")
    return M


def load_concepts(words: str | Path, embeddings: str | Path) -> tuple[list[str], np.ndarray]:
    """A concept vocabulary: a text file with one concept per line (blank lines skipped) and a ``.npy`` file with
    one embedding per concept, in the same order.

    Parameters
    ----------
    words : str or Path
    embeddings : str or Path

    Returns
    -------
    (list of str, numpy.ndarray (K, d) float32)

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> t = tempfile.mkdtemp(); open(os.path.join(t, "w.txt"), "w").write("dog\\ncat\\n")
    8
    >>> np.save(os.path.join(t, "c.npy"), np.eye(2))
    >>> load_concepts(os.path.join(t, "w.txt"), os.path.join(t, "c.npy"))[0]
    ['dog', 'cat']
    """
    words = Path(words)
    if not words.is_file():
        raise FileNotFoundError(f"no concept word list at {words}")
    try:
        names = [w.strip() for w in words.read_text(encoding="utf-8").splitlines() if w.strip()]
    except UnicodeDecodeError as exc:
        raise ValueError(f"{words} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    C = load_embeddings(embeddings)
    if len(names) != C.shape[0]:
        raise ValueError(f"{words} lists {len(names)} concepts but {embeddings} has {C.shape[0]} embeddings")
    return names, C
