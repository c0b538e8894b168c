"""The ``fastnips`` command: ``fastnips info``, ``fastnips demo`` (and one subcommand per main job)."""

from __future__ import annotations

import json
import time
from functools import partial

import click

from . import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="fastnips")
def main() -> None:
    """fastnips: fast, tested implementations of NeurIPS 2026 algorithms."""


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the build facts as JSON.")
def info(as_json: bool) -> None:
    """Print build information and the backends that can run here."""
    from . import _backend, build_info

    facts = build_info()
    if as_json:
        click.echo(json.dumps(facts, indent=2, sort_keys=True))
        return
    width = max(len(k) for k in facts)
    for key, value in facts.items():
        if key == "backends":
            continue
        click.echo(f"{key:<{width}}  {value}")
    click.echo("backends:")
    for b in _backend.BACKENDS:
        why = _backend.why_unavailable(b)
        click.echo(f"  {b:<10} {'yes' if not why else 'no: ' + why}")


def _median_time(fn, repeats: int) -> float:
    fn()  # warm-up (first Triton launch compiles)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def demo_spmm(n: int, seed: int) -> list[dict]:
    """SpMM on every backend present against the scipy reference, on a skewed random graph."""
    import numpy as np

    from . import _backend
    from .data import random_csr
    from .ops import SPMM_BACKENDS, spmm

    A = random_csr(n, n, avg_degree=8, seed=seed, skew=True)
    X = np.random.default_rng(seed).standard_normal((n, 16))
    ref = A @ X
    rows = []
    for b in SPMM_BACKENDS:
        why = _backend.why_unavailable(b)
        if why:
            rows.append({"task": "spmm", "backend": b, "result": "skipped", "detail": why})
            continue
        interpreted = b == "triton" and not _optional_cuda()
        A_b = A[:200] if interpreted else A  # the CPU interpreter is slow: a row slice
        ref_b = ref[:200] if interpreted else ref
        Y = spmm(A_b, X, backend=b)
        err = float(np.max(np.abs(Y - ref_b)) / max(1.0, float(np.max(np.abs(ref_b)))))
        t = _median_time(lambda A_b=A_b, b=b: spmm(A_b, X, backend=b), 1 if interpreted else 5)
        rows.append({
            "task": "spmm", "backend": b, "result": "agrees" if err < 1e-10 else f"DIFFERS ({err:.1e})",
            "detail": f"{A_b.shape[0]}x{n}, nnz={A_b.nnz}, k=16: {t * 1e3:.2f} ms, rel.err {err:.1e}"
                      + (" (interpreter)" if interpreted else ""),
        })
    return rows


CLASSIC_GRAPHS = {
    # name: (n, directed, bidirected); all 0-based
    "instrumental variable": (3, [(0, 1), (1, 2)], [(1, 2)]),
    "bow": (2, [(0, 1)], [(0, 1)]),
    "front door": (3, [(0, 1), (1, 2)], [(0, 2)]),
    "Verma graph": (4, [(0, 1), (0, 2), (1, 2), (2, 3)], [(1, 3)]),
}


def demo_htc(seed: int) -> list[dict]:
    """HTC on the classic graphs, a large random one and a worst-case chain, on every backend."""
    from . import _backend
    from .causal import MixedGraph, edgewise_identify, htc_identify
    from .causal.generators import instrument_chain, random_mixed_graph

    rows = []
    backends = [b for b in ("cpp", "reference") if b == "reference" or _backend.backend_available(b)]
    best = backends[0]
    for name, (n, d, b) in CLASSIC_GRAPHS.items():
        g = MixedGraph(n, directed=d, bidirected=b)
        r = htc_identify(g, backend=best)
        e = edgewise_identify(g, backend=best)
        verdict = "identifiable" if r.identifiable else "not HTC-identifiable"
        rows.append({"task": "htc", "backend": r.backend, "result": verdict,
                     "detail": f"{name}: edges {r.identified_edges} of {list(g.directed)}; "
                               f"edgewise {'agrees' if e.identified_edges == r.identified_edges else 'adds edges'}"})
    big = [("random DAG n=400, avg degree 3", random_mixed_graph(400, p_directed=3 / (2 * 399), seed=seed)),
           ("random DAG n=200, degree n/4", random_mixed_graph(200, p_directed=1 / 8, seed=seed)),
           ("instrument chain n=150 (149 rounds)", instrument_chain(150))]
    for name, g in big:
        results = {}
        for b in backends:
            for method in ("randomized", "maxflow"):
                run = partial(htc_identify, g, backend=b, method=method, seed=seed)
                results[(b, method)] = (run(), _median_time(run, 1))
        first = next(iter(results.values()))[0]
        agree = all(r.identified_edges == first.identified_edges for r, _ in results.values())
        times = ", ".join(f"{b}/{m} {t * 1e3:.1f} ms" for (b, m), (_, t) in results.items())
        rows.append({"task": "htc", "backend": "+".join(backends),
                     "result": ("agrees" if agree else "DIFFERS") if len(results) > 1 else "ok",
                     "detail": f"{name}: {len(first.identified_nodes)}/{g.n} nodes identified; {times}"})
    return rows


