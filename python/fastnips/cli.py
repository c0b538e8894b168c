"""The ``fastnips`` command: ``fastnips info``, ``fastnips demo`` (and one subcommand per main job)."""

from __future__ import annotations

import json
import time

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
    from .ops import spmm

    A = random_csr(n, n, avg_degree=8, seed=seed, skew=True)
    X = np.random.default_rng(seed).standard_normal((n, 16))
    ref = A @ X
    rows = []
    for b in _backend.BACKENDS:
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


def _optional_cuda() -> bool:
    from . import _optional

    torch = _optional.torch_or_none()
    return bool(torch is not None and torch.cuda.is_available())


@main.command()
@click.option("--n", default=100_000, show_default=True, help="Rows of the random SpMM matrix.")
@click.option("--seed", default=0, show_default=True)
def demo(n: int, seed: int) -> None:
    """Run every implemented capability on embedded or generated data and print a results table."""
    rows = demo_spmm(n, seed)
    w_task = max(len(r["task"]) for r in rows)
    w_b = max(len(r["backend"]) for r in rows)
    w_r = max(len(r["result"]) for r in rows)
    click.echo(f"fastnips {__version__} demo")
    click.echo(f"{'task':<{w_task}}  {'backend':<{w_b}}  {'result':<{w_r}}  detail")
    for r in rows:
        click.echo(f"{r['task']:<{w_task}}  {r['backend']:<{w_b}}  {r['result']:<{w_r}}  {r['detail']}")
    if any(r["result"].startswith("DIFFERS") for r in rows):
        raise SystemExit(1)


if __name__ == "__main__":  # pragma: no cover
    main()
