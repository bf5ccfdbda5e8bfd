"""The scored pairs of a finished run, read back from its output and its ``OUTPUT.report.json``, and the
output re-cut at another threshold.

- ``bisent mine`` (``score<TAB>src<TAB>tgt``, best first): the rows are the pairs, with their scores;
- ``bisent filter`` (kept lines, no scores): the kept pairs are scored again at the pipeline's score step,
  as ``--report`` scored them (the embeddings come from the cache); the record names the recipe and languages;
- ``bisent documents mine``: the matched documents, their texts read from the collections the record names
  (their ids where it names none);
- ``bisent align`` (one aligned TSV, or a ``--pairs`` folder): the aligned blocks with a score;
- ``bisent run`` (its folder): the filter stage's kept pairs (``filter/kept.tsv``, recorded by ``--report``).

A re-cut keeps the format of the output: the rows (lines, blocks) scoring at
least the threshold, in their order; documents below it are reported
unmatched. It is written to another file (or folder), atomically.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..calibration import Calibration
from ..errors import BisentError
from ..io import atomic_dir, atomic_write, iter_raw_lines
from ..report.finished import SUFFIX, find_run
from ..report.record import tsv_rows


@dataclass
class ReviewRun:
    """The scored pairs of one run output (``keys``/``scores``/``src``/``tgt``, one per pair)."""

    kind: str                    # mining, filter, docs, align
    name: str
    output: Path                 # the reviewed output (a file, or a folder of aligned TSVs)
    keys: list[str]
    scores: np.ndarray
    src: list[str]
    tgt: list[str]
    record: dict | None = None
    record_path: Path | None = None
    labels_path: Path | None = None
    cut: Callable[[float, Path], dict] | None = field(default=None, repr=False)
    pipeline: object | None = field(default=None, repr=False)   # a filter run's pipeline, as the run built it
    below: int = 0               # the last ``below`` pairs are under the run's threshold (not in its output)

    @property
    def calibration(self) -> Calibration | None:
        cal = (self.record or {}).get("calibration")
        return Calibration(**cal) if cal and cal.get("thresholds") else None

    @property
    def threshold(self) -> float | None:
        return (self.record or {}).get("threshold")

    def write_cut(self, threshold: float, out) -> dict:
        """Write the output re-cut at ``threshold`` to ``out``; returns counts."""
        return self.cut(threshold, Path(out))


def load_run(path) -> ReviewRun:
    """The run whose output (or record, or run folder) is ``path``, located and its record read by the one reader
    of finished runs (:func:`bisent.report.finished.find_run`)."""
    found = find_run(path)
    if found.kind == "mining":
        return _mined_run(found.output, found.record)
    if found.kind == "filter":
        run = _filter_run(found.output, found.record)
        if found.run_folder is not None:                  # bisent run's filter stage: labels beside the run
            run.name, run.labels_path = found.run_folder.name, found.run_folder / "review.jsonl"
        return run
    if found.kind == "docs":
        return _docs_run(found.output, found.record)
    return _align_run(found.files, found.output, found.record)


def run_reads(path) -> dict[str, Path]:
    """The files a review of ``path`` reads besides ``path`` itself, for the path guard (checked before any
    work, so a bad record is left to :func:`load_run`): the run's record, its default labels file, and the
    inputs the record names (a filter recipe, its input, document collections)."""
    from ..report.finished import PAIRS_RECORD, read_record

    p = Path(path)
    if p.is_dir():
        from ..run import MANIFEST

        rec = p / "filter" / f"kept.tsv{SUFFIX}" if (p / MANIFEST).is_file() else p / PAIRS_RECORD
        labels = p / "review.jsonl"
    elif p.name.endswith(SUFFIX):
        rec, out = p, p.with_name(p.name[:-len(SUFFIX)])
        labels = out / "review.jsonl" if p.name == PAIRS_RECORD else Path(f"{out}.review.jsonl")
    else:
        rec, labels = Path(f"{p}{SUFFIX}"), Path(f"{p}.review.jsonl")
    out = {"RUN's record": rec, "RUN's labels": labels}
    try:
        params = read_record(rec).get("params") if rec.is_file() else None
    except BisentError:
        params = None
    for key in ("config", "input", "src_docs", "tgt_docs"):
        if isinstance(params, dict) and isinstance(params.get(key), str):
            out[f"RUN's {key} (from its record)"] = Path(params[key])
    return out


# ---------------------------------------------------------------------------
# mine
# ---------------------------------------------------------------------------

def _mined_run(p: Path, rec: dict | None) -> ReviewRun:
    """A mining output, with the pairs its threshold dropped (``OUTPUT.below``, which the run writes beside it)
    when that file is there: they are sampled too, and a re-cut below the threshold takes them back."""
    from ..report.record import read_mined
    from ..report.runs import below_path

    scores, texts = read_mined(p)
    keys = [str(i + 1) for i in range(len(scores))]
    files = [(p, scores)]
    below = below_path(p)
    if below.is_file():
        b_scores, b_texts = read_mined(below)
        if len(scores) and len(b_scores) and b_scores.max() > scores.min():
            raise BisentError(f"{below}: its pairs score above the output's lowest ({b_scores.max():.4g} > "
                              f"{scores.min():.4g}); it is not the pairs {p.name}'s threshold dropped")
        files.append((below, b_scores))
        keys += [f"below:{i + 1}" for i in range(len(b_scores))]
        scores, texts = np.concatenate([scores, b_scores]), texts + b_texts

    def cut(t: float, out: Path) -> dict:
        kept = 0
        with atomic_write(out, "wb") as f:
            for path, sc in files:
                for (_, raw), s in zip(iter_raw_lines(path), sc):
                    if s >= t:
                        f.write(raw + b"\n")
                        kept += 1
        return {"kept": kept, "dropped": len(scores) - kept}

    return ReviewRun("mining", p.name, p, keys, scores, [a for a, _ in texts], [b for _, b in texts], rec,
                     Path(f"{p}{SUFFIX}") if rec else None, Path(f"{p}.review.jsonl"), cut,
                     below=len(scores) - len(files[0][1]))


# ---------------------------------------------------------------------------
# filter (and bisent run's filter stage)
# ---------------------------------------------------------------------------

def filter_pipeline(rec: dict, rec_path: Path):
    """The pipeline a filter record names (recipe, encoder override, languages), as the run built it."""
    from ..filtering import FilterPipeline, as_pipeline, edit_config

    params = rec.get("params") or {}
    config, src_lang, tgt_lang = params.get("config"), params.get("src_lang"), params.get("tgt_lang")
    if config is None or not src_lang or not tgt_lang:
        raise BisentError(f"{rec_path}: the record does not name the filter recipe and languages (written by an "
                          "older bisent); rerun `bisent filter ... --report` to score the kept pairs again")
    if isinstance(config, str) and not Path(config).is_file():
        raise BisentError(f"{rec_path}: the filter recipe it names, {config}, is not there")
    if params.get("encoder"):
        return FilterPipeline.from_config(edit_config(config, encoder=params["encoder"]), src_lang=src_lang,
                                          tgt_lang=tgt_lang, source=str(config))
    return as_pipeline(config, src_lang, tgt_lang)


def _filter_run(kept_path: Path, rec: dict | None) -> ReviewRun:
    from ..io.bitext import iter_pairs, iter_units, open_bitext
    from ..io.rows import describe

    rec_path = Path(f"{kept_path}{SUFFIX}")
    if rec is None:
        raise BisentError(f"{kept_path}: no record {rec_path}; run `bisent filter ... --report FILE` first")
    pipe = filter_pipeline(rec, rec_path)
    inp = (rec.get("params") or {}).get("input")
    if pipe.sample_size:
        if not inp or not Path(inp).is_file():
            raise BisentError(f"{rec_path}: the pipeline draws a background sample from its input, which the "
                              "record does not name or is not there")
        pipe.prepare(iter_pairs(inp, fmt="tsv"))
    kept = open_bitext(kept_path, fmt="tsv")
    raws, pairs = [], []
    for u in iter_units(kept, allow_empty=True):
        if u.problem is not None:
            raise BisentError(f"{kept_path}:{u.n}: not a kept pair ({describe(u, kept.ncols)})")
        raws.append(u.raw)
        pairs.append((u.src, u.tgt))
    step = next(s for s in pipe.steps if s.name == pipe.score_step)
    scores = np.asarray(pipe._score(step, pairs) if pairs else [], dtype=np.float64)

    def cut(t: float, out: Path) -> dict:
        keep = scores >= t
        with atomic_write(out, "wb") as f:
            f.writelines(raw + b"\n" for raw, k in zip(raws, keep) if k)
        return {"kept": int(keep.sum()), "dropped": int((~keep).sum())}

    return ReviewRun("filter", kept_path.name, kept_path, [str(i + 1) for i in range(len(pairs))], scores,
                     [a for a, _ in pairs], [b for _, b in pairs], rec, rec_path,
                     Path(f"{kept_path}.review.jsonl"), cut, pipe)


# ---------------------------------------------------------------------------
# documents mine
# ---------------------------------------------------------------------------

def _docs_run(p: Path, rec: dict | None) -> ReviewRun:
    from ..documents import MINE_COLUMNS, read_documents

    rows = [(n, cols) for n, cols in tsv_rows(p)]
    if not rows or rows[0][1] != list(MINE_COLUMNS):
        raise BisentError(f"{p}:1: expected the header {' '.join(MINE_COLUMNS)} of 'bisent documents mine'")
    params = (rec or {}).get("params") or {}
    texts: list[dict] = [{}, {}]
    for side, key, lang in ((0, "src_docs", "src_lang"), (1, "tgt_docs", "tgt_lang")):
        if params.get(key) and Path(params[key]).exists():
            texts[side] = {d.id: " ".join(d.sentences) for d in
                           read_documents(params[key], params[lang], segmentation=params.get("segmentation", "given"))}
    keys, scores, src, tgt = [], [], [], []
    for n, cols in rows[1:]:
        if len(cols) != len(MINE_COLUMNS):
            raise BisentError(f"{p}:{n}: expected {len(MINE_COLUMNS)} columns, got {len(cols)}")
        if cols[4] != "matched":
            continue
        try:
            scores.append(float(cols[2]))
        except ValueError:
            raise BisentError(f"{p}:{n}: score {cols[2]!r} is not a number") from None
        keys.append(f"{cols[0]} / {cols[1]}")
        src.append(texts[0].get(cols[0], cols[0]))
        tgt.append(texts[1].get(cols[1], cols[1]))

    def cut(t: float, out: Path) -> dict:
        kept = dropped = 0
        with atomic_write(out) as f:
            f.write("\t".join(MINE_COLUMNS) + "\n")
            for _, cols in rows[1:]:
                if cols[4] == "matched":
                    if float(cols[2]) >= t:
                        kept += 1
                    else:
                        cols = [*cols[:4], f"unmatched: score below threshold {t:g}", *cols[5:]]
                        dropped += 1
                f.write("\t".join(cols) + "\n")
        return {"kept": kept, "dropped": dropped}

    return ReviewRun("docs", p.name, p, keys, np.asarray(scores, dtype=np.float64), src, tgt, rec,
                     Path(f"{p}{SUFFIX}") if rec else None, Path(f"{p}.review.jsonl"), cut)


# ---------------------------------------------------------------------------
# align
# ---------------------------------------------------------------------------

def _align_run(tsvs: list[Path], output: Path, rec: dict | None) -> ReviewRun:
    if not tsvs:
        raise BisentError(f"{output}: no aligned TSVs (NNNNN.tsv) in the folder")
    keys, scores, src, tgt, files = [], [], [], [], []
    for path in tsvs:
        rows = []
        for n, cols in tsv_rows(path):
            if len(cols) < 5:
                raise BisentError(f"{path}:{n}: not an aligned row (src_lines<TAB>tgt_lines<TAB>score<TAB>src<TAB>tgt)")
            score = None
            if cols[0] and cols[1] and cols[2] not in ("", "empty"):
                try:
                    score = float(cols[2])
                except ValueError:
                    raise BisentError(f"{path}:{n}: score {cols[2]!r} is not a number") from None
                keys.append(f"{path.name}:{n}" if len(tsvs) > 1 else str(n))
                scores.append(score)
                src.append(cols[3])
                tgt.append(cols[4])
            rows.append((n, score))
        files.append((path, rows))

    def cut(t: float, out: Path) -> dict:
        kept = dropped = 0

        def write(path, rows, dest):
            nonlocal kept, dropped
            with atomic_write(dest, "wb") as f:
                for (_, raw), (_, score) in zip(iter_raw_lines(path), rows):
                    if score is not None and score >= t:
                        f.write(raw + b"\n")
                        kept += 1
                    else:
                        dropped += 1

        if output.is_dir():
            with atomic_dir(out, replace_names=frozenset(path.name for path, _ in files)) as tmp:
                for path, rows in files:
                    write(path, rows, tmp / path.name)
        else:
            write(*files[0], out)
        return {"kept": kept, "dropped": dropped}

    folder = output.is_dir()
    return ReviewRun("align", output.name, output, keys, np.asarray(scores, dtype=np.float64), src, tgt, rec,
                     (output / f"pairs{SUFFIX}" if folder else Path(f"{output}{SUFFIX}")) if rec else None,
                     output / "review.jsonl" if folder else Path(f"{output}.review.jsonl"), cut)
