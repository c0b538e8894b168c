"""Decentralised AUC maximisation: four nodes on a ring, each holding a label-skewed quarter of scikit-learn's
breast-cancer data, solve min over the scorer / max over the dual variable with the doubly smoothed GDA and
with gradient-tracking GDA, in this process; then the same run with one process per node under torchrun.

    python examples/optim_minimax.py
"""

import subprocess
import sys

import numpy as np
import torch
from sklearn.datasets import load_breast_cancer

import fastnips.optim as fo

torch.set_num_threads(1)
d = load_breast_cancer()
X = (d.data - d.data.mean(0)) / d.data.std(0)
problem = fo.AUCMaximization(X, d.target, nodes=4, split="label-skewed")
topo = fo.ring(4)
print(f"ring of 4 nodes, spectral gap {topo.spectral_gap:.3f}; positives {problem.p:.2f} of {problem.N} samples")
for method, kw in (("dsgda", {"lr": 0.01, "r1": 1.0, "beta": 0.1}), ("gt-gda", {"lr": 0.05, "tau": 4.0})):
    res = fo.decentralized_minimax(problem, topo, method=method, steps=1500, record_every=500, **kw)
    xbar = res.x.mean(0)
    trace = ", ".join(f"{h['stationarity']:.3g}" for h in res.history)
    print(f"{method:7s} |grad Phi| at steps 1/500/1000/1500: {trace}; AUC {problem.auc(xbar):.4f}; "
          f"consensus {res.history[-1]['consensus']:.1e}; {res.floats_sent_per_step} floats sent per node per step")

# The same problem, one process per node (gloo over loopback), through the command line:
cmd = [sys.executable, "-m", "fastnips", "minimax", "--nproc", "4", "--problem", "auc", "--split", "label-skewed",
       "--method", "gt-gda", "--lr", "0.05", "--tau", "4", "--steps", "300"]
print(" ".join(cmd[1:]))
subprocess.run(cmd, check=True)
print("in-process, the same 300 steps:",
      np.round(fo.decentralized_minimax(problem, topo, method="gt-gda", lr=0.05, tau=4.0, steps=300,
                                        record_every=300).history[-1]["stationarity"], 6))
