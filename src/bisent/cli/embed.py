"""``bisent embed`` (a thin layer over :func:`bisent.jobs.embed`) and ``bisent encoders``."""

from __future__ import annotations

import click

from ..encoders import DEFAULT_ENCODER, listing
from ..encoders.shards import SHARD_ROWS
from ..io import MAX_LINE_BYTES
from ..jobs.embed import PATHS
from ..paths import guarded
from .options import LANG, ray_options


@click.command()
@click.argument("input_path", metavar="INPUT", type=click.Path(dir_okay=False, path_type=str))
@click.option("-l", "--lang", type=LANG, required=True, help="Language code of INPUT (e.g. en).")
@click.option("-e", "--encoder", default=DEFAULT_ENCODER, show_default=True,
              help="Registered encoder name or a model directory.")
@click.option("-o", "--output", "output", required=True, type=click.Path(file_okay=False),
              help="Folder for the shards and manifest.json.")
@click.option("--shard-rows", default=SHARD_ROWS, show_default=True, type=click.IntRange(1),
              help="Vectors per shard file.")
@click.option("--skip-bad", is_flag=True,
              help="Give undecodable, NUL-holding, tab-holding or over-long lines a zero row and list them "
                   "in the manifest instead of stopping (empty lines always get a zero row).")
@click.option("--max-bytes", default=MAX_LINE_BYTES, show_default=True, type=click.IntRange(1),
              help="Longest line accepted.")
@click.option("--force", is_flag=True, help="Replace vectors already in the folder.")
@ray_options("the encoding, one encoder per worker,")
@guarded(**PATHS)
def embed(**options):
    """Embed a one-sentence-per-line file (plain, .gz, .xz; `-` for standard input) into fp16 shards; resumable.

    Every line gets a row (row i = line i+1). Empty lines get an all-zero row
    and are listed in manifest.json under "rejected"; other bad lines stop the
    run with FILE:LINE: problem unless --skip-bad.

    \b
    Examples:
      bisent embed en.txt -l en -o vectors/en
      bisent embed de.txt -l de -e me5-small -o vectors/de
    """
    from .. import jobs

    s = jobs.embed(**options)
    click.echo(f"{s['rows']} rows ({s['rejected']} rejected lines with zero rows) x {s['dims']} dims "
               f"from {s['input']} in {s['seconds']:.1f}s -> {s['output']}", err=True)


@click.command()
@guarded()
def encoders():
    """List the registered encoders, and the other things -e takes (model folders, ONNX, vectors, ensembles).

    \b
    Examples:
      bisent encoders
    """
    for line in listing():
        click.echo(line)
