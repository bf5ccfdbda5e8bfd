"""``bisent mine``: parallel sentences from two monolingual collections."""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import click

from ..encoders import DEFAULT_ENCODER, get_encoder
from ..errors import BisentError
from ..io import is_stdio, readable_file, remove_state_dir
from ..mining.blocks import BLOCK, BlockScorer
from ..mining.index import BLOCK_ROWS
from ..mining.retrieval import RETRIEVALS, mine_files
from ..mining.scoring import KINDS, MARGINS, Scorer
from ..paths import guarded
from ..scale.ray_mine import RayExecutor
from ..scale.ray_session import ray_session
from .options import LANG, THRESHOLD_OR_NONE, FiniteFloat, ray_options

#: Without --threshold or --precision, mined pairs are kept from the threshold of this estimated precision.
DEFAULT_PRECISION = 0.9


def _mine_paths(kw: dict) -> dict:
    """The state folder the search will use (default OUTPUT.knn or OUTPUT.blocks) and OUTPUT.report.json."""
    out, state = kw["output"], kw["state_dir"]
    plain = kw["ray_address"] is None and kw["block_rows"] is None
    twostage = plain and (kw["knn_method"] == "twostage" or (kw["knn_method"] == "auto" and state is None))
    if state is None and not is_stdio(out):
        state = f"{out}.knn" if twostage else f"{out}.blocks" if not plain else None
    record = f"{out}.report.json" if (kw["report"] or kw["precision"] is not None) and not is_stdio(out) else None
    label = "--state folder" if kw["state_dir"] is not None else "state folder (default OUTPUT.knn / OUTPUT.blocks)"
    return {"states": {label: state}, "writes": {"--output record": record}}


@click.command()
@click.argument("src", type=click.Path(dir_okay=False))
@click.argument("tgt", type=click.Path(dir_okay=False))
@click.option("-l", "--src-lang", type=LANG, required=True, help="Language of SRC.")
@click.option("-L", "--tgt-lang", type=LANG, required=True, help="Language of TGT.")
@click.option("-e", "--encoder", default=DEFAULT_ENCODER, show_default=True,
              help="Registered encoder name or a model directory.")
@click.option("--margin", type=click.Choice(MARGINS), default="ratio", show_default=True,
              help="Margin of Artetxe & Schwenk 2019.")
@click.option("--score", type=click.Choice(KINDS), default=None,
              help="Score instead of the margin: cosine, euclidean, csls (or a margin name).")
@click.option("--retrieval", type=click.Choice(RETRIEVALS), default="max", show_default=True,
              help="Retrieval rule: max (both ways' best pooled, one-to-one greedily), intersect (found both ways), "
                   "fwd / bwd (each source's / target's best).")
@click.option("-k", "k", default=4, show_default=True, type=click.IntRange(1), help="Neighbourhood size.")
@click.option("--threshold", type=THRESHOLD_OR_NONE, default=None,
              help=f"Keep pairs scoring at least this; `none`: keep every pair. Default: the lowest threshold "
                   f"whose precision, estimated without gold, is {DEFAULT_PRECISION:g} "
                   f"(as --precision {DEFAULT_PRECISION:g}).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Output TSV (`-`: standard output).")
@click.option("--format", "fmt", type=click.Choice(["plain", "bucc"]), default="plain", show_default=True,
              help="plain: one sentence per line; bucc: id<TAB>sentence.")
@click.option("--line-numbers", "with_ids", is_flag=True,
              help="Append src and tgt ids (line numbers for plain input; always on for BUCC).")
@click.option("--src-vectors", type=click.Path(file_okay=False), default=None,
              help="Vectors of SRC made by `bisent embed` (skips embedding).")
@click.option("--tgt-vectors", type=click.Path(file_okay=False), default=None, help="Vectors of TGT.")
@click.option("--index", "--knn", "knn_method", type=click.Choice(["auto", "exact", "twostage", "ivf", "hnsw"]),
              default="auto", show_default=True,
              help="kNN search. exact: every pair scored (one blocked pass both ways). twostage: a scan of "
                   "every pair at 192 dimensions (PCA of a sample) keeps k + 16 candidates a sentence each way, "
                   "re-scored exactly at full dimension (about half exact's CPU time at d = 512; top-1 as "
                   "exact's for 99.7 % of sentences with use-m3 at 100k, benchmarks/README.md). "
                   "ivf, hnsw: approximate FAISS indexes. "
                   "auto: exact up to 200k x 200k sentences, twostage up to 2M x 2M, IVF above with probes "
                   "calibrated for 98.5 % top-1 agreement (bisent.mining.index.choose_index).")
@ray_options("the exact kNN")
@click.option("--state", "state_dir", type=click.Path(file_okay=False), default=None,
              help="Folder of finished kNN blocks, so a killed run resumes (default with --ray: OUTPUT.blocks); "
                   "removed once OUTPUT is written. Without --ray the blocks run in this process. With --index "
                   "twostage: the folder of the scan's saved heaps and candidates (default OUTPUT.knn), the same.")
@click.option("--block-rows", type=click.IntRange(1), default=None,
              help=f"Rows a side of one kNN block with --ray / --state (default {BLOCK}; a multiple of {BLOCK_ROWS}, "
                   "so every score is the same sgemm as without blocks).")
@click.option("--report", "report", type=click.Path(dir_okay=False), default=None,
              help="Also write this HTML report (and OUTPUT.report.json: binned scores, samples, calibration).")
@click.option("--precision", type=FiniteFloat(min=0, max=1), default=None,
              help="Instead of --threshold: the lowest threshold whose precision, estimated without gold, is this.")
