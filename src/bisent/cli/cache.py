"""``bisent cache info|clear``: the persistent embedding cache (one SQLite file per encoder, and the hard negatives
that distillation mines from a teacher's rows)."""

from __future__ import annotations

import click

from ..paths import guarded


@click.group("cache")
def cache_group():
    """Show or clear the embedding cache ($BISENT_EMBED_CACHE, else $BISENT_CACHE/embeddings).

    Rows are stored as float16; each encoder's file is capped at BISENT_CACHE_MAX_MB
    megabytes (default 4096), the oldest entries evicted first.

    \b
    Examples:
      bisent cache info
      bisent cache clear --encoder me5-small
    """


@cache_group.command("info")
@guarded()
def info():
    """One line per encoder file: entries, size on disk; then the folder and the cap.

    \b
    Examples:
      bisent cache info
    """
    from ..encoders.cache import HARD_NEGATIVES, cache_files, cache_folder, file_info, hard_negative_files, max_bytes

    total = 0
    for path in cache_files():
        i = file_info(path)
        total += i["bytes"]
        detail = f"error: {i['error']}" if "error" in i else \
            f"{i['entries']:>10d} entries  {i['used_bytes'] / 1e6:9.1f} MB in use"
        click.echo(f"{i['file']:60s} {i['bytes'] / 1e6:9.1f} MB  {detail}")
    hard = hard_negative_files()
    if hard:
        size = sum(p.stat().st_size for p in hard)
        total += size
        click.echo(f"{HARD_NEGATIVES + '/':60s} {size / 1e6:9.1f} MB  {len(hard):>10d} files of teacher-mined "
                   "hard negatives")
    click.echo(f"{cache_folder()}: {total / 1e6:.1f} MB in all; cap {max_bytes() / 1e6:.0f} MB per encoder "
               f"(BISENT_CACHE_MAX_MB), oldest entries evicted first")


@cache_group.command("clear")
@click.option("--encoder", "pattern", default=None, help="Only the files whose name holds this text.")
@guarded()
def clear(pattern):
    """Remove the cache files (all, hard negatives too, or those of one encoder); rows are re-embedded when next
    needed.

    \b
    Examples:
      bisent cache clear --encoder use-m3
      bisent cache clear
    """
    from ..encoders.cache import clear as clear_files

    gone = clear_files(pattern)
    click.echo(f"removed {len(gone)} cache file(s)", err=True)
