r"""Metrics of a concept decomposition: faithfulness of the reconstruction, sparsity, preservation of the samples'
geometry, recovery of planted concepts, and downstream faithfulness.

Given embeddings X (N, d), codes A (N, K) >= 0 and the dictionary C (K, d):

* :func:`reconstruction_cosine`: mean cosine between :math:`x_i` and :math:`C^\top a_i` (higher is better);
* :func:`sparsity`: mean number of non-zero codes per sample (lower is sparser);
* :func:`gram_error`: :math:`\lVert \hat X \hat X^\top - \hat A \hat A^\top \rVert_F / N` on held-out data, the
  root of :func:`fastnips.concepts.gram_mismatch` (lower is better);
* :func:`knn_overlap`: mean fraction of each sample's k nearest neighbours (cosine) in X that are also among
  its k nearest in A (higher is better);
* :func:`concept_auroc`: AUROC of the codes as scores for the planted support :math:`A^\star > 0`, over all
  (sample, concept) pairs (higher is better);
* :func:`probe_faithfulness`: accuracy of a logistic-regression probe trained on the original embeddings,
  evaluated on the original and on the reconstructed test embeddings (the two should be close).
"""

from __future__ import annotations

import numpy as np
import torch

from .gram import gram_mismatch

Matrix = np.ndarray | torch.Tensor | list


def _t(M) -> torch.Tensor:
    return torch.as_tensor(M).float()


def reconstruction_cosine(X: Matrix, A: Matrix, C: Matrix) -> float:
    """Mean cosine similarity of every x and its reconstruction :math:`C^\\top a` (0 for an all-zero code).

    Parameters
    ----------
    X : (N, d) array or tensor
    A : (N, K) array or tensor
    C : (K, d) array or tensor

    Returns
    -------
    float

    Examples
    --------
    >>> import torch
    >>> reconstruction_cosine(torch.eye(2), torch.eye(2), torch.eye(2))
    1.0
    """
    return float(torch.nn.functional.cosine_similarity(_t(X), _t(A) @ _t(C), dim=1).mean())


def sparsity(A: Matrix) -> float:
    """Mean number of non-zero entries per row of A.

    Parameters
    ----------
    A : (N, K) array or tensor

    Returns
    -------
    float

    Examples
    --------
    >>> sparsity([[0.0, 1.0], [2.0, 3.0]])
    1.5
    """
    return float((_t(A) != 0).float().sum(1).mean())


def gram_error(X: Matrix, A: Matrix, *, block: int = 1024) -> float:
    """Root mean squared difference of the cosine Gram matrices of X and A (blockwise).

    Parameters
    ----------
    X : (N, d) array or tensor
    A : (N, K) array or tensor
    block : int, default 1024

    Returns
    -------
    float

    Examples
    --------
    >>> import torch
    >>> gram_error(torch.eye(3), torch.eye(3))
    0.0
    """
    with torch.no_grad():
        return float(gram_mismatch(_t(X), _t(A), block=block).sqrt())


def _knn(M: torch.Tensor, k: int) -> torch.Tensor:
    Mn = torch.nn.functional.normalize(M, dim=1)
    S = Mn @ Mn.T
    S.fill_diagonal_(-float("inf"))
    return S.topk(k, dim=1).indices


def knn_overlap(X: Matrix, A: Matrix, *, k: int = 10) -> float:
    """Mean overlap of the k-nearest-neighbour sets (cosine) of every sample in X and in A.

    Parameters
    ----------
    X : (N, d) array or tensor
    A : (N, K) array or tensor
    k : int, default 10
        1 <= k < N.

    Returns
    -------
    float
        In [0, 1].

    Examples
    --------
    >>> import torch
    >>> knn_overlap(torch.eye(4), torch.eye(4), k=1) >= 0
    True
    """
    X, A = _t(X), _t(A)
    if not isinstance(k, int) or not 1 <= k < X.shape[0]:
        raise ValueError(f"k must be an integer in [1, N), N = {X.shape[0]}; got {k!r}")
    nx, na = _knn(X, k), _knn(A, k)
    hits = [len(set(a.tolist()) & set(b.tolist())) for a, b in zip(nx, na)]
    return float(np.mean(hits) / k)


def concept_auroc(A: Matrix, A_true: Matrix) -> float:
    """AUROC of the codes A as scores for the planted support ``A_true > 0`` (all pairs; ties count 1/2).

    Parameters
    ----------
    A : (N, K) array or tensor
    A_true : (N, K) array or tensor

    Returns
    -------
    float

    Examples
    --------
    >>> concept_auroc([[0.9, 0.0], [0.0, 0.3]], [[1.0, 0.0], [0.0, 2.0]])
    1.0
    """
    from scipy.stats import rankdata

    s = _t(A).flatten().numpy().astype(np.float64)
    pos = (_t(A_true).flatten() > 0).numpy()
    if pos.all() or not pos.any():
        raise ValueError("A_true needs both active and inactive entries for an AUROC")
    ranks = rankdata(s)  # average ranks over ties (Mann-Whitney U)
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def probe_faithfulness(X_train: Matrix, y_train: Matrix, X_test: Matrix, y_test: Matrix,
                       X_test_reconstructed: Matrix) -> dict:
    """A logistic-regression probe (scikit-learn, ``max_iter=2000``) trained on the original train embeddings:
    its test accuracy on the original and on the reconstructed embeddings.

    Parameters
    ----------
    X_train, y_train, X_test, y_test, X_test_reconstructed : arrays or tensors

    Returns
    -------
    dict
        ``{"original": acc, "reconstructed": acc}``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]] * 5); y = np.array([0, 1] * 5)
    >>> probe_faithfulness(X, y, X, y, X)["reconstructed"]
    1.0
    """
    from sklearn.linear_model import LogisticRegression

    f = lambda M: _t(M).numpy()
    clf = LogisticRegression(max_iter=2000).fit(f(X_train), np.asarray(y_train))
    return {"original": float(clf.score(f(X_test), np.asarray(y_test))),
            "reconstructed": float(clf.score(f(X_test_reconstructed), np.asarray(y_test)))}
