"""The ``fastnips`` command (also ``python -m fastnips``): ``info``, ``demo`` and one subcommand per main job
(``htc``, ``prune``, ``diagnose``, ``minimax``). Commands of torch-only fields are imported when used, so the
others work without torch.

Expected failures (bad arguments, missing or malformed files, missing optional packages, unavailable backends)
end in one line on stderr and a non-zero exit status; ``fastnips --debug <command>`` (or ``FASTNIPS_DEBUG=1``)
shows the traceback instead.
"""

from __future__ import annotations

import json

import click

from . import __version__
from ._demo import demo
from .causal._cli import htc
from .diagnosis._cli import diagnose_command

__all__ = ["main"]

# Failures a user can cause and fix: their message alone is the report.
EXPECTED = (ValueError, TypeError, ImportError, OSError, KeyError, IndexError, RuntimeError, NotImplementedError)


def one_line(exc: BaseException) -> str:
    """The first line of the exception's message (its type where expected failures do not name it)."""
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    text = lines[0] if lines else type(exc).__name__
    if len(lines) > 1:
        text += " [...]"
    if isinstance(exc, (KeyError, IndexError)) or not isinstance(exc, EXPECTED) or not lines:
        text = f"{type(exc).__name__}: {text}"
    if not isinstance(exc, EXPECTED):
        text += " (rerun with fastnips --debug ... for the traceback)"
    return text


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush cannot fail again."""
    import os
    import sys

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real file descriptor (e.g. under CliRunner)
        pass


# Subcommands imported on first use (name -> "module:attribute"), for fields that need optional packages.
LAZY = {"minimax": "fastnips.optim.launch:minimax"}


def _missing_command(name: str, exc: ImportError) -> click.Command:
    def fail() -> None:
        raise click.ClickException(one_line(exc))

    return click.Command(name, callback=fail, help=f"(unavailable: {one_line(exc)})")


class FastnipsGroup(click.Group):
    """A click group that turns any exception of a subcommand into ``Error: <one line>`` and exit status 1,
    unless ``--debug`` is given; the commands of :data:`LAZY` are imported when used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in LAZY and name not in self.commands:
            import importlib

            module, attr = LAZY[name].split(":")
            try:
                return getattr(importlib.import_module(module), attr)
            except ImportError as exc:
                return _missing_command(name, exc)
        return super().get_command(ctx, name)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Abort, click.exceptions.Exit):
            raise
        except BrokenPipeError:  # `fastnips demo | head`: the reader left; stop quietly, as cat does
            _silence_stdout()
            ctx.exit(1)
        except Exception as exc:
            if ctx.params.get("debug"):
                raise
            raise click.ClickException(one_line(exc)) from None


@click.group(cls=FastnipsGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="fastnips")
@click.option("--debug", is_flag=True, envvar="FASTNIPS_DEBUG",
              help="Show the full traceback of a failure instead of one line.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """fastnips: fast, tested implementations of NeurIPS 2026 algorithms."""
    ctx.meta["fastnips.debug"] = debug


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


main.add_command(demo)
main.add_command(htc)
main.add_command(diagnose_command)


@main.command()
@click.option("--model", "model_name", default="tiny", show_default=True,
              help="smollm2 (needs fastnips[prune]), tiny (the shipped byte-level decoder) or a local HF folder.")
@click.option("--criterion", type=click.Choice(["magnitude", "wanda", "sparsegpt"]), default="wanda",
              show_default=True)
@click.option("--sparsity", type=click.FloatRange(0.0, 1.0, max_open=True), default=0.5, show_default=True,
              help="Unstructured sparsity (exact count per --scope group).")
@click.option("--scope", type=click.Choice(["block", "row", "matrix"]), default=None,
              help="Comparison group of the unstructured selection: block (sparsegpt only, and its default: all "
                   "rows of each 128-column block, as the reference SparseGPT), row (the default of magnitude and "
                   "wanda), matrix (magnitude and wanda).")
@click.option("--pattern", default="unstructured", show_default=True,
              help="unstructured, or N:M as KEEP:GROUP (2:4 keeps 2 of every 4: NVIDIA's meaning).")
@click.option("--window", default="block", show_default=True,
              help="Reconstruction window: none, matrix, attn_mlp, block or blocks:K.")
@click.option("--inputs", type=click.Choice(["dense", "sparse"]), default="dense", show_default=True)
@click.option("--lora-r", default=0, type=click.IntRange(min=0), show_default=True,
              help="Masked-LoRA rank (0: train all window parameters).")
@click.option("--epochs", default=2, type=click.IntRange(min=0), show_default=True)
@click.option("--lr", default=1e-4, type=click.FloatRange(min=0.0, min_open=True), show_default=True)
@click.option("--calib-n", default=32, type=click.IntRange(min=1), show_default=True, help="Calibration sequences.")
@click.option("--seqlen", default=128, type=click.IntRange(min=2), show_default=True,
              help="Tokens per sequence (never the model's maximum).")
@click.option("--eval-n", default=16, type=click.IntRange(min=1), show_default=True,
              help="Held-out sequences for perplexity.")
@click.option("--batch-size", default=4, type=click.IntRange(min=1), show_default=True)
@click.option("--seed", default=0, show_default=True)
@click.option("--no-baseline", is_flag=True, help="Skip the criterion-only run (perplexity before reconstruction).")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Folder (created if missing, checked writable before the run) for sparse.safetensors and "
                   "summary.json, plus config.json for Hugging Face models.")
@click.option("--export-hf", "export_hf", type=click.Path(file_okay=False), default=None,
              help="Folder (missing or empty; Hugging Face models only) for the pruned model as a save_pretrained "
                   "checkpoint with its compressed-tensors sparsity block and fastnips_sparsity.json (SHA-256 of "
                   "every tensor).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def prune(model_name, criterion, sparsity, scope, pattern, window, inputs, lora_r, epochs, lr, calib_n, seqlen,
          eval_n, batch_size, seed, no_baseline, out, as_json, export_hf):
    """Prune a causal LM, reconstruct it window by window, report perplexity, save a sparse checkpoint.

    Calibration and held-out text are the docstrings of Python's standard library (no download). Every option is
    checked before the model is loaded.
    """
    options = dict(locals())
    from .prune._cli import prune_command

    prune_command(**options)
