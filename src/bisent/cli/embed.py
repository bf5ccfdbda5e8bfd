"""``bisent embed`` and ``bisent encoders``."""

from __future__ import annotations

import contextlib
import os
import time

import click

from ..encoders import DEFAULT_ENCODER, REGISTRY, get_encoder
from ..io import MAX_LINE_BYTES, make_state_dir, readable_file
from ..mining.vectors import SHARD_ROWS, embed_file
from ..paths import guarded
from ..scale.ray_embed import EncoderPool
from ..scale.ray_session import ray_session
from .options import LANG, ray_options


@click.command()
@click.argument("input_path", metavar="INPUT", type=click.Path(dir_okay=False, path_type=str))
@click.option("-l", "--lang", type=LANG, required=True, help="Language code of INPUT (e.g. en).")
@click.option("-e", "--encoder", default=DEFAULT_ENCODER, show_default=True,
              help="Registered encoder name or a model directory.")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
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
@guarded(reads=("input_path",), states=("out_dir",))
def embed(input_path, lang, encoder, out_dir, shard_rows, skip_bad, max_bytes, force, ray_address, threads, workers):
    """Embed a one-sentence-per-line file (plain, .gz, .xz; `-` for standard input) into fp16 shards; resumable.

    Every line gets a row (row i = line i+1). Empty lines get an all-zero row
    and are listed in manifest.json under "rejected"; other bad lines stop the
    run with FILE:LINE: problem unless --skip-bad.

    \b
    Examples:
      bisent embed en.txt -l en -o vectors/en
      bisent embed de.txt -l de -e me5-small -o vectors/de
    """
    t0 = time.perf_counter()
    enc = get_encoder(encoder)
    if not os.path.isfile(input_path):   # standard input or a pipe: its copy is made inside the folder
        make_state_dir(out_dir, "vectors")
    session = ray_session(ray_address, threads=threads, workers=workers) if ray_address else contextlib.nullcontext()
    with readable_file(input_path, folder=out_dir) as path, session:  # `-`, /dev/stdin or a pipe: copied once
        encode_map = EncoderPool(encoder, workers=workers, threads=threads).encode_in_order if ray_address else None
        shards = embed_file(path, lang, enc, out_dir, shard_rows=shard_rows, on_bad="keep" if skip_bad else "error",
                            max_bytes=max_bytes, force=force, progress=None, encode_map=encode_map)
    dt = time.perf_counter() - t0
    rej = len(shards.manifest.get("rejected", []))
    click.echo(f"{len(shards)} rows ({rej} rejected lines with zero rows) x {shards.dim} dims "
               f"from {input_path} in {dt:.1f}s -> {out_dir}", err=True)


@click.command()
@guarded()
def encoders():
    """List the registered encoders (a model directory path works wherever an encoder is asked for).

    \b
    Examples:
      bisent encoders
    """
    for name, reg in REGISTRY.items():
        langs = "any language" if reg.languages is None else f"{len(reg.languages)} languages"
        mark = " (default)" if name == DEFAULT_ENCODER else ""
        click.echo(f"{name:12s} {reg.dim}-d, {langs}: {reg.description}{mark}")
