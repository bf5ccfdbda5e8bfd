"""``bisent mine``: parallel sentences from two monolingual collections; a thin layer over
:func:`bisent.jobs.mine`."""

from __future__ import annotations

import click

from ..encoders import DEFAULT_ENCODER
from ..jobs.mine import DEFAULT_PRECISION, PATHS
from ..mining.blocks import BLOCK
from ..mining.index import BLOCK_ROWS
from ..mining.retrieval import RETRIEVALS
from ..mining.scoring import KINDS, MARGINS
from ..paths import guarded
from .options import LANG, THRESHOLD_OR_NONE, FiniteFloat, echo_summary, fast_option, ray_options


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
@click.option("--index", "--knn", "knn_method",
              type=click.Choice(["auto", "exact", "twostage", "compressed", "ivf", "hnsw"]), default="auto",
              show_default=True,
              help="kNN search. exact: every pair scored (one blocked pass both ways). twostage: a scan of "
                   "every pair at 192 dimensions (PCA of a sample) keeps k + 16 candidates a sentence each way, "
                   "re-scored exactly at full dimension (about half exact's CPU time at d = 512; top-1 as "
                   "exact's for 99.7 % of sentences with use-m3 at 100k, benchmarks/README.md). "
                   "compressed: an IVF index of 4-bit codes at 128 dimensions, k + 64 candidates a sentence "
                   "re-ranked exactly, probes calibrated so that a sample's mined pairs are 98.5 % the exact "
                   "search's (bisent.mining.compressed). ivf, hnsw: approximate FAISS indexes. "
                   "auto: exact up to 200k x 200k sentences, two-stage up to 2M x 2M, compressed above "
                   "(bisent.mining.index.choose_index).")
@ray_options("the exact kNN (in blocks) or, with --index compressed, its query shards")
@click.option("--state", "state_dir", type=click.Path(file_okay=False), default=None,
              help="Folder of finished kNN blocks, so a killed run resumes (default with --ray: OUTPUT.blocks); "
                   "removed once OUTPUT is written. Without --ray the blocks run in this process. With --index "
                   "twostage / compressed: the folder of the search's saved stages (default OUTPUT.knn), the same.")
@click.option("--block-rows", type=click.IntRange(1), default=None,
              help=f"Rows a side of one kNN block with --ray / --state (default {BLOCK}; a multiple of {BLOCK_ROWS}, "
                   "so every score is the same sgemm as without blocks).")
@click.option("--report", "report", type=click.Path(dir_okay=False), default=None,
              help="Also write this HTML report (and OUTPUT.report.json: binned scores, samples, calibration).")
@click.option("--precision", type=FiniteFloat(min=0, max=1), default=None,
              help="Instead of --threshold: the lowest threshold whose precision, estimated without gold, is this.")
@fast_option
@guarded(**PATHS)
def mine(**options):
    """Mine SRC against TGT (either may be `-`, standard input); write `score<TAB>src<TAB>tgt` best first,
    duplicates removed. Without --threshold, pairs are kept at an estimated precision of 90 % (said on stderr).

    \b
    Examples:
      bisent mine en.txt de.txt -l en -L de -o mined.tsv
      bisent mine en.txt de.txt -l en -L de -e me5-small --threshold 1.05 -o mined.tsv --report mine.html
    """
    from .. import jobs

    echo_summary(jobs.mine(**options), err=True)
