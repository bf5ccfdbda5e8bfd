"""The ``bisent`` command: a thin layer over the library, one module per job.

Each job's command lives in its own module (``cli/embed.py``, ``cli/mine.py``,
...) and is listed in ``COMMANDS`` below; modules are imported only when their
command runs, so ``bisent --help`` is fast. A job's command parses its options and
passes them, by name, to its function in :mod:`bisent.jobs` (``jobs.mine(**options)``),
which owns the work: a new option is a click decorator (shared ones in
``cli/options.py``) and a keyword argument of the job, with the same default. A :class:`BisentError` (a user
mistake) is printed as one line ``bisent: error: ...`` with exit status 2, and so
is a command that needs an optional extra the install lacks (``EXTRAS``).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

import click

from ..errors import BisentError

#: command name -> (module under bisent.cli, attribute, one-line help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "embed": ("embed", "embed", "Embed a one-sentence-per-line file into fp16 vector shards."),
    "mine": ("mine", "mine", "Mine parallel sentences from two monolingual collections."),
    "eval": ("evaluate", "eval_group", "Evaluate mined, aligned or filtered output (precision/recall/F1)."),
    "encoders": ("embed", "encoders", "List the registered encoders."),
    "data": ("data", "data_group", "Fetch and build data sets from Debian's packages."),
    "bench": ("bench", "bench", "Run a benchmark task on LibreOffice help, with the anchors."),
    "demo": ("demo", "demo", "Mine LibreOffice help (en-de) with the default encoder and score it."),
    "train": ("train", "train", "Train an encoder from a recipe."),
    "distill": ("distill", "distill", "Distil a fast student encoder on your own text; its quality without gold."),
    "recipes": ("recipes", "recipes_cmd", "List the installed recipes (training, filter, run), or print one."),
    "ensemble": ("ensemble", "ensemble", "Join trained students of one teacher into one encoder (mean embedding)."),
    "filter": ("filter", "filter_cmd", "Filter a noisy src<TAB>tgt file with a YAML pipeline of steps."),
    "train-scorer": ("train_scorer", "train_scorer_cmd", "Train Kim et al.'s MLP similarity for filtering."),
    "cache": ("cache", "cache_group", "Show or clear the persistent embedding cache."),
    "report": ("report", "report", "Write a self-contained HTML report of a run folder."),
    "explain": ("explain", "explain", "Explain a sentence pair's scores: competitors, margins, filter decision."),
    "divergence": ("divergence", "divergence", "Score every word of each pair as parallel or divergent."),
    "repair": ("repair", "repair", "Cut pairs back to their parallel core (leading/trailing divergent words)."),
    "align": ("align", "align", "Align the sentences of document pairs (many-to-many, vecalign-style)."),
    "run": ("run", "run_cmd", "Run the road from document pairs to clean bitext as resumable stages (YAML)."),
    "documents": ("documents", "documents_group",
                  "Match parallel documents of two collections (HiDE, BoW, Sentence-Avg)."),
    "review": ("review", "review", "Check a run's pairs by eye in the browser; the labels set the threshold."),
}


#: former command name -> its name now: still runs, with a note on stderr; not listed in --help
ALIASES: dict[str, str] = {"docs": "documents"}


#: top-level module -> the pyproject extra that installs it (a command needing it says so in one line)
EXTRAS: dict[str, str] = {"torch": "train", "gensim": "train", "wordfreq": "train", "ray": "ray"}


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(COMMANDS)

    def get_command(self, ctx, name):
        name = ALIASES.get(name, name)
        if name not in COMMANDS:
            return None
        from .options import with_encoder_options

        module, attr, _ = COMMANDS[name]
        return with_encoder_options(getattr(importlib.import_module(f"bisent.cli.{module}"), attr))

    def resolve_command(self, ctx, args):
        if args and args[0] in ALIASES:
            click.echo(f"bisent: note: `bisent {args[0]}` is renamed `bisent {ALIASES[args[0]]}`", err=True)
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx, formatter):
        rows = [(name, COMMANDS[name][2]) for name in sorted(COMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="bisent")
def cli():
    """bisent: mine, filter and align parallel corpora with bilingual sentence embeddings.

    \b
    Examples:
      bisent mine en.txt de.txt -l en -L de -o mined.tsv
      bisent filter noisy.tsv -l en -L de -o kept.tsv --rejected rejected.tsv
      bisent COMMAND --help
    """


def main(argv=None) -> int:
    """Entry point: run the CLI, turning user mistakes into one-line errors."""
    if argv is not None:
        argv = [str(a) for a in argv]
    try:
        cli.main(args=argv, prog_name="bisent", standalone_mode=False)
    except BisentError as e:
        click.echo(f"bisent: error: {e}", err=True)
        return 2
    except click.exceptions.Abort:
        click.echo("bisent: interrupted", err=True)
        return 130
    except click.ClickException as e:  # a usage mistake: one line too, like every other error
        if type(e).__name__ == "NoArgsIsHelpError":  # a bare `bisent`: the help, as before
            e.show()
            return e.exit_code
        click.echo(f"bisent: error: {' '.join(e.format_message().split())}", err=True)
        return e.exit_code
    except ModuleNotFoundError as e:
        root = (e.name or "").split(".")[0]
        if root not in EXTRAS or importlib.util.find_spec(root) is not None:   # installed: a real bug, not an extra
            raise
        click.echo(f"bisent: error: this command needs {root}, which this install lacks: "
                   f"pip install 'bisent[{EXTRAS[root]}]'", err=True)
        return 2
    except KeyboardInterrupt:
        click.echo("bisent: interrupted", err=True)
        return 130
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
