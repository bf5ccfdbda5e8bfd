"""``bisent review``: check a run's pairs by eye in the browser; the labels give the threshold."""

from __future__ import annotations

import json

import click

from ..paths import check_command_paths, guarded
from .options import FiniteFloat


def _review_paths(kw: dict) -> dict:
    """-o: a file, or a folder when RUN is a folder (an `align --pairs` folder is re-cut into another)."""
    from pathlib import Path

    from ..review.scored_run import run_reads

    reads = run_reads(kw["run"])
    labels = reads.pop("RUN's labels")
    out = {"folders" if Path(kw["run"]).is_dir() else "writes": {"-o": kw["output"]}, "reads": reads}
    if kw["labels"] is None and (kw["summary_only"] or kw["report"] or kw["apply"] is not None):
        reads["--labels (default)"] = labels             # only read
    elif kw["labels"] is None:                           # the server appends to it
        out.setdefault("writes", {})["--labels (default)"] = labels
        out["resumes"] = {str(labels): labels}
    return out


@click.command("review")
@click.argument("run", type=click.Path())
@click.option("--labels", type=click.Path(dir_okay=False), default=None,
              help="The labels file (JSONL, appended to as you label; default: OUTPUT.review.jsonl beside the "
                   "output, RUN/review.jsonl for a folder). An existing one is resumed.")
@click.option("--seed", type=int, default=None, help="Seed of the sample (default 0, or the labels file's).")
@click.option("--bands", type=click.IntRange(1, 50), default=None,
              help="Score bands (default 6, or the labels file's).")
@click.option("--per-band", type=click.IntRange(1), default=None,
              help="Pairs to label per band (default: enough for ±--margin at 95 % confidence).")
@click.option("--margin", type=FiniteFloat(0.005, 0.5), default=None,
              help="Half-width of each band's precision interval the sample is sized for (default 0.05).")
@click.option("--precision", type=FiniteFloat(0, 1), default=None,
              help="Also give the threshold for this precision (the summary has 90, 95 and 98 %).")
@click.option("--summary", "summary_only", is_flag=True,
              help="Print what the labels say as JSON and stop (no server).")
@click.option("--apply", "apply", type=FiniteFloat(0, 1), default=None, metavar="P",
              help="Write the output re-cut at the threshold the labels give for precision P to -o, and stop "
                   "(for a mine run, below its own threshold too where the labels say so).")
@click.option("-o", "--output", type=click.Path(), default=None, help="Where --apply writes the re-cut output.")
@click.option("--report", type=click.Path(dir_okay=False), default=None,
              help="Write the run's HTML report with the labels' measured precision beside the estimate, and stop.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True, help="Port (0: a free one).")
@guarded(reads=("run",), writes=("labels", "report"), derived=_review_paths, derived_params=("output",),
         resumes=("labels",))
def review(run, labels, seed, bands, per_band, margin, precision, summary_only, apply, output, report, port):
    """Review RUN (the output of mine, filter, align, documents mine, or a `bisent run` folder).

    Draws a sample stratified by score band and serves a page on 127.0.0.1
    (its address, with a one-time token, is printed once): one pair at a time,
    keys y parallel, n not, p partial, s skip, u undo. Stop it with Ctrl-C;
    the next `bisent review RUN` resumes where it stopped. The pairs a mine
    run's threshold dropped (OUTPUT.below, beside its output) are sampled in
    bands of their own, so the labels can lower a cut set too high.

    \b
    Examples:
      bisent review runs/en-de
      bisent review runs/en-de --summary
      bisent review runs/en-de --apply 0.95 -o kept-95.tsv
    """
    from ..errors import BisentError
    from ..review import open_review

    if apply is not None and output is None:
        raise BisentError("--apply P needs -o FILE for the re-cut output")
    if output is not None and apply is None:
        raise BisentError("-o is the output of --apply P; give --apply too")
    r = open_review(run, labels, seed=seed, bands=bands, per_band=per_band, margin=margin)
    if apply is not None:
        click.echo(json.dumps(_apply(r, apply, output)))
    elif summary_only or report:
        click.echo(json.dumps(_summary(r, precision, report), indent=1))
    else:
        _serve(r, port, precision)


def _apply(r, apply: float, output) -> dict:
    """``--apply P -o OUT``: the run re-cut at the threshold the labels give for precision P."""
    from ..errors import BisentError

    if r.run.output.is_dir():                 # aligned TSVs of --pairs: -o is a folder of the same files
        from pathlib import Path

        from ..io import same_file
        if same_file(output, r.run.output) or Path(output).resolve().is_relative_to(r.run.output.resolve()):
            raise BisentError(f"{output}: -o is the reviewed folder or inside it; give another folder")
    else:
        check_command_paths({"reads": {"RUN": r.run.output, "--labels": r.labels_path}, "writes": {"-o": output}})
    t = r.threshold(apply)
    if t is None:
        raise BisentError(f"--apply {apply}: the labels reach that precision at no threshold "
                          f"({r.summary()['labelled']} labels); label more or ask for less")
    counts = r.run.write_cut(t["threshold"], output)
    lowered = {} if r.run.threshold is None or t["threshold"] >= r.run.threshold else {"lowered_from": r.run.threshold}
    return {"output": str(output), **counts, **t, **lowered}


def _summary(r, precision, report) -> dict:
    """``--summary`` / ``--report``: what the labels say (and the report with it)."""
    s = r.summary(precision)
    if report:
        from ..report.html import render

        record = dict(r.run.record or {"kind": r.run.kind})
        record["review"] = s
        s["report"] = str(render([(r.run.name, record)], report, title=f"bisent review: {r.run.name}"))
    return s


def _serve(r, port: int, precision) -> None:
    """The review page until Ctrl-C or SIGTERM; then the summary on stderr."""
    import signal
    import sys

    from ..review.server import ReviewServer

    server = ReviewServer(r, port=port, precision=precision)
    click.echo(f"bisent review: {len(r.items)} pairs in {len(r.bands)} bands, {len(r.log.labels)} labelled; "
               f"labels in {r.labels_path}")
    click.echo(server.url, nl=True)

    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)       # `kill` stops it as Ctrl-C does: the summary, then exit 0
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    click.echo(json.dumps(r.summary(precision)), err=True)
