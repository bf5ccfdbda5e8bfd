"""The embedding job: a one-sentence-per-line file into fp16 vector shards, resumable (``bisent embed``).

Owns what a run needs around :func:`bisent.encoders.shards.embed_file`: the encoder, standard input (copied into
the output folder), and Ray (one encoder per worker).
"""

from __future__ import annotations

import os
import time

from ..encoders import DEFAULT_ENCODER
from ..encoders.shards import SHARD_ROWS
from ..io import MAX_LINE_BYTES
from .common import check_paths, fspaths, ray_session

#: the paths of an embedding run, for :func:`bisent.paths.guarded` and :func:`bisent.jobs.common.check_paths`
PATHS = {"reads": ("input_path",), "states": ("output",)}


def embed(input_path, *, lang: str, output, encoder: str = DEFAULT_ENCODER, shard_rows: int = SHARD_ROWS,
          skip_bad: bool = False, max_bytes: int = MAX_LINE_BYTES, force: bool = False,
          ray_address: str | None = None, threads: int = 1, workers: int | None = None) -> dict:
    """Embed ``input_path`` (plain, .gz, .xz; ``-``: standard input) into the folder ``output`` (shards and
    manifest.json; row i = line i+1), as ``bisent embed`` does; a rerun continues an unfinished folder. Returns
    the summary it prints: rows, rejected lines (empty ones get a zero row; other bad lines stop the run unless
    ``skip_bad``), dims, seconds.
    """
    from ..encoders import get_encoder
    from ..encoders.shards import embed_file
    from ..io import make_state_dir, readable_file

    input_path, output = fspaths(input_path, output)
    check_paths(PATHS, locals())
    t0 = time.perf_counter()
    enc = get_encoder(encoder)
    if not os.path.isfile(input_path):   # standard input or a pipe: its copy is made inside the folder
        make_state_dir(output, "vectors")
    with readable_file(input_path, folder=output) as path, ray_session(ray_address, threads, workers):
        encode_map = None
        if ray_address:
            from ..cluster.ray_embed import EncoderPool
            encode_map = EncoderPool(encoder, workers=workers, threads=threads).encode_in_order
        shards = embed_file(path, lang, enc, output, shard_rows=shard_rows, on_bad="keep" if skip_bad else "error",
                            max_bytes=max_bytes, force=force, progress=None, encode_map=encode_map)
    return {"input": input_path, "output": output, "rows": len(shards),
            "rejected": len(shards.manifest.get("rejected", [])), "dims": shards.dim,
            "seconds": round(time.perf_counter() - t0, 1)}


__all__ = ["PATHS", "embed"]
