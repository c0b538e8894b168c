r"""GRACE: one global, sparse, non-negative map from embeddings to a concept dictionary, trained with a term that
preserves the geometry of the samples.

Math
----
Embeddings :math:`x \in \mathbb{R}^d` (L2-normalised), a concept dictionary :math:`C \in \mathbb{R}^{K \times d}`
(e.g. text embeddings of concept words, rows normalised). The map :math:`g_\theta(x) = \mathrm{ReLU}(W x + b)`
(or a one-hidden-layer MLP) gives codes :math:`a \ge 0` with exact zeros, and the reconstruction is
:math:`\hat x = C^\top a`. Per minibatch B:

.. math:: \mathcal{L} = \frac{1}{|B|} \sum_{i \in B} \lVert x_i - C^\top a_i \rVert^2
          + \lambda_1 \frac{1}{|B|} \sum_{i \in B} \lVert a_i \rVert_1
          + \lambda_2\, \mathcal{G}(X_B, A_B),

with :math:`\mathcal{G}` the mean squared difference of the cosine Gram matrices of the embeddings and of the
codes (:func:`fastnips.concepts.gram_mismatch`, blockwise: a batch of :math:`10^4` never forms a
:math:`10^4 \times 10^4` matrix).

Paper: "GRACE: feature-space concept decompositions of vision-language model embeddings" (NeurIPS 2026; a
descriptive title, see docs/papers.md). The paper's code is not public: this is a reconstruction from its
abstract ("learns this concept-based structure at the feature space level" = one global map instead of an
instance-level optimisation; "a training objective that preserves the geometric relations of different samples in
the concept space" = the Gram term). Choices made here, with the reason:

* **Encoder** ``ReLU(W x + b)`` initialised at :math:`W = C`, :math:`b = 0` (the codes start as the clipped
  concept similarities). The initialisation is deterministic and equivariant, so relabelling the concepts
  (permuting the rows of C) permutes the codes, which the tests check; a random initialisation would break that.
* **Gram term on the codes** :math:`a` (the "concept space"), cosine similarities (scale-free).
* **Losses averaged per sample**, Adam, fixed epochs (no wall-clock budget): a seed gives the same map.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from .gram import BLOCK, gram_mismatch


def _as_matrix(name: str, M, dtype=torch.float32) -> torch.Tensor:
    t = torch.as_tensor(M)
    if t.dim() != 2 or t.shape[0] == 0 or t.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array, got shape {tuple(t.shape)}")
    if not t.is_floating_point():
        raise TypeError(f"{name} must hold floating-point numbers, got {t.dtype}")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} has NaN or infinite entries")
    return t.to(dtype)


class GRACE:
    r"""Global concept decomposition of embeddings (module docstring), scikit-learn style.

    Parameters
    ----------
    l1 : float, default 0.01
        :math:`\lambda_1`, the sparsity weight.
    gram : float, default 10.0
        :math:`\lambda_2`, the weight of the Gram-matching term (0 turns it off).
    hidden : int, optional
        Width of a hidden layer (ReLU MLP encoder); default: the linear map ``ReLU(W x + b)``.
    epochs : int, default 30
    batch_size : int, default 256
    lr : float, default 3e-3
    block : int, default 1024
        Rows per block of the Gram term.
    normalize : bool, default True
        L2-normalise the embeddings and the concepts (as CLIP-style embeddings are used).
    seed : int, default 0
        Minibatch order (and the hidden layer's initialisation).

    Attributes
    ----------
    concepts_ : torch.Tensor, (K, d)
        The dictionary used (normalised when ``normalize``).
    encoder_ : torch.nn.Module
        The trained map g.
    history_ : list of dict
        Per epoch: the mean ``recon``, ``l1`` and ``gram`` terms and the ``loss``.

    Examples
    --------
    >>> from fastnips.concepts import planted_concepts
    >>> data = planted_concepts(400, d=32, n_concepts=40, seed=0)
    >>> model = GRACE(epochs=5).fit(data.X, data.C)
    >>> model.transform(data.X[:3]).shape
    torch.Size([3, 40])
    """

    def __init__(self, *, l1: float = 0.01, gram: float = 10.0, hidden: int | None = None, epochs: int = 30,
                 batch_size: int = 256, lr: float = 3e-3, block: int = BLOCK, normalize: bool = True, seed: int = 0):
        for name, v in (("l1", l1), ("gram", gram), ("lr", lr)):
            if not (isinstance(v, (int, float)) and v >= 0 and math.isfinite(v)):
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        for name, v in (("epochs", epochs), ("batch_size", batch_size), ("block", block)):
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if hidden is not None and (not isinstance(hidden, int) or hidden < 1):
            raise ValueError(f"hidden must be a positive integer or None, got {hidden!r}")
        self.l1, self.gram, self.hidden, self.epochs = float(l1), float(gram), hidden, epochs
        self.batch_size, self.lr, self.block, self.normalize, self.seed = batch_size, float(lr), block, normalize, seed

    def _prep(self, X) -> torch.Tensor:
        X = _as_matrix("X", X)
        if hasattr(self, "concepts_") and X.shape[1] != self.concepts_.shape[1]:
            raise ValueError(f"X has {X.shape[1]} features, the concept dictionary {self.concepts_.shape[1]}")
        return nn.functional.normalize(X, dim=1) if self.normalize else X

    def _encoder(self, C: torch.Tensor) -> nn.Module:
        K, d = C.shape
        if self.hidden is None:
            lin = nn.Linear(d, K)
            with torch.no_grad():
                lin.weight.copy_(C)
                lin.bias.zero_()
            return nn.Sequential(lin, nn.ReLU())
        torch.manual_seed(self.seed)
        out = nn.Linear(self.hidden, K)
        return nn.Sequential(nn.Linear(d, self.hidden), nn.ReLU(), out, nn.ReLU())

    def fit(self, X: np.ndarray | torch.Tensor, C: np.ndarray | torch.Tensor) -> GRACE:
        """Train the map on embeddings X (N, d) for the concept dictionary C (K, d). Returns self."""
        C = _as_matrix("C (the concept dictionary)", C)
        self.concepts_ = nn.functional.normalize(C, dim=1) if self.normalize else C
        X = self._prep(X)
        self.encoder_ = self._encoder(self.concepts_)
        opt = torch.optim.Adam(self.encoder_.parameters(), lr=self.lr)
        rng = np.random.default_rng(self.seed)
        self.history_ = []
        for _ in range(self.epochs):
            sums = np.zeros(4)
            order = torch.from_numpy(rng.permutation(X.shape[0]))
            for s in range(0, X.shape[0], self.batch_size):
                xb = X[order[s:s + self.batch_size]]
                terms = self._terms(xb)
                loss = terms[0] + self.l1 * terms[1] + self.gram * terms[2]
                opt.zero_grad()
                loss.backward()
                opt.step()
                sums += np.array([float(t.detach()) for t in (*terms, loss)]) * len(xb)
            self.history_.append(dict(zip(("recon", "l1", "gram", "loss"), sums / X.shape[0])))
        return self

    def _terms(self, xb: torch.Tensor):
        a = self.encoder_(xb)
        recon = ((xb - a @ self.concepts_) ** 2).sum(1).mean()
        l1 = a.sum(1).mean()
        g = gram_mismatch(xb, a, block=self.block) if self.gram > 0 else a.new_zeros(())
        return recon, l1, g

    def _check_fitted(self) -> None:
        if not hasattr(self, "encoder_"):
            raise RuntimeError("this GRACE is not fitted yet: call fit(X, C) first")

    def transform(self, X: np.ndarray | torch.Tensor) -> torch.Tensor:
        """Codes a = g(x) >= 0 of every row of X, shape (N, K)."""
        self._check_fitted()
        with torch.no_grad():
            return self.encoder_(self._prep(X))

    def fit_transform(self, X: np.ndarray | torch.Tensor, C: np.ndarray | torch.Tensor) -> torch.Tensor:
        """``fit(X, C).transform(X)``."""
        return self.fit(X, C).transform(X)

    def reconstruct(self, X: np.ndarray | torch.Tensor) -> torch.Tensor:
        """The reconstructions :math:`C^\\top g(x)` of every row of X, shape (N, d)."""
        return self.transform(X) @ self.concepts_

    def top_concepts(self, X: np.ndarray | torch.Tensor, names: list[str], k: int = 5) -> list[list[tuple[str, float]]]:
        """The ``k`` strongest concepts (name, activation) of every row of X (non-zero ones only)."""
        self._check_fitted()
        if len(names) != self.concepts_.shape[0]:
            raise ValueError(f"names has {len(names)} entries, the dictionary {self.concepts_.shape[0]} concepts")
        A = self.transform(X)
        vals, idx = A.topk(min(k, A.shape[1]), dim=1)
        return [[(names[j], float(v)) for v, j in zip(vr, ir) if v > 0] for vr, ir in zip(vals, idx)]
