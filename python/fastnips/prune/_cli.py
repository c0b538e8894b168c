"""The body of the ``fastnips prune`` command (its click options are in :mod:`fastnips.cli`).

Every argument is checked before the model is loaded (pattern, window, scope against the criterion, a model
that is neither ``tiny``, ``smollm2`` nor an existing path, an ``--out`` folder that cannot be written), so a
typo costs nothing; filesystem failures end in one line naming the path, never a traceback.
"""

from __future__ import annotations

import json

import click

__all__ = ["prune_command"]


def prune_command(model_name, criterion, sparsity, scope, pattern, window, inputs, lora_r, epochs, lr, calib_n,
                  seqlen, eval_n, batch_size, seed, no_baseline, out, as_json, export_hf=None) -> None:
    """The body of ``fastnips prune`` (its options are declared in :mod:`fastnips.cli`, which imports this module
    only when the command runs: ``fastnips --help`` stays free of torch)."""
    from .pipeline import check_model_name, check_out, check_scope, parse_pattern, parse_window, run_pipeline

    # everything that can be checked without the model, before it is loaded
    nm = _usage(parse_pattern, pattern, "--pattern")
    win = _usage(parse_window, window, "--window")
    _usage(lambda s: check_scope(criterion, s, nm), scope, "--scope")
    _usage(check_model_name, model_name, "--model")
    if out is not None:
        _usage(check_out, out, "--out")
    if export_hf is not None:
        from .hf_export import check_export_hf

        _usage(lambda p: check_export_hf(p, model_name), export_hf, "--export-hf")
    s = run_pipeline(model_name, criterion=criterion, sparsity=sparsity, scope=scope, pattern=nm, window=win,
                     inputs=inputs, lora_r=lora_r, epochs=epochs, lr=lr, calib_n=calib_n, seqlen=seqlen,
                     eval_n=eval_n, batch_size=batch_size, seed=seed, baseline=not no_baseline, out=out,
                     log=(lambda *_: None) if as_json else click.echo, export_hf=export_hf)
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
    if "export_hf" in s:
        click.echo(f"  exported to {s['export_hf']}: {', '.join(s['export_hf_files'])} (transformers and vLLM read "
                   "it; fastnips.prune.load_pretrained_sparse verifies it)")
    if "files" in s:
        click.echo(f"  saved in {s['out']}: {', '.join(s['files'])} (sparse.safetensors: fastnips.prune.load_sparse)")


def _usage(check, value, option: str):
    """``check(value)``; a ValueError / OSError becomes click's usage error naming the option."""
    try:
        return check(value)
    except (ValueError, OSError) as exc:
        raise click.BadParameter(str(exc), param_hint=option) from None