def demo_tikhonov(seed: int) -> list[dict]:
    """Train a small TikhonovGNN on BA-motifs for a few seconds; report accuracy and explanation AUROC."""
    from . import _backend, _optional

    torch = _optional.torch_or_none()
    if torch is None:
        return [{"task": "tikhonov", "backend": "-", "result": "skipped", "detail": "torch is not installed"}]
    import numpy as np

    from .data.graphs import ba_motifs, collate
    from .graph import TikhonovGNN, explanation_auroc

    torch.manual_seed(seed)
    samples = ba_motifs(240, permute_nodes=True, features="degree", seed=seed)
    train, test = samples[:200], samples[200:]
    model = TikhonovGNN(in_channels=train[0].num_features, hidden_channels=32, out_channels=2, task="graph",
                        pooling="max")
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    t0 = time.perf_counter()
    epochs = 0
    while time.perf_counter() - t0 < 4.0 and epochs < 60:  # a few seconds of training
        for start in range(0, len(train), 50):
            x, ei, batch, y = (torch.from_numpy(a) for a in collate(train[start:start + 50]))
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x, ei, batch), y)
            loss.backward()
            opt.step()
        epochs += 1
    x, ei, batch, y, mask = collate(test, return_motif_mask=True)
    with torch.no_grad():
        pred = model(torch.from_numpy(x), torch.from_numpy(ei), torch.from_numpy(batch)).argmax(1).numpy()
    acc = float(np.mean(pred == y))
    auroc = explanation_auroc(model.last_q.numpy(), mask)
    backend = _backend.resolve("auto", op="tikhonov_solve", supported=("reference", "cpp"), auto=("cpp", "reference"))
    return [{"task": "tikhonov", "backend": backend,
             "result": f"acc {acc:.2f}",
             "detail": f"TikhonovGNN on BA-motifs, degree features ({len(train)} train / {len(test)} test graphs, "
                       f"{epochs} epochs, {time.perf_counter() - t0:.1f} s): test accuracy {acc:.3f}, "
                       f"AUROC of q vs motif nodes {auroc:.3f}"}]


def demo_prune(seed: int) -> list[dict]:
    """Prune the shipped tiny decoder to 50 % with Wanda, reconstruct block-wise, report perplexities."""
    from . import _optional

    if _optional.torch_or_none() is None:
        return [{"task": "prune", "backend": "-", "result": "skipped", "detail": "torch is not installed"}]
    from .prune.pipeline import run_pipeline

    s = run_pipeline("tiny", criterion="wanda", sparsity=0.5, window="block", epochs=3, lr=1e-3, calib_n=32,
                     seqlen=128, eval_n=32, batch_size=8, seed=seed, progress=False, log=lambda *_: None)
    from . import _backend

    sel = "cpp" if not _backend.why_unavailable("cpp") else "reference"
    return [{"task": "prune", "backend": f"{sel} (masks) + torch",
             "result": f"ppl {s['ppl_dense']:.2f}/{s['ppl_pruned']:.2f}/{s['ppl_reconstructed']:.2f}",
             "detail": f"tiny byte-level decoder, Wanda 50 % per row then block-wise reconstruction "
                       f"({s['calib_tokens']} calibration tokens, {s['total_s']:.1f} s): held-out perplexity "
                       f"dense {s['ppl_dense']:.3f} / pruned {s['ppl_pruned']:.3f} / reconstructed "
                       f"{s['ppl_reconstructed']:.3f}, sparsity {s['sparsity']:.3f}"}]


