"""``bisent explain``: why a sentence pair scores what it scores."""

from __future__ import annotations

import json

import click

from ..encoders import DEFAULT_ENCODER
from ..paths import guarded
from .options import LANG, bitext_options, recipe_name


def _explain_paths(kw: dict) -> dict:
    """With --line, SRC (and TGT, a Moses file) name the bitext to read."""
    if kw.get("line") is None:
        return {}
    return {"reads": {"FILE": kw["src"], "FILE2": kw["tgt"]}}


@click.command()
@click.argument("src")
@click.argument("tgt", required=False)
@click.option("--line", type=click.IntRange(1), default=None, metavar="N",
              help="SRC is a bitext file (TGT: the target file of a Moses pair): explain its line N (1-based; "
                   "the unit N of TMX/XLIFF, the row N of Parquet), as the rejected file numbers them.")
@bitext_options
@click.option("-l", "--src-lang", type=LANG, required=True, help="Language of the source side.")
@click.option("-L", "--tgt-lang", type=LANG, required=True, help="Language of the target side.")
@click.option("-e", "--encoder", default=DEFAULT_ENCODER, show_default=True, help="Encoder name or model directory.")
@click.option("-k", "k", default=4, show_default=True, type=click.IntRange(1), help="Neighbourhood size.")
@click.option("--background", type=click.Path(dir_okay=False), default=None,
              help="Sentences to compete with: src<TAB>tgt pairs or a mined TSV (score<TAB>src<TAB>tgt).")
@click.option("--background-limit", default=20000, show_default=True, type=click.IntRange(1),
              help="Read at most this many background lines.")
@click.option("-c", "--config", type=click.Path(dir_okay=False), default=None, callback=recipe_name,
              help="A filter pipeline (YAML): say which step decides and with what value.")
@click.option("--divergence", type=click.Path(file_okay=False), default=None,
              help="A divergence model directory (bisent train -c divergence) for the word alignment heat map.")
@click.option("--json", "as_json", is_flag=True, help="Print the explanation as one JSON object.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, help="Also write it as HTML.")
@guarded(reads=("background", "config", "divergence"), writes=("output",), derived=_explain_paths,
         derived_params=("src", "tgt"))
def explain(src, tgt, line, fmt, columns, src_lang, tgt_lang, encoder, k, background, background_limit, config,
            divergence, as_json, output):
    """Explain the pair SRC / TGT (two sentences), or with --line N the pair on line N of the bitext file SRC
    (any format bisent reads: TSV, --columns, TMX, XLIFF, JSONL, Parquet, Moses SRC TGT): cosine, margins,
    k nearest competitors both ways, and with -c the filter's verdict with the limit it crossed.

    \b
    Examples:
      bisent explain 'The cat sleeps.' 'Die Katze schläft.' -l en -L de
      bisent explain kept.tsv --line 12 -l en -L de -c filter-default
      bisent explain corpus.en corpus.de --line 3 -l en -L de --json
    """
    from ..encoders import get_encoder
    from ..errors import BisentError
    from ..io import line_problem
    from ..report.explain import explain_pair, explanation_text, read_background, read_line

    if line is not None:
        src, tgt = read_line([src] + ([tgt] if tgt else []), line, fmt=fmt, columns=columns, src_lang=src_lang,
                             tgt_lang=tgt_lang)
    elif tgt is None:
        raise BisentError("give two sentences SRC TGT, or a bitext file with --line N")
    elif fmt is not None or columns is not None:
        raise BisentError("--format and --columns read a bitext file: give --line N too")
    for name, text in (("SRC", src), ("TGT", tgt)):
        problem = line_problem(text.encode("utf-8", "surrogateescape"))[1]
        if problem:
            raise BisentError(f"{name} {text[:40]!r}: {problem.replace('empty line', 'empty')}")
    bg_s, bg_t = read_background(background, background_limit) if background else ([], [])
    pipe = None
    if config:
        from ..filtering import as_pipeline
        pipe = as_pipeline(config, src_lang, tgt_lang)
    ex = explain_pair(src, tgt, get_encoder(encoder), src_lang, tgt_lang, background_src=bg_s, background_tgt=bg_t,
                      k=k, pipeline=pipe, divergence=divergence)
    if output:
        from ..report.html import explanation_html, render_body
        render_body(explanation_html(ex), output, title="bisent explain")
    click.echo(json.dumps(ex, ensure_ascii=False) if as_json else explanation_text(ex))
