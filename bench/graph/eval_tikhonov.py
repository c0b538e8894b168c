"""Real evaluation of TikhonovGNN against GCN, GIN and APPNP, offline (issue 4, item 5).

    python bench/graph/eval_tikhonov.py --seeds 3 --quick     # about 3 minutes on 2 CPU cores
    python bench/graph/eval_tikhonov.py --seeds 3             # full, about 15 minutes
    python bench/graph/eval_tikhonov.py --smoke               # seconds; what CI runs (tests/graph)

Prints markdown tables (mean ± std over seeds):

(a) BA-motifs graph classification (house vs 5-cycle attached to a Barabási–Albert base, node ids
    permuted; one-hot degree features by default, ``--ba-features ones`` for BA-2motifs' constant ones,
    with which TikhonovGNN's linear readout sees a single scalar per graph, mean(R 1), since XW + b is
    then the same row at every node): test accuracy, and for TikhonovGNN the rank AUROC of the learned q
    against the ground-truth motif nodes on the test graphs (pooled over all test nodes, and the mean
    of per-graph AUROCs), next to the AUROC of a trivial explainer (node degree) for scale.
(b) scikit-learn 8×8 digits as 64-node grid graphs (pixel intensity + position), 10 classes.
(c) contextual-SBM node classification, homophily 0.1 ... 0.9: accuracy per model, and the learned
    TikhonovGNN penalty p on [0, 2]: p(2) - p(0) > 0 means an increasing penalty (low-pass filter),
    < 0 a decreasing one (high-pass).

Protocol, identical for every model: Adam (lr 0.01; weight decay 5e-4 on the node task, 0 on graph
tasks), cross-entropy, mini-batches of 64 graphs (full batch for nodes), at most ``epochs`` epochs,
validation accuracy after each epoch, early stopping with ``patience`` epochs and the best-validation
weights restored for the test. Peers get hidden widths chosen so that their parameter counts are as
close as possible to TikhonovGNN's (the counts are printed). Every seed regenerates the data (BA,
SBM) or the split (digits) and re-initialises the models, so the std includes both.

This file is a script, not a pytest-benchmark file (bench/ collects bench_*.py only).
"""

from __future__ import annotations

import argparse
import datetime
import math
import platform
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

from fastnips.data.graphs import ba_motifs, collate, contextual_sbm, digits_grid_graphs
from fastnips.graph import TikhonovGNN, evaluate_polynomial
from fastnips.graph.baselines import APPNP, GCN, GIN, count_parameters

MODELS = ("TikhonovGNN", "GCN", "GIN", "APPNP")
#: the node task adds TikhonovGNN with two-layer MLPs as encoder and head (the graph-task defaults), as
#: an ablation of the node-task default (linear encoder and head: logits linear in R's rows)
NODE_MODELS = ("TikhonovGNN", "TikhonovGNN-mlp", "GCN", "GIN", "APPNP")
TIKHONOV = ("TikhonovGNN", "TikhonovGNN-mlp")
#: the graph tasks add TikhonovGNN without the per-graph standardisation of the Q-network's scores
#: (q_norm=False), as an ablation of the graph-task default
GRAPH_MODELS = ("TikhonovGNN", "TikhonovGNN-noqn", "GCN", "GIN", "APPNP")
GRAPH_TIKHONOV = ("TikhonovGNN", "TikhonovGNN-noqn")
HOMOPHILIES = (0.1, 0.3, 0.5, 0.7, 0.9)

#: per mode: BA graphs (train, val, test), digits graphs (None = all 1797), SBM nodes, graph epochs,
#: node epochs, patience (graph, node)
MODES = {
    "smoke": dict(ba=(16, 8, 8), digits=60, sbm_n=120, graph_epochs=2, node_epochs=2, patience=(2, 2)),
    "quick": dict(ba=(320, 80, 100), digits=600, sbm_n=600, graph_epochs=40, node_epochs=100, patience=(15, 30)),
    "full": dict(ba=(800, 100, 100), digits=None, sbm_n=2000, graph_epochs=60, node_epochs=300, patience=(20, 100)),
}
BATCH_SIZE = 64
LR = 0.01
POOLING = "max"  # graph readout of TikhonovGNN, GCN and APPNP (GIN keeps its own)


# ---------------------------------------------------------------------------------------------------
# metrics