def _optional_cuda() -> bool:
    from . import _optional

    torch = _optional.torch_or_none()
    return bool(torch is not None and torch.cuda.is_available())


@main.command()
@click.option("--n", default=100_000, show_default=True, help="Rows of the random SpMM matrix.")
@click.option("--seed", default=0, show_default=True)
def demo(n: int, seed: int) -> None:
    """Run every implemented capability on embedded or generated data and print a results table."""
    from .diffusion.demo import demo_diffusion
    from .vision.demo import demo_vision

    rows = (demo_spmm(n, seed) + demo_htc(seed) + demo_tikhonov(seed) + demo_prune(seed) + demo_vision(seed)
            + demo_diffusion(seed))
    w_task = max(len(r["task"]) for r in rows)
    w_b = max(len(r["backend"]) for r in rows)
    w_r = max(len(r["result"]) for r in rows)
    click.echo(f"fastnips {__version__} demo")
    click.echo(f"{'task':<{w_task}}  {'backend':<{w_b}}  {'result':<{w_r}}  detail")
    for r in rows:
        click.echo(f"{r['task']:<{w_task}}  {r['backend']:<{w_b}}  {r['result']:<{w_r}}  {r['detail']}")
    if any(r["result"].startswith("DIFFERS") for r in rows):
        raise SystemExit(1)