@guarded(reads=("src", "tgt", "src_vectors", "tgt_vectors"), writes=("output", "report"),
         derived=_mine_paths, derived_params=("state_dir",))
def mine(src, tgt, src_lang, tgt_lang, encoder, margin, score, retrieval, k, threshold, output, fmt,
         with_ids, src_vectors, tgt_vectors, knn_method, ray_address, threads, workers, state_dir, block_rows,
         report, precision):
    """Mine SRC against TGT (either may be `-`, standard input); write `score<TAB>src<TAB>tgt` best first,
    duplicates removed. Without --threshold, pairs are kept at an estimated precision of 90 % (said on stderr).

    \b
    Examples:
      bisent mine en.txt de.txt -l en -L de -o mined.tsv
      bisent mine en.txt de.txt -l en -L de -e me5-small --threshold 1.05 -o mined.tsv --report mine.html
    """
    t0 = time.perf_counter()
    default = threshold is None and precision is None
    if threshold == "none" and precision is not None:
        raise BisentError("give --threshold or --precision, not both")
    threshold = None if threshold == "none" else threshold
    if default:
        precision = DEFAULT_PRECISION
    if is_stdio(src) and is_stdio(tgt):
        raise BisentError("SRC and TGT cannot both be `-` (standard input)")
    enc = None if src_vectors else get_encoder(encoder)
    twostage_state = None
    if ray_address is None and block_rows is None and (knn_method == "twostage" or
                                                       (knn_method == "auto" and state_dir is None)):
        # resumable by default: a two-stage scan (asked for, or chosen by auto from 200k a side) saves its heaps,
        # then its candidates, to this folder; the exact and approximate searches ignore it
        twostage_state = state_dir or (None if is_stdio(output) else f"{output}.knn")
        state_dir = None
    blocks = ray_address is not None or state_dir is not None or block_rows is not None
    if blocks:
        if knn_method not in ("auto", "exact"):
            raise BisentError("--ray / --state / --block-rows run the exact search in blocks; drop --index "
                              f"{knn_method}")
        if block_rows is not None and block_rows % BLOCK_ROWS:   # whole tiles: the one pass's sgemm shapes
            raise BisentError(f"--block-rows {block_rows}: must be a multiple of {BLOCK_ROWS} (the kNN tile)")
        if state_dir is None and not is_stdio(output):
            state_dir = f"{output}.blocks"
        rec = BlockScorer(score or margin, k, block=block_rows or BLOCK, state=state_dir,
                          executor=RayExecutor(threads=threads) if ray_address else None)
    else:
        rec = Scorer(score or margin, k, knn_method=knn_method,
                     **({"state": twostage_state} if twostage_state is not None else {}))
    scorer = rec
    to_stdout = False
    if report or precision is not None:
        from ..report import RecordingScorer, choose_threshold
        if is_stdio(output) and not default:
            raise BisentError("--report / --precision need an output file, not -o -")
        to_stdout = is_stdio(output)
        if threshold is not None:
            choose_threshold(None, threshold, precision)   # both given: a one-line error before any work
        scorer = RecordingScorer(rec)
    session = ray_session(ray_address, threads=threads, workers=workers) if ray_address else contextlib.nullcontext()
    tmp_dir = tempfile.TemporaryDirectory(prefix="bisent-mine-") if to_stdout else contextlib.nullcontext()
    with readable_file(src) as src_file, readable_file(tgt) as tgt_file, session, tmp_dir as tmp:
        # `-` and pipes: copied once; `-o -` with the default threshold: mined into a temp file, then copied
        output = str(Path(tmp) / "mined.tsv") if to_stdout else output
        summary = mine_files(src_file, tgt_file, src_lang, tgt_lang, enc, output, scorer=scorer,
                             retrieval=retrieval, threshold=threshold if scorer is rec else None, fmt=fmt,
                             with_ids=with_ids, src_vectors=src_vectors, tgt_vectors=tgt_vectors, progress=None)
        if scorer is not rec:
            from ..report import finish_mining
            try:
                summary.update(finish_mining(scorer, src_file, tgt_file, output, fmt=fmt, retrieval=retrieval,
                                             threshold=threshold, precision=precision, report=report, params={
                                                 "encoder": encoder, "score": score or margin, "k": k,
                                                 "retrieval": retrieval}, write_record=not default or bool(report)))
            except BisentError as e:
                if not default:
                    raise
                raise BisentError(f"the default threshold (estimated precision {DEFAULT_PRECISION:g}): "
                                  f"{str(e).removeprefix('--precision: ')}; give --threshold T, --precision P "
                                  f"or --threshold none (keep every pair)") from None
            if default:
                click.echo(f"bisent: kept {summary['pairs']} pairs scoring >= {summary['threshold']:.4g}, "
                           f"estimated precision {summary['estimated_precision']:.0%} (the default; "
                           f"--threshold none keeps every pair)", err=True)
        if to_stdout:
            with open(output, "rb") as f:
                shutil.copyfileobj(f, sys.stdout.buffer)
            sys.stdout.buffer.flush()
            summary["output"] = output = "-"
    if blocks:
        summary["blocks"] = rec.counts_
        if state_dir is not None:
            remove_state_dir(state_dir)   # OUTPUT is written: nothing left to resume
    if twostage_state is not None:
        remove_state_dir(twostage_state)   # OUTPUT is written: nothing left to resume
    summary["src_file"], summary["tgt_file"] = src, tgt
    summary["seconds"] = round(time.perf_counter() - t0, 2)
    click.echo(json.dumps(summary), err=True)
