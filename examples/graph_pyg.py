"""The Tikhonov layer inside a PyG model (``fastnips.graph.TikhonovConv``), explained by PyG's own tools.

1. A node classifier ``Linear -> TikhonovConv -> Linear`` in the slot where APPNP goes, called as
   ``conv(x, edge_index, edge_weight)``, its q from a PyG ``GCNConv`` Q-network; trained on a 600-node
   contextual SBM (homophily 0.8) and compared with the same model around PyG's ``APPNP(K=10, alpha=0.1)``
   (test accuracy, higher is better).
2. PyG's ``GNNExplainer`` puts an edge mask on the layer's edge weights (the gradient reaches it through the
   adjoint solve) and ranks the edges around one node.
3. The built-in explanation (q per node, the filter p) of the same layer, converted to a PyG ``Explanation``.

Run: ``python examples/graph_pyg.py`` (needs torch and torch_geometric; about 10 s on 2 cores). Seeded, on
one torch thread.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import torch

from fastnips.data.graphs import contextual_sbm
from fastnips.graph import TikhonovConv, explain_tikhonov, normalized_laplacian

EPOCHS = 60


def main() -> None:
    torch.set_num_threads(1)
    with warnings.catch_warnings():  # PyG's import-time deprecation warnings
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            import torch_geometric  # noqa: F401
            from torch_geometric.explain import Explainer, GNNExplainer
            from torch_geometric.nn import APPNP, GCNConv, Sequential
        except ImportError:
            print("torch_geometric is not installed (pip install torch_geometric): nothing to show")
            return
    g = contextual_sbm(600, homophily=0.8, avg_degree=6, feature_dim=8, seed=0)
    x, y = torch.as_tensor(g.x, dtype=torch.float32), torch.as_tensor(g.y)
    ei = torch.as_tensor(g.edge_index)
    train, test = torch.as_tensor(g.train_mask), torch.as_tensor(g.test_mask)
    classes = int(y.max()) + 1

    def model(prop, sig):
        return Sequential("x, edge_index", [(torch.nn.Linear(x.shape[1], 16), "x -> h"), (prop, f"{sig} -> h"),
                                            (torch.nn.Linear(16, classes), "h -> h")])

    torch.manual_seed(0)
    conv = TikhonovConv(q_net=GCNConv(16, 1), K=4)
    models = {"TikhonovConv": model(conv, "h, edge_index"),
              "APPNP(K=10)": model(APPNP(K=10, alpha=0.1), "h, edge_index")}
    print(f"contextual SBM: {g.num_nodes} nodes, {g.num_edges} directed edges, {classes} classes")
    for name, net in models.items():
        opt = torch.optim.Adam(net.parameters(), lr=0.02, weight_decay=5e-4)
        for _ in range(EPOCHS):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(x, ei)[train], y[train]).backward()
            opt.step()
        with torch.no_grad():
            acc = float((net(x, ei).argmax(1)[test] == y[test]).float().mean())
        print(f"  {name:13s} test accuracy {acc:.3f} ({EPOCHS} epochs)")

    net = models["TikhonovConv"]
    explainer = Explainer(net, algorithm=GNNExplainer(epochs=30), explanation_type="model", node_mask_type=None,
                          edge_mask_type="object", model_config=dict(mode="multiclass_classification",
                                                                     task_level="node", return_type="raw"))
    node = 0
    e = explainer(x, ei, index=node)
    top = torch.argsort(e.edge_mask, descending=True)[:5]
    print(f"GNNExplainer on node {node}: {int((e.edge_mask > 0).sum())} of {ei.shape[1]} edges with a mask > 0; "
          "top 5 edges " + ", ".join(f"{int(ei[0, t])}->{int(ei[1, t])} ({float(e.edge_mask[t]):.2f})" for t in top))

    with torch.no_grad():
        h = net[0](x)  # the features the layer propagates
        q = conv.node_weights(h, ei).double().numpy()
    theta = conv.prop.coefficients().detach().double().numpy()
    ours = explain_tikhonov(theta, q, normalized_laplacian(ei, g.num_nodes), rows=False)
    pyg_e = ours.to_pyg(h)
    pyg_e.validate(raise_on_error=True)
    print(f"the layer's own explanation: filter {ours.reading}, q in [{q.min():.3f}, {q.max():.3f}], "
          f"top nodes {ours.top_nodes(3).tolist()}; as PyG: {pyg_e}")
    assert np.array_equal(pyg_e.node_mask.squeeze(1).numpy(), ours.q)


if __name__ == "__main__":
    sys.exit(main())