def rank_auroc(scores, labels) -> float:
    """Area under the ROC curve by the Mann–Whitney rank statistic, tied scores given average ranks.

    AUROC = (sum of the ranks of the positives - P(P + 1)/2) / (P N); NaN if a class is absent.
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=bool)
    P, N = int(y.sum()), int((~y).sum())
    if P == 0 or N == 0:
        return float("nan")
    order = np.argsort(s, kind="mergesort")
    ss = s[order]
    ranks = np.empty_like(s)
    i = 0
    while i < ss.size:  # average ranks over runs of equal scores
        j = i
        while j + 1 < ss.size and ss[j + 1] == ss[i]:
            j += 1
        ranks[order[i:j + 1]] = 0.5 * (i + j) + 1.0
        i = j + 1
    return float((ranks[y].sum() - P * (P + 1) / 2.0) / (P * N))


def mean_std(values) -> str:
    v = np.asarray([x for x in values if not (isinstance(x, float) and math.isnan(x))], dtype=np.float64)
    if v.size == 0:
        return "n/a"
    sd = v.std(ddof=1) if v.size > 1 else 0.0
    return f"{v.mean():.3f} ± {sd:.3f}"


# ---------------------------------------------------------------------------------------------------
# models at equal budgets


def build(name: str, d: int, c: int, hidden: int, task: str):
    if name == "TikhonovGNN":  # the library defaults (flat init; graph: MLP encoder/head, max pooling)
        return TikhonovGNN(d, hidden, c, q_layers=2, K=4, task=task)
    if name == "TikhonovGNN-noqn":
        return TikhonovGNN(d, hidden, c, q_layers=2, K=4, task=task, q_norm=False)
    if name == "TikhonovGNN-mlp":
        return TikhonovGNN(d, hidden, c, q_layers=2, K=4, task=task, encoder_layers=2, head_layers=2)
    layers = 3 if task == "graph" else 2
    if name == "GCN":
        return GCN(d, hidden, c, num_layers=layers, task=task, pooling=POOLING)
    if name == "GIN":  # the GIN paper's readout: sum pooling of every layer
        return GIN(d, hidden, c, num_layers=layers, task=task)
    if name == "APPNP":
        return APPNP(d, hidden, c, num_layers=2, K=10, alpha=0.1, task=task, pooling=POOLING)
    raise ValueError(name)


def matched_widths(d: int, c: int, task: str, tikhonov_hidden: int, models=MODELS) -> tuple[dict, dict]:
    """Hidden width per model so that its parameter count is nearest TikhonovGNN's; and the counts."""
    target = count_parameters(build("TikhonovGNN", d, c, tikhonov_hidden, task))
    widths, counts = {"TikhonovGNN": tikhonov_hidden}, {"TikhonovGNN": target}
    for name in models[1:]:
        best = min(range(2, 513), key=lambda h: abs(count_parameters(build(name, d, c, h, task)) - target))
        widths[name] = best
        counts[name] = count_parameters(build(name, d, c, best, task))
    return widths, counts


# ---------------------------------------------------------------------------------------------------
# training


def _tensors(samples):
    x, ei, b, y = collate(samples)
    return torch.from_numpy(x), torch.from_numpy(ei), torch.from_numpy(b), torch.from_numpy(y)


def _accuracy(logits, y) -> float:
    return float((logits.argmax(-1) == y).float().mean()) if y.numel() else float("nan")


def _fit(model, train_epoch, validate, epochs: int, patience: int):
    """Run ``train_epoch()`` up to ``epochs`` times, keep the weights with the best ``validate()`` key
    (accuracy, then -loss), stop after ``patience`` epochs without improvement; returns (model, seconds)."""
    best, best_key, wait = None, (-1.0, -math.inf), 0
    t0 = time.perf_counter()
    for _ in range(epochs):
        model.train()
        train_epoch()
        model.eval()
        with torch.no_grad():
            key = validate()
        if key > best_key:
            best_key, best, wait = key, {k: v.clone() for k, v in model.state_dict().items()}, 0
        else:
            wait += 1
            if wait >= patience:
                break
    model.load_state_dict(best)
    return model, time.perf_counter() - t0


def _key(logits, y):
    return _accuracy(logits, y), -float(F.cross_entropy(logits, y))


