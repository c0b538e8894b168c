"""GRACE on planted concepts (recovery vs the per-instance lasso, the Gram term's effect on held-out geometry,
relabelling equivariance), the blockwise Gram term against the dense one, the lasso against scikit-learn,
metrics by hand, loaders and refusals."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fastnips.concepts import (  # noqa: E402
    GRACE,
    concept_auroc,
    gram_error,
    gram_mismatch,
    knn_overlap,
    load_concepts,
    load_embeddings,
    nonneg_lasso,
    planted_concepts,
    probe_faithfulness,
    reconstruction_cosine,
    sparsity,
)
from fastnips.concepts.gram import gram_mismatch_dense, normalize_rows  # noqa: E402


@pytest.fixture(scope="module")
def planted():
    torch.set_num_threads(1)
    full = planted_concepts(2500, seed=0)
    return full, full.X[:2000], full.X[2000:], full.A[2000:]


@pytest.fixture(scope="module")
def fitted(planted):
    full, Xtr, _, _ = planted
    return {g: GRACE(gram=g, epochs=30).fit(Xtr, full.C) for g in (0.0, 50.0)}


def test_global_map_recovers_planted_activations(planted, fitted):
    full, _, Xte, Ate = planted
    lasso = nonneg_lasso(Xte.double(), full.C.double(), 0.01)
    auc_lasso = concept_auroc(lasso, Ate)
    auc = concept_auroc(fitted[50.0].transform(Xte), Ate)
    assert auc >= 0.95
    assert auc >= 0.9 * auc_lasso
    assert reconstruction_cosine(Xte, fitted[50.0].transform(Xte), fitted[50.0].concepts_) > 0.9


def test_gram_term_preserves_held_out_geometry(planted, fitted):
    _, _, Xte, _ = planted
    A0, A1 = fitted[0.0].transform(Xte), fitted[50.0].transform(Xte)
    assert gram_error(Xte, A1) < gram_error(Xte, A0)
    assert knn_overlap(Xte, A1) > knn_overlap(Xte, A0)
    assert fitted[50.0].history_[-1]["gram"] > 0
    assert fitted[0.0].history_[-1]["gram"] == 0


def test_relabelling_concepts_permutes_the_codes():
    p = planted_concepts(300, d=16, n_concepts=24, seed=3)
    perm = torch.randperm(24, generator=torch.Generator().manual_seed(0))
    a = GRACE(epochs=3, batch_size=64).fit(p.X, p.C).transform(p.X)
    b = GRACE(epochs=3, batch_size=64).fit(p.X, p.C[perm]).transform(p.X)
    torch.testing.assert_close(b, a[:, perm], rtol=0, atol=1e-4)


@pytest.mark.parametrize("block", [1, 7, 64, 1000])
def test_blockwise_gram_equals_dense_value_and_gradient(block):
    g = torch.Generator().manual_seed(1)
    X = torch.randn(37, 5, generator=g, dtype=torch.float64)
    A = torch.relu(torch.randn(37, 9, generator=g, dtype=torch.float64)).requires_grad_(True)
    A2 = A.detach().clone().requires_grad_(True)
    v = gram_mismatch(X, A, block=block)
    w = gram_mismatch_dense(normalize_rows(X), normalize_rows(A2))
    torch.testing.assert_close(v, w, rtol=1e-12, atol=0)
    v.backward()
    w.backward()
    torch.testing.assert_close(A.grad, A2.grad, rtol=1e-10, atol=1e-14)
    B = torch.randn(9, 4, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: gram_mismatch(X[:9], t, block=block), (B,))


def test_lasso_matches_scikit_learn():
    sk = pytest.importorskip("sklearn.linear_model", reason="scikit-learn is the peer of the per-instance lasso")
    g = np.random.default_rng(0)
    C = g.standard_normal((12, 20))
    X = g.standard_normal((5, 20))
    lam = 0.3
    ours = nonneg_lasso(X, C, lam, tol=1e-12, max_iter=20000).numpy()
    for i in range(5):
        m = sk.Lasso(alpha=lam / 20, positive=True, fit_intercept=False, tol=1e-12, max_iter=100000).fit(C.T, X[i])
        np.testing.assert_allclose(ours[i], m.coef_, atol=1e-6)


def test_metrics_by_hand():
    assert sparsity(torch.tensor([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0]])) == 1.5
    assert concept_auroc([[0.9, 0.1], [0.2, 0.8]], [[1, 0], [0, 1]]) == 1.0
    assert concept_auroc([[0.1, 0.9], [0.8, 0.2]], [[1, 0], [0, 1]]) == 0.0
    assert concept_auroc([[0.5, 0.5]], [[1, 0]]) == 0.5  # a tie counts one half
    X = torch.eye(4)
    assert knn_overlap(X, X * 2, k=2) == 1.0
    assert gram_error(X, X) == 0.0
    assert reconstruction_cosine(X, X, torch.eye(4)) == pytest.approx(1.0)
    p = planted_concepts(400, seed=2)
    res = probe_faithfulness(p.X[:300], p.y[:300], p.X[300:], p.y[300:], p.X[300:])
    assert res["original"] == res["reconstructed"] > 0.5
    with pytest.raises(ValueError, match="both active and inactive"):
        concept_auroc([[1.0]], [[1.0]])
    with pytest.raises(ValueError, match="k must be"):
        knn_overlap(X, X, k=4)


def test_top_concepts_and_loaders(tmp_path):
    p = planted_concepts(200, d=16, n_concepts=10, seed=4)
    m = GRACE(epochs=2).fit(p.X, p.C)
    names = [f"c{i}" for i in range(10)]
    top = m.top_concepts(p.X[:2], names, k=3)
    assert len(top) == 2
    assert all(len(t) <= 3 and all(v > 0 for _, v in t) for t in top)
    np.save(tmp_path / "e.npy", p.X.numpy())
    np.save(tmp_path / "c.npy", p.C.numpy())
    (tmp_path / "w.txt").write_text("\n".join(names) + "\n\n", encoding="utf-8")
    words, C = load_concepts(tmp_path / "w.txt", tmp_path / "c.npy")
    assert words == names
    assert C.shape == (10, 16)
    assert load_embeddings(tmp_path / "e.npy").dtype == np.float32
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe")
    with pytest.raises(ValueError, match=r"bad\.txt is not UTF-8"):
        load_concepts(tmp_path / "bad.txt", tmp_path / "c.npy")
    (tmp_path / "w2.txt").write_text("a\nb\n", encoding="utf-8")
    with pytest.raises(ValueError, match="lists 2 concepts but"):
        load_concepts(tmp_path / "w2.txt", tmp_path / "c.npy")
    np.save(tmp_path / "obj.npy", np.array([None, 1], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match=r"not a plain \.npy"):
        load_embeddings(tmp_path / "obj.npy")
    with pytest.raises(FileNotFoundError, match="no embeddings file"):
        load_embeddings(tmp_path / "missing.npy")


@pytest.mark.parametrize(("call", "exc", "match"), [
    (lambda: GRACE(l1=-1), ValueError, "l1"),
    (lambda: GRACE(epochs=0), ValueError, "epochs"),
    (lambda: GRACE(hidden=0), ValueError, "hidden"),
    (lambda: GRACE().fit(torch.randn(5, 3), torch.randn(4, 3)[:, :0]), ValueError, "C \\(the concept dictionary\\)"),
    (lambda: GRACE(epochs=1).fit(torch.randn(5, 3), torch.randn(4, 2)), ValueError, "features"),
    (lambda: GRACE().transform(torch.randn(2, 3)), RuntimeError, "not fitted"),
    (lambda: GRACE(epochs=1).fit(torch.tensor([[float("nan"), 1.0]]), torch.eye(2)), ValueError, "NaN"),
    (lambda: gram_mismatch(torch.randn(3, 2), torch.randn(4, 2)), ValueError, "same number of rows"),
    (lambda: nonneg_lasso(torch.randn(2, 3), torch.randn(2, 4), 0.1), ValueError, "share d"),
    (lambda: planted_concepts(5, n_concepts=3, active=4), ValueError, "active"),
])
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


@pytest.mark.parametrize("shape", [(37, 5, 9), (70, 40, 33)])
def test_gram_triton_kernel_matches_reference(backend, shape):
    B, d, K = shape
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    g = torch.Generator().manual_seed(B)
    X = torch.randn(B, d, generator=g)
    A0 = torch.relu(torch.randn(B, K, generator=g))
    A0[3] = 0.0  # an all-zero code
    out = {}
    for b in ("reference", backend):
        A = A0.clone().to(dev).requires_grad_(True)
        v = gram_mismatch(X.to(dev), A, block=16, backend=b)
        v.backward()
        out[b] = (v.detach().cpu(), A.grad.cpu())
    torch.testing.assert_close(out[backend][0], out["reference"][0], rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(out[backend][1], out["reference"][1], rtol=1e-4, atol=1e-7)