@main.command()
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--tian", is_flag=True, help="HTC per Tian c-component (SEMID's htcID default; stronger).")
@click.option("--edgewise", is_flag=True, help="Also decide the edgewise criterion (Weihs et al. 2018).")
@click.option("--certificate", is_flag=True,
              help="Also run FDD's non-identifiability certificate (a max-flow on ~2n^2 nodes).")
@click.option("--method", type=click.Choice(["randomized", "maxflow"]), default="randomized", show_default=True)
@click.option("--seed", default=0, show_default=True, help="Seed of the randomized rank test.")
@click.option("--backend", default="auto", show_default=True, help="auto | cpp | reference")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the report.")
def htc(path, tian, edgewise, certificate, method, seed, backend, as_json):
    """Generic identifiability of the linear SEM whose mixed graph is in PATH.

    PATH is a text edge list ("i -> j", "i <-> j", optional "n N" header, # comments) or a JSON file
    {"n": N, "directed": [[i, j], ...], "bidirected": [[i, j], ...]} (by extension .json).
    """
    from .causal import MixedGraph, edgewise_identify, htc_identify, htc_nonidentifiable

    try:
        g = MixedGraph.from_file(path)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    report: dict = {"file": str(path), "n": g.n, "directed_edges": g.num_directed,
                    "bidirected_edges": g.num_bidirected}
    runs = [("htc_tian" if tian else "htc",
             lambda: htc_identify(g, method=method, tian=tian, seed=seed, backend=backend))]
    if edgewise:
        runs.append(("edgewise", lambda: edgewise_identify(g, seed=seed, backend=backend)))
    for name, fn in runs:
        t0 = time.perf_counter()
        r = fn()
        dt = time.perf_counter() - t0
        report[name] = {"identifiable": r.identifiable, "identified_nodes": r.identified_nodes,
                        "identified_edges": [list(e) for e in r.identified_edges],
                        "unidentified_edges": [list(e) for e in r.unidentified_edges],
                        "backend": r.backend, "rounds": r.rounds, "tests": r.tests, "seconds": dt}
    if certificate:
        t0 = time.perf_counter()
        report["certified_nonidentifiable"] = bool(htc_nonidentifiable(g))
        report["certificate_seconds"] = time.perf_counter() - t0
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    click.echo(f"{path}: n={g.n}, {g.num_directed} directed, {g.num_bidirected} bidirected edges")
    for name, _ in runs:
        r = report[name]
        verdict = "generically identifiable" if r["identifiable"] else "not shown identifiable"
        click.echo(f"\n{name}: {verdict}  ({r['backend']}, {r['rounds']} rounds, {r['tests']} tests, "
                   f"{r['seconds'] * 1e3:.2f} ms)")
        click.echo(f"  identified nodes ({len(r['identified_nodes'])}/{g.n}): {_clip(r['identified_nodes'])}")
        ids = [f"{i}->{j}" for i, j in r["identified_edges"]]
        unids = [f"{i}->{j}" for i, j in r["unidentified_edges"]]
        click.echo(f"  identified edges ({len(ids)}/{g.num_directed}): {_clip(ids)}")
        if unids:
            click.echo(f"  not identified ({len(unids)}): {_clip(unids)}")
    if certificate:
        verdict = ("generically infinite-to-one (FDD certificate)" if report["certified_nonidentifiable"]
                   else "no certificate of non-identifiability")
        click.echo(f"\ncertificate: {verdict}")


@main.command()
@click.option("--model", "model_name", default="tiny", show_default=True,
              help="smollm2 (needs fastnips[prune]), tiny (the shipped byte-level decoder) or a local HF folder.")
@click.option("--criterion", type=click.Choice(["magnitude", "wanda", "sparsegpt"]), default="wanda",
              show_default=True)
@click.option("--sparsity", type=float, default=0.5, show_default=True, help="Unstructured, per row.")
@click.option("--pattern", default="unstructured", show_default=True,
              help="unstructured, or N:M as KEEP:GROUP (2:4 keeps 2 of every 4: NVIDIA's meaning).")
@click.option("--window", default="block", show_default=True,
              help="Reconstruction window: none, matrix, attn_mlp, block or blocks:K.")
@click.option("--inputs", type=click.Choice(["dense", "sparse"]), default="dense", show_default=True)
@click.option("--lora-r", default=0, show_default=True, help="Masked-LoRA rank (0: train all window parameters).")
@click.option("--epochs", default=2, show_default=True)
@click.option("--lr", default=1e-4, show_default=True)
@click.option("--calib-n", default=32, show_default=True, help="Calibration sequences.")
@click.option("--seqlen", default=128, show_default=True, help="Tokens per sequence (never the model's maximum).")
@click.option("--eval-n", default=16, show_default=True, help="Held-out sequences for perplexity.")
@click.option("--batch-size", default=4, show_default=True)
@click.option("--seed", default=0, show_default=True)
@click.option("--no-baseline", is_flag=True, help="Skip the criterion-only run (perplexity before reconstruction).")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Folder for sparse.safetensors, config.json and summary.json.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def prune(model_name, criterion, sparsity, pattern, window, inputs, lora_r, epochs, lr, calib_n, seqlen, eval_n,
          batch_size, seed, no_baseline, out, as_json):
    """Prune a causal LM, reconstruct it window by window, report perplexity, save a sparse checkpoint.

    Calibration and held-out text are the docstrings of Python's standard library (no download).
    """
    from .prune.pipeline import parse_pattern, parse_window, run_pipeline

    try:
        pat = parse_pattern(pattern)
        win = parse_window(window)
        s = run_pipeline(model_name, criterion=criterion, sparsity=sparsity, pattern=pat, window=win, inputs=inputs,
                         lora_r=lora_r, epochs=epochs, lr=lr, calib_n=calib_n, seqlen=seqlen, eval_n=eval_n,
                         batch_size=batch_size, seed=seed, baseline=not no_baseline, out=out,
                         log=(lambda *_: None) if as_json else click.echo)
    except (ValueError, TypeError, ImportError, FileNotFoundError) as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps(s, indent=2))
        return
    click.echo(f"\n{s['model']}: {s['criterion']}, {s['pattern']}, window {s['window']} ({s['inputs']} inputs)")
    click.echo(f"  perplexity  dense {s['ppl_dense']:.3f}"
               + (f"  pruned {s['ppl_pruned']:.3f}" if "ppl_pruned" in s else "")
               + (f"  reconstructed {s['ppl_reconstructed']:.3f}" if "ppl_reconstructed" in s else ""))
    click.echo(f"  sparsity of the block linears {s['sparsity']:.4f}; time {s['total_s']:.1f} s "
               f"(load {s['load_s']:.1f}, prune {s.get('prune_s', 0):.1f}, reconstruct {s.get('reconstruct_s', 0):.1f})"
               + (f"; peak RSS {s['peak_rss_bytes'] / 2**20:.0f} MiB" if s.get("peak_rss_bytes") else ""))
    if "out" in s:
        click.echo(f"  saved {s['out']}/sparse.safetensors (fastnips.prune.load_sparse), summary.json")


def _clip(items, limit: int = 30) -> str:
    items = list(items)
    shown = ", ".join(str(x) for x in items[:limit])
    return shown + (f", ... ({len(items) - limit} more)" if len(items) > limit else "")


if __name__ == "__main__":  # pragma: no cover
    main()