def train_graph_model(model, train, val, epochs: int, patience: int, seed: int):
    """Mini-batch training with early stopping on validation accuracy; returns (model, seconds)."""
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    gen = np.random.default_rng(seed)
    xv, eiv, bv, yv = _tensors(val)

    def train_epoch():
        order = gen.permutation(len(train))
        for s in range(0, len(order), BATCH_SIZE):
            x, ei, b, y = _tensors([train[i] for i in order[s:s + BATCH_SIZE]])
            opt.zero_grad()
            F.cross_entropy(model(x, ei, b), y).backward()
            opt.step()

    return _fit(model, train_epoch, lambda: _key(model(xv, eiv, bv), yv), epochs, patience)


def train_node_model(model, g, epochs: int, patience: int):
    opt = torch.optim.Adam(model.parameters(), lr=LR, weight_decay=5e-4)
    x, ei, y = torch.from_numpy(g.x), torch.from_numpy(g.edge_index), torch.from_numpy(g.y)
    tr, va = torch.from_numpy(g.train_mask), torch.from_numpy(g.val_mask)

    def train_epoch():
        opt.zero_grad()
        F.cross_entropy(model(x, ei)[tr], y[tr]).backward()
        opt.step()

    return _fit(model, train_epoch, lambda: _key(model(x, ei)[va], y[va]), epochs, patience)


# ---------------------------------------------------------------------------------------------------
# the three experiments


def fit_and_test(name, d, c, width, train, val, test_tensors, cfg, seed, record):
    """Train model ``name`` on a graph task (seeded), test it, append accuracy and seconds to ``record``."""
    torch.manual_seed(seed)
    model, secs = train_graph_model(build(name, d, c, width, "graph"), train, val, cfg["graph_epochs"],
                                    cfg["patience"][0], seed)
    xt, eit, bt, yt = test_tensors
    with torch.no_grad():
        acc = _accuracy(model(xt, eit, bt), yt)
    record["acc"].append(acc)
    record["time"].append(secs)
    return model, acc, secs


def run_ba(cfg, seeds, hidden, log, features="degree"):
    n_tr, n_va, n_te = cfg["ba"]
    d, c = 10, 2
    widths, counts = matched_widths(d, c, "graph", hidden, GRAPH_MODELS)
    res = {m: {"acc": [], "time": [], "auroc_pooled": [], "auroc_graph": []} for m in GRAPH_MODELS}
    res["deg_pooled"], res["deg_graph"] = [], []
    for seed in seeds:
        data = ba_motifs(n_tr + n_va + n_te, base_nodes=20, motif="both", m=1, features=features, feature_dim=d,
                         permute_nodes=True, seed=seed)
        train, val, test = data[:n_tr], data[n_tr:n_tr + n_va], data[n_tr + n_va:]
        xt, eit, bt, yt = _tensors(test)
        mask = np.concatenate([s.motif_mask for s in test])
        deg = np.concatenate([np.bincount(s.edge_index[0], minlength=s.num_nodes) for s in test])
        bnp = bt.numpy()
        res["deg_pooled"].append(rank_auroc(deg, mask))
        res["deg_graph"].append(np.nanmean([rank_auroc(deg[bnp == g], mask[bnp == g]) for g in range(len(test))]))
        for name in GRAPH_MODELS:
            model, acc, secs = fit_and_test(name, d, c, widths[name], train, val, (xt, eit, bt, yt), cfg, seed,
                                            res[name])
            if name in GRAPH_TIKHONOV:
                q = model.last_q.numpy()
                res[name]["auroc_pooled"].append(rank_auroc(q, mask))
                res[name]["auroc_graph"].append(np.nanmean([rank_auroc(q[bnp == g], mask[bnp == g])
                                                            for g in range(len(test))]))
            log(f"  BA seed {seed} {name}: acc {acc:.3f} ({secs:.1f} s)")
    return widths, counts, res


def run_digits(cfg, seeds, hidden, log):
    d, c = 3, 10
    widths, counts = matched_widths(d, c, "graph", hidden, GRAPH_MODELS)
    res = {m: {"acc": [], "time": []} for m in GRAPH_MODELS}
    for seed in seeds:
        data = digits_grid_graphs(connectivity=4, coordinates=True, num_graphs=cfg["digits"], shuffle=True, seed=seed)
        n = len(data)
        n_tr, n_va = int(0.8 * n), int(0.1 * n)
        train, val, test = data[:n_tr], data[n_tr:n_tr + n_va], data[n_tr + n_va:]
        xt, eit, bt, yt = _tensors(test)
        for name in GRAPH_MODELS:
            _, acc, secs = fit_and_test(name, d, c, widths[name], train, val, (xt, eit, bt, yt), cfg, seed, res[name])
            log(f"  digits seed {seed} {name}: acc {acc:.3f} ({secs:.1f} s)")
    return widths, counts, res


