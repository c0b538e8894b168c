"""Before training: will this beta collapse a Dirichlet beta-VAE? (``fastnips.vae``).

1. A synthetic linear mixture (x = A z + noise, z on the 2-simplex): the closed-form threshold beta_c, its
   Gaussian limit, and the smallest eigenvalue of the loss Hessian at the collapsed point just below and above
   beta_c (it changes sign there).
2. Linear-decoder models trained at beta / beta_c = 0.5, 0.9, 1.1, 2 (closed-form ELBO, L-BFGS): the report
   reads KL per latent and says whether the prediction held.
3. The same question on a real set (scikit-learn's wine, standardised).

Run: ``python examples/vae_collapse.py`` (torch, scipy, scikit-learn; about a minute on one core). Seeded.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from fastnips.vae import (
    DirichletVAE,
    beta_c,
    collapse_report,
    hessian_at_collapse,
    linear_mixture,
    standardized,
    top_eigenvalue,
)

torch.set_num_threads(1)
K, ALPHA0, SIGMA2 = 3, 1.0, 1.0

X = linear_mixture(600, D=6, K=K, noise=0.3, seed=0)
bc = beta_c(X, K, ALPHA0, SIGMA2)
print(f"lambda_max = {top_eigenvalue(X):.4f}; beta_c = {bc:.4f}; Gaussian limit (alpha0 -> inf) = "
      f"{beta_c(X, K, math.inf, SIGMA2):.4f}")
for r in (0.98, 1.02):
    ev = np.linalg.eigvalsh(hessian_at_collapse(X, K, ALPHA0, SIGMA2, r * bc))[0]
    print(f"  smallest Hessian eigenvalue at the collapsed point, beta = {r} beta_c: {ev:+.2e}")

for r in (0.5, 0.9, 1.1, 2.0):
    model = DirichletVAE(X.shape[1], K, alpha0=ALPHA0, sigma2=SIGMA2, beta=r * bc, seed=0).fit(X, steps=200)
    rep = collapse_report(model, X)
    print(f"  {rep}; KL per latent {np.round(rep.kl_per_latent, 4)}; agrees: {rep.agrees}")

W = standardized("wine")
bw = beta_c(W, K, ALPHA0, SIGMA2)
for r in (0.8, 1.2):
    rep = collapse_report(DirichletVAE(W.shape[1], K, alpha0=ALPHA0, sigma2=SIGMA2, beta=r * bw).fit(W, steps=200), W)
    print(f"wine: {rep}")