def run_sbm(cfg, seeds, hidden, log):
    d, c = 16, 2
    widths, counts = matched_widths(d, c, "node", hidden, NODE_MODELS)
    lam = np.linspace(0.0, 2.0, 201)
    res = {h: {k: [] for m in NODE_MODELS for k in (m, *((f"{m} {f}" for f in ("p0", "p1", "p2", "dp", "low"))
                                                          if m in TIKHONOV else ()))}
           for h in HOMOPHILIES}
    for h in HOMOPHILIES:
        for seed in seeds:
            g = contextual_sbm(cfg["sbm_n"], homophily=h, avg_degree=10, feature_dim=d, feature_snr=1.0,
                               split=(0.6, 0.2, 0.2), seed=seed)
            y, te = torch.from_numpy(g.y), torch.from_numpy(g.test_mask)
            x, ei = torch.from_numpy(g.x), torch.from_numpy(g.edge_index)
            for name in NODE_MODELS:
                torch.manual_seed(seed)
                model, _ = train_node_model(build(name, d, c, widths[name], "node"), g, cfg["node_epochs"],
                                            cfg["patience"][1])
                with torch.no_grad():
                    acc = _accuracy(model(x, ei)[te], y[te])
                res[h][name].append(acc)
                if name in TIKHONOV:
                    p = evaluate_polynomial(model.prop.coefficients().detach().double().numpy(), lam)
                    for f, v in (("p0", p[0]), ("p1", p[100]), ("p2", p[-1]), ("dp", p[-1] - p[0]),
                                 ("low", p[-1] > p[0])):
                        res[h][f"{name} {f}"].append(float(v))
            log(f"  SBM h={h} seed {seed}: " + ", ".join(f"{m} {res[h][m][-1]:.3f}" for m in NODE_MODELS)
                + "".join(f", {m} p(2)-p(0) {res[h][m + ' dp'][-1]:+.3f}" for m in TIKHONOV))
    return widths, counts, res


# ---------------------------------------------------------------------------------------------------
# report


def _param_rows(widths, counts):
    return ", ".join(f"{m} {counts[m]} (hidden {widths[m]})" for m in widths)


def format_report(header, ba, digits, sbm) -> str:
    lines = list(header)
    widths, counts, res = ba
    lines += ["", "### (a) BA-motifs graph classification (house vs 5-cycle, permuted node ids)", "",
              f"Parameters: {_param_rows(widths, counts)}.", "",
              "| model | params | test accuracy | train time (s) |", "|---|---|---|---|"]
    for m in GRAPH_MODELS:
        lines.append(f"| {m} | {counts[m]} | {mean_std(res[m]['acc'])} | {mean_std(res[m]['time'])} |")
    lines += ["", "| explanation (test graphs) | AUROC vs motif nodes, pooled | AUROC, mean per graph |",
              "|---|---|---|"]
    lines += [f"| {m} q | {mean_std(res[m]['auroc_pooled'])} | {mean_std(res[m]['auroc_graph'])} |"
              for m in GRAPH_TIKHONOV]
    lines += [f"| node degree (trivial reference) | {mean_std(res['deg_pooled'])} | {mean_std(res['deg_graph'])} |"]
    widths, counts, res = digits
    lines += ["", "### (b) digits 8×8 grid graphs (sklearn, 10 classes, features: intensity, row, col)", "",
              "| model | params | test accuracy | train time (s) |", "|---|---|---|---|"]
    for m in GRAPH_MODELS:
        lines.append(f"| {m} | {counts[m]} | {mean_std(res[m]['acc'])} | {mean_std(res[m]['time'])} |")
    widths, counts, res = sbm
    lines += ["", "### (c) contextual SBM node classification, homophily sweep", "",
              f"Parameters: {_param_rows(widths, counts)}.", "",
              "| homophily | " + " | ".join(NODE_MODELS) + " |", "|---" * (len(NODE_MODELS) + 1) + "|"]
    for h in HOMOPHILIES:
        lines.append(f"| {h} | " + " | ".join(mean_std(res[h][m]) for m in NODE_MODELS) + " |")
    lines += ["", "Learned penalty p on [0, 2] (Bernstein, simplex-normalised, flat at init: p ≡ 0.2); "
              "p(2) − p(0) > 0: low-pass filter, < 0: high-pass.", "",
              "| homophily | model | p(0) | p(1) | p(2) | p(2) − p(0) | low-pass seeds |",
              "|---|---|---|---|---|---|---|"]
    for h in HOMOPHILIES:
        r = res[h]
        for m in TIKHONOV:
            low = r[f"{m} low"]
            lines.append(f"| {h} | {m} | " + " | ".join(mean_std(r[f"{m} {f}"]) for f in ("p0", "p1", "p2", "dp"))
                         + f" | {int(sum(low))}/{len(low)} |")
    return "\n".join(lines)


def main(argv=None) -> str:
    """Run the evaluation; print and return the markdown report."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=3, help="number of seeds (0, 1, ...)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="fewer graphs and epochs (~3 min on 2 cores)")
    mode.add_argument("--smoke", action="store_true", help="1 seed, a handful of graphs, 2 epochs (CI)")
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    ap.add_argument("--hidden", type=int, default=32, help="TikhonovGNN hidden width (sets the budget)")
    ap.add_argument("--ba-features", choices=("degree", "ones"), default="degree",
                    help="BA-motifs node features: one-hot degree (default) or constant as in BA-2motifs")
    ap.add_argument("--quiet", action="store_true", help="no per-run progress lines")
    args = ap.parse_args(argv)
    if args.seeds < 1:
        ap.error("--seeds must be >= 1")
    name = "smoke" if args.smoke else "quick" if args.quick else "full"
    cfg = MODES[name]
    seeds = [0] if args.smoke else list(range(args.seeds))
    torch.set_num_threads(args.threads)
    # numpy randomness: every generator below gets an explicit integer seed (np.random.default_rng(seed))

    def log(msg):
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    ba = run_ba(cfg, seeds, args.hidden, log, args.ba_features)
    digits = run_digits(cfg, seeds, args.hidden, log)
    sbm = run_sbm(cfg, seeds, args.hidden, log)
    cmd = "python bench/graph/eval_tikhonov.py " + " ".join(sys.argv[1:] if argv is None else argv)
    n_tr, n_va, n_te = cfg["ba"]
    header = [f"## TikhonovGNN vs GCN / GIN / APPNP ({name} mode, {len(seeds)} seed(s): mean ± std)", "",
              f"Command: `{cmd.strip()}`  ",
              f"Date: {datetime.datetime.now().isoformat(timespec='seconds')}; torch {torch.__version__}; "
              f"{platform.machine()}, torch threads {args.threads}; wall time "
              f"{time.perf_counter() - t0:.0f} s  ",
              f"Protocol: Adam lr {LR}, batch {BATCH_SIZE} graphs, graph tasks <= {cfg['graph_epochs']} epochs "
              f"(patience {cfg['patience'][0]}), node task <= {cfg['node_epochs']} epochs (patience "
              f"{cfg['patience'][1]}, weight decay 5e-4), best validation weights restored.  ",
              f"Data: BA-motifs {n_tr}/{n_va}/{n_te} graphs (20-node BA base + 5-node motif, "
              f"features: {args.ba_features}); "
              f"digits {cfg['digits'] or 1797} graphs split 80/10/10; SBM n = {cfg['sbm_n']}, average degree 10, "
              "16 features at SNR 1, split 60/20/20.  ",
              "Models: TikhonovGNN with the library defaults (2 GIN layers in the Q-network, K = 4 Bernstein on "
              "the simplex from a flat start; graphs: 2-layer encoder and head, max readout; nodes: linear "
              "encoder and head); GCN (3 layers for "
              "graphs, 2 for nodes, max readout); GIN-0 (same depths, sum readout over all layers); APPNP "
              "(2-layer MLP, K = 10, α = 0.1, max readout); graph tasks also TikhonovGNN-noqn (q_norm = False, the "
              "ablation of the graph default); node task also TikhonovGNN-mlp (encoder_layers = head_layers = 2, "
              "the ablation of the node default)."]
    report = format_report(header, ba, digits, sbm)
    print(report, flush=True)
    return report


if __name__ == "__main__":
    main()
