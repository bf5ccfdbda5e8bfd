"""``bisent run``: the road from document pairs to clean bitext as resumable stages in one run folder.

Stages, in order (a small registry: :data:`STAGES`, :func:`register_stage`)::

    documents  -> documents/pairs.tsv       which document pairs to align
    align      -> align/NNNNN.tsv ...       sentence alignment inside each pair (bisent.align)
    candidates -> candidates.tsv            aligned n-m groups as src<TAB>tgt, provenance beside it
    filter     -> filter/kept.tsv ...       the filter pipeline and its selection (bisent.filtering)
    bitext     -> bitext.tsv, summary.json  kept pairs with provenance, and the accounting of the run

Each stage reads only the run's config and earlier stages' outputs, and
writes only under its own name in the run folder. ``manifest.json`` records,
per finished stage, the hash of its inputs (its config section and the
SHA-256 of every file it reads) and of its outputs: the stages' completion marks,
each with its own fingerprint (the run folder is a :class:`bisent.state.StateDir`
adopted without one). Unlike a single job's state folder, which refuses other
inputs, the run is make-like by design: a rerun skips a stage
whose inputs hash the same and whose outputs are intact, and redoes it and
every later stage otherwise; so after a kill (even ``kill -9``) at any point
the rerun continues with the first unfinished stage. A stage is marked
``running`` with its input hash before it starts: rerun with the same inputs,
``align`` and ``filter`` continue inside the stage (finished pairs and
checkpoints are kept); with other inputs the stage's old outputs are removed first. Outputs are written to temporary
files and renamed, the manifest last.

The ``documents`` stage takes the pairs as given (``documents.pairs``: a TSV
of source and target paths, or the output of ``bisent documents mine``), or mines
them across two collections (``documents.collections``: JSONL files or
folders) with :mod:`bisent.documents` (Sentence-Avg, HiDE or Document BoW;
kNN + margin, one-to-one): one row per source document in
``documents/matches.tsv``, every unpaired document of either side in
``documents/unmatched.tsv`` with its reason.

Environment: ``BISENT_RUN_PAUSE_AFTER=STAGE`` makes the run write
``.paused-STAGE`` in the run folder and sleep after that stage is recorded
(for tests that kill the run between stages).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Callable

import click

from .errors import BisentError
from .io import atomic_write, file_sha256, remove_state_dir
from .langcodes import check_bcp47
from .recipes import is_installed, resolve, set_keys
from .report.finished import MANIFEST
from .safeload import read_json, read_yaml, shown_key
from .state import StateDir, write_json

FORMAT = 1


class RunContext:
    """The run's config (YAML, paths resolved against its folder) and folder; helpers for stages."""

    def __init__(self, config: dict, run_dir: Path, base: Path, echo=click.echo, progress: bool | None = None):
        self.config, self.dir, self.base, self.echo, self.progress = config, run_dir, base, echo, progress
        self.src_lang, self.tgt_lang = config["src_lang"], config["tgt_lang"]

    def section(self, name: str) -> dict:
        return self.config.get(name) or {}

    def path(self, value) -> Path:
        """A path from the config: relative ones are taken from the YAML file's folder."""
        p = Path(str(value))
        return p if p.is_absolute() else self.base / p


class Stage:
    def __init__(self, name: str, fn: Callable, inputs: Callable, outputs: tuple[str, ...]):
        self.name, self.fn, self.inputs, self.outputs = name, fn, inputs, outputs


STAGES: dict[str, Stage] = {}


def register_stage(name: str, *, outputs: tuple[str, ...], inputs: Callable | None = None):
    """Register ``fn(ctx) -> summary dict`` as the next stage; ``inputs(ctx)`` lists the files it reads
    (outputs of earlier stages are added automatically), ``outputs`` the files it leaves (run-relative)."""
    def deco(fn):
        STAGES[name] = Stage(name, fn, inputs or (lambda ctx: []), outputs)
        return fn
    return deco


# --------------------------------------------------------------------------- stages

def _collections(ctx: RunContext) -> list[Path]:
    """The files the documents stage reads: the given pairs TSV, or every file of both collections."""
    from .documents import collection_files

    sec = ctx.section("documents")
    if sec.get("pairs"):
        return [ctx.path(sec["pairs"])]
    coll = sec.get("collections") or {}
    return [f for side in ("src", "tgt") if coll.get(side) and ctx.path(coll[side]).exists()
            for f in collection_files(ctx.path(coll[side]))]


@register_stage("documents", outputs=("documents/pairs.tsv", "documents/matches.tsv", "documents/unmatched.tsv"),
                inputs=_collections)
def stage_documents(ctx: RunContext) -> dict:
    """Document pairs: given as a TSV (``documents.pairs``: path pairs, or a ``bisent documents mine`` output), or
    mined across two collections (``documents.collections``) by :mod:`bisent.documents`."""
    from .align.batch import read_pairs

    sec = ctx.section("documents")
    coll = sec.get("collections")
    if sec.get("pairs") and coll:
        raise BisentError("documents: give either pairs or collections, not both")
    if coll:
        return _mine_collections(ctx, sec, coll)
    if not sec.get("pairs"):
        raise BisentError("documents: give pairs (a TSV of src_path<TAB>tgt_path) or collections {src: ..., tgt: ...}")
    pairs = [(s, t) for _, s, t in read_pairs(ctx.path(sec["pairs"]))]
    with atomic_write(ctx.dir / "documents" / "pairs.tsv") as f:
        f.write("".join(f"{s.resolve()}\t{t.resolve()}\n" for s, t in pairs))
    for name in ("matches.tsv", "unmatched.tsv"):
        with atomic_write(ctx.dir / "documents" / name):
            pass
    return {"pairs": len(pairs), "unmatched_src": 0, "unmatched_tgt": 0}


def _mine_collections(ctx: RunContext, sec: dict, coll) -> dict:
    """``bisent documents mine`` inside the run: read both collections (JSONL or folders), embed, kNN + margin,
    one-to-one. ``matches.tsv`` is its output (one row per source document); each matched document is
    written one sentence per line under ``documents/text/`` for the align stage; ``unmatched.tsv`` lists
    every document of either side without a pair, with the reason."""
    from .documents import get_document_encoder, mine_documents, plain_means, read_documents, write_matches

    if not isinstance(coll, dict) or not coll.get("src") or not coll.get("tgt"):
        raise BisentError("documents.collections: expected {src: JSONL_OR_FOLDER, tgt: JSONL_OR_FOLDER}")
    seg = sec.get("segmentation", "given")
    src = read_documents(ctx.path(coll["src"]), ctx.src_lang, segmentation=seg)
    tgt = read_documents(ctx.path(coll["tgt"]), ctx.tgt_lang, segmentation=seg)
    enc = get_document_encoder(str(sec.get("encoder", "use-m3")))
    a = enc.encode_documents([d.sentences for d in src], ctx.src_lang, progress=ctx.progress)   # (n, d)
    b = enc.encode_documents([d.sentences for d in tgt], ctx.tgt_lang, progress=ctx.progress)   # (m, d)
    threshold, min_cosine = doc_settings(sec)
    matches = mine_documents(src, tgt, a, b, k=int(sec.get("k", 4)), score=str(sec.get("score", "ratio")),
                             threshold=threshold, min_cosine=min_cosine,
                             plain=plain_means(enc, src, tgt, ctx.src_lang, ctx.tgt_lang))
    counts = write_matches(matches, ctx.dir / "documents" / "matches.tsv")
    tgt_by_id = {d.id: d for d in tgt}
    matched = [(d, tgt_by_id[m.tgt_id]) for d, m in zip(src, matches) if m.reason is None]
    used = {t.id for _, t in matched}
    text = ctx.dir / "documents" / "text"
    rows = []
    for k, (s, t) in enumerate(matched):
        for side, doc in (("src", s), ("tgt", t)):
            with atomic_write(text / side / f"{k:05d}.txt") as f:
                f.write("".join(x + "\n" for x in doc.sentences))
        rows.append(f"text/src/{k:05d}.txt\ttext/tgt/{k:05d}.txt\t{s.id}\t{t.id}\n")
    with atomic_write(ctx.dir / "documents" / "pairs.tsv") as f:
        f.write("".join(rows))
    unmatched = [("src", d.id, d.origin, m.reason) for d, m in zip(src, matches) if m.reason is not None]
    unmatched += [("tgt", d.id, d.origin, d.reason or "no source document matched it")
                  for d in tgt if d.id not in used]
    with atomic_write(ctx.dir / "documents" / "unmatched.tsv") as f:
        f.write("".join("\t".join(u) + "\n" for u in unmatched))
    return {"src_documents": len(src), "tgt_documents": len(tgt), "pairs": len(matched),
            "unmatched_src": counts.get("unmatched", 0), "unmatched_tgt": len(tgt) - len(matched),
            "encoder": enc.name, "threshold": threshold, "min_cosine": min_cosine}


def doc_settings(sec) -> tuple[float | None, float | None]:
    """The documents section's threshold and cosine floor: ``bisent documents mine``'s defaults where unset
    (:data:`bisent.documents.DEFAULT_THRESHOLD`, :data:`~bisent.documents.DEFAULT_MIN_COSINE`), null: none."""
    from .documents import DEFAULT_MIN_COSINE, DEFAULT_THRESHOLD

    return (sec.get("threshold", DEFAULT_THRESHOLD), sec.get("min_cosine", DEFAULT_MIN_COSINE))


def _documents(ctx: RunContext) -> list[Path]:
    pairs = ctx.dir / "documents" / "pairs.tsv"
    return [pairs.parent / c for line in pairs.read_text(encoding="utf-8").splitlines() for c in line.split("\t")[:2]]


@register_stage("align", outputs=("align/summary.jsonl",), inputs=_documents)
def stage_align(ctx: RunContext) -> dict:
    """Sentence alignment of every document pair (continues where a killed run stopped)."""
    from .align.aligner import OPTIONS, check_options
    from .align.batch import align_many

    sec = dict(ctx.section("align"))
    sec.update(check_options({k: v for k, v in sec.items() if k in OPTIONS}, "align"))   # 4.0 -> 4
    if not (ctx.dir / "documents" / "pairs.tsv").read_text(encoding="utf-8").strip():
        raise BisentError(f"{ctx.dir / 'documents' / 'pairs.tsv'}: no document pairs to align (every document "
                          f"is unmatched: see {ctx.dir / 'documents' / 'unmatched.tsv'})")
    precision = sec.pop("precision", None)
    encoder = sec.pop("encoder", "use-m3")
    summary = align_many(ctx.dir / "documents" / "pairs.tsv", ctx.dir / "align", ctx.src_lang, ctx.tgt_lang,
                         encoder=encoder, jobs=int(sec.pop("jobs", 1)), split=bool(sec.pop("split", False)),
                         progress=ctx.progress, keyed=None if precision is None else {"precision": precision}, **sec)
    if precision is not None:
        summary.update(_align_precision(ctx, encoder, float(precision)))
    return summary


def _align_precision(ctx: RunContext, encoder: str, precision: float) -> dict:
    """``align.precision``: the aligned blocks scoring below the lowest threshold whose precision, estimated
    without gold over every pair's TSV (as ``bisent align --precision``), reaches ``precision`` become 1-0 / 0-1
    rows. The threshold is written to ``align/precision.json`` before any TSV is rewritten, so a run killed
    while rewriting continues with the same threshold (unaligning below it twice changes nothing)."""
    from .report.runs import precision_threshold, unalign_all_below

    folder = ctx.dir / "align"
    rows = [json.loads(x) for x in (folder / "summary.jsonl").read_text(encoding="utf-8").splitlines()]
    pairs = (ctx.dir / "documents" / "pairs.tsv").read_text(encoding="utf-8").splitlines()
    ok = {r["line"] for r in rows if "error" not in r}
    tsvs = [folder / f"{k:05d}.tsv" for k in range(len(pairs)) if k + 1 in ok]
    key = hashlib.sha256(json.dumps([precision, [r.get("key") for r in rows]]).encode()).hexdigest()
    state = folder / "precision.json"
    try:
        saved = json.loads(state.read_text(encoding="utf-8"))
        saved = saved if saved.get("key") == key else None
    except (OSError, ValueError, AttributeError):
        saved = None
    if saved is None:
        t, cal = precision_threshold(tsvs, encoder, ctx.src_lang, ctx.tgt_lang, precision)
        saved = {"key": key, "precision": precision, "threshold": round(t, 6),
                 "estimated_precision": round(cal.precision_at(t), 4)}
        write_json(state, saved, indent=None)
    done = unalign_all_below(tsvs, [tsv.with_suffix(".blocks") for tsv in tsvs], saved["threshold"])
    return {"precision": precision, "threshold": saved["threshold"],
            "estimated_precision": saved["estimated_precision"],
            "unaligned_after_threshold": done["unaligned_after_threshold"]}


@register_stage("candidates", outputs=("candidates.tsv", "candidates.ids.tsv"))
def stage_candidates(ctx: RunContext) -> dict:
    """Aligned groups with text on both sides as ``src<TAB>tgt``; ``candidates.ids.tsv`` says where each came from
    (pair number, 1-based source and target lines, alignment score)."""
    from .io.bitext import column_text, iter_units, open_bitext

    rows = [json.loads(x) for x in (ctx.dir / "align" / "summary.jsonl").read_text(encoding="utf-8").splitlines()]
    by_line = {r["line"]: r for r in rows}
    pairs = (ctx.dir / "documents" / "pairs.tsv").read_text(encoding="utf-8").splitlines()
    n_cand = skipped_empty = 0
    with atomic_write(ctx.dir / "candidates.tsv") as cand, atomic_write(ctx.dir / "candidates.ids.tsv") as ids:
        for k in range(len(pairs)):
            if "error" in by_line.get(k + 1, {"error": "missing"}):
                continue
            aligned = open_bitext([ctx.dir / "align" / f"{k:05d}.tsv"], fmt="tsv", columns=(4, 5))
            for u in iter_units(aligned, on_bad="error", allow_empty=True):
                s_lines, t_lines, score = (column_text(aligned, u, i) for i in range(3))
                if not s_lines or not t_lines:
                    continue
                if not u.src or not u.tgt:
                    skipped_empty += 1
                    continue
                cand.write(f"{u.src}\t{u.tgt}\n")
                ids.write(f"{k + 1}\t{s_lines}\t{t_lines}\t{score}\n")
                n_cand += 1
    return {"candidates": n_cand}


def _filter_config(ctx: RunContext):
    """The filter section's recipe: a path from the YAML's folder, else an installed recipe's name; or inline data."""
    cfg = ctx.section("filter").get("config", "filter-default")
    if not isinstance(cfg, str):
        return cfg
    return ctx.path(cfg) if ctx.path(cfg).exists() else resolve(cfg)


def _filter_inputs(ctx: RunContext) -> list[Path]:
    """The filter recipe's file, and the files of every model directory its steps load (``repair``,
    ``divergence``, trained scorers): a retrained model redoes the filter stage."""
    from .filtering.config import load_config

    cfg = _filter_config(ctx)
    data = load_config(cfg)
    steps = data.get("steps", []) if isinstance(data, dict) else data if isinstance(data, list) else []
    models = [Path(str(s["model"])) for s in steps if isinstance(s, dict) and s.get("model")]
    return ([cfg] if isinstance(cfg, Path) else []) + [f for m in models if m.is_dir()
                                                       for f in sorted(m.iterdir()) if f.is_file()]


@register_stage("filter", outputs=("filter/kept.tsv", "filter/rejected.tsv", "filter/summary.json"),
                inputs=_filter_inputs)
def stage_filter(ctx: RunContext) -> dict:
    """The filter pipeline (and its selection) over the candidates, a ``repair`` step included when
    the recipe has it (the kept pairs then carry the repaired text); resumes from its own checkpoints."""
    from .filtering import filter_file

    out = ctx.dir / "filter"
    out.mkdir(exist_ok=True)
    s = filter_file(ctx.dir / "candidates.tsv", out / "kept.tsv", out / "rejected.tsv", ctx.src_lang, ctx.tgt_lang,
                    _filter_config(ctx), summary_path=out / "summary.json", progress=ctx.progress)
    return {"kept": s["kept"], "rejected": s["rejected"], "rejected_by": s["rejected_by"]}


@register_stage("bitext", outputs=("bitext.tsv", "bitext.ids.tsv", "summary.json"))
def stage_bitext(ctx: RunContext) -> dict:
    """Kept pairs with their provenance, and ``summary.json``: every document and line accounted for."""
    ids = (ctx.dir / "candidates.ids.tsv").read_text(encoding="utf-8").splitlines()
    rejected = {int(line.split("\t", 1)[0]) for line in
                (ctx.dir / "filter" / "rejected.tsv").read_text(encoding="utf-8").splitlines() if line}
    kept_ids = [ids[k] for k in range(len(ids)) if k + 1 not in rejected]
    kept = (ctx.dir / "filter" / "kept.tsv").read_text(encoding="utf-8").splitlines()
    if len(kept) != len(kept_ids):
        raise RuntimeError(f"{len(kept)} kept lines but {len(kept_ids)} candidates not rejected")
    shutil.copyfile(ctx.dir / "filter" / "kept.tsv", ctx.dir / ".bitext.tsv.tmp")
    os.replace(ctx.dir / ".bitext.tsv.tmp", ctx.dir / "bitext.tsv")
    with atomic_write(ctx.dir / "bitext.ids.tsv") as f:
        f.write("".join(x + "\n" for x in kept_ids))
    manifest = read_manifest(ctx.dir)
    summary = {name: manifest["stages"][name]["summary"] for name in ("documents", "align", "candidates", "filter")}
    summary["bitext"] = {"pairs": len(kept)}
    with atomic_write(ctx.dir / "summary.json") as f:
        json.dump(summary, f, indent=2, sort_keys=True)
        f.write("\n")
    return {"pairs": len(kept)}


# --------------------------------------------------------------------------- the runner

def read_manifest(run_dir: Path) -> dict:
    path = run_dir / MANIFEST
    if not path.exists():
        return {"format": FORMAT, "stages": {}}
    try:
        manifest = read_json(path)
    except BisentError as e:
        raise BisentError(f"{e}; not a readable run manifest: remove it to start the run over") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("stages"), dict):
        raise BisentError(f"{path}: not a readable run manifest; remove it to start the run over")
    if manifest.get("format") != FORMAT:
        raise BisentError(f"{path}: a run of another format is in this folder; use a new folder")
    return manifest


def _write_manifest(run_dir: Path, manifest: dict) -> None:
    write_json(run_dir / MANIFEST, manifest)


def _hash_files(paths, run_dir: Path) -> dict:
    out = {}
    for p in paths:
        p = Path(p)
        key = str(p.relative_to(run_dir)) if p.is_relative_to(run_dir) else str(p)
        out[key] = file_sha256(p) if p.is_file() else None
    return out


def _clear(stage: Stage, run_dir: Path) -> None:
    """Remove a stage's outputs, and its folder when it has one (partial work of other inputs); a folder or link
    bisent did not make is refused, never removed."""
    for out in stage.outputs:
        parts = Path(out).parts
        target = run_dir / parts[0]
        if len(parts) > 1:
            remove_state_dir(target)
        elif target.is_symlink():
            raise BisentError(f"{target}: is a symbolic link; bisent will not replace a link in its run folder")
        elif target.is_file():
            target.unlink()


def load_run_config(path, overrides=None) -> tuple[dict, Path]:
    """The run YAML (a path, or an installed recipe's name such as ``run-default``; checked: languages, known
    sections) with ``overrides`` set (``{"align.encoder": "me5-small"}``, :func:`bisent.recipes.set_keys`), and
    the folder its relative paths start from: the file's, or the current folder for an installed recipe."""
    path = resolve(path)
    config = read_yaml(path)
    if not isinstance(config, dict):
        raise BisentError(f"{path}: expected a mapping with src_lang, tgt_lang, documents, align, filter")
    if overrides:
        config = set_keys(config, overrides, str(path))
    for key in ("src_lang", "tgt_lang"):
        if not isinstance(config.get(key), str) or not config[key]:
            raise BisentError(f"{path}: {key} is required (a language code)")
        try:
            check_bcp47(config[key])
        except ValueError as e:
            raise BisentError(f"{path}: {key}: {e}") from None
    unknown = set(config) - {"src_lang", "tgt_lang", "run_dir"} - set(STAGES)
    if unknown:
        shown = ", ".join(shown_key(k) for k in sorted(map(str, unknown)))
        raise BisentError(f"{path}: unknown section(s) {shown} (known: "
                          f"src_lang, tgt_lang, run_dir, {', '.join(STAGES)})")
    for name in STAGES:
        check_section(config, name, path)
    return config, Path.cwd() if is_installed(path) else path.parent


def check_section(config: dict, name: str, path) -> None:
    """The keys and values of a stage's section, before anything runs: an unknown key, a value of the wrong
    kind, out of range, ``nan`` or ``inf`` is a one-line error naming the file and the key."""
    from .align.aligner import OPTIONS, check_options
    from .documents import SEGMENTATIONS
    from .mining.scoring import KINDS
    from .values import config_bool, config_number

    sec = config.get(name)
    if sec is None:
        return
    if not isinstance(sec, dict):
        raise BisentError(f"{path}: {name}: expected a mapping of settings, got {type(sec).__name__}")
    known = {"documents": ("pairs", "collections", "segmentation", "encoder", "k", "score", "threshold", "min_cosine"),
             "align": ("encoder", "jobs", "split", "precision", *OPTIONS), "filter": ("config",)}.get(name, ())
    extra = sorted(set(sec) - set(known))
    if extra:
        raise BisentError(f"{path}: {name}: unknown key '{extra[0]}' (known: {', '.join(known) or 'none'})")
    where = f"{path}: {name}"
    for key in ("pairs", "encoder"):
        if sec.get(key) is not None and not isinstance(sec[key], str):
            raise BisentError(f"{where}: '{key}' must be a string, got {sec[key]!r}")
    if name == "documents":
        if "k" in sec:
            config_number(where, "k", sec["k"], low=1, high=1000, integer=True)
        for key in ("threshold", "min_cosine"):
            if sec.get(key) is not None:
                config_number(where, key, sec[key])
        for key, choices in (("score", KINDS), ("segmentation", SEGMENTATIONS)):
            if key in sec and sec[key] not in choices:
                raise BisentError(f"{where}: '{key}' must be one of {', '.join(choices)}, got {sec[key]!r}")
    elif name == "align":
        check_options({k: v for k, v in sec.items() if k in OPTIONS}, where)
        if "jobs" in sec:
            config_number(where, "jobs", sec["jobs"], low=1, high=256, integer=True)
        if "split" in sec:
            config_bool(where, "split", sec["split"])
        if sec.get("precision") is not None:
            config_number(where, "precision", sec["precision"], low=0, high=1)
            if sec.get("encoder") == "gale-church":
                raise BisentError(f"{where}: 'precision' needs an encoder: Gale-Church scores are no cosines and "
                                  "cannot be calibrated")


def run_pipeline(config_path, run_dir=None, *, echo=click.echo, progress: bool | None = None, force: bool = False,
                 overrides=None) -> dict:
    """Run (or continue) every stage of the configuration, with ``overrides`` set; return the final summary."""
    config, base = load_run_config(config_path, overrides)
    if run_dir is None:
        if not config.get("run_dir"):
            raise BisentError(f"{config_path}: give the run folder (-o RUN_DIR, or run_dir in the YAML)")
        run_dir = base / config["run_dir"]
    run_dir = StateDir(run_dir, "run").adopt()   # a user's folder is refused: stages remove files inside it
    ctx = RunContext(config, run_dir, base, echo, progress)
    manifest = read_manifest(run_dir)
    earlier_outputs: list[Path] = []
    redo = force
    for k, stage in enumerate(STAGES.values(), 1):
        section = {key: config.get(key) for key in ("src_lang", "tgt_lang", stage.name)}
        inputs = _hash_files(list(stage.inputs(ctx)) + earlier_outputs, run_dir)
        key = hashlib.sha256(json.dumps([section, inputs], sort_keys=True, default=str).encode()).hexdigest()
        outputs = [run_dir / o for o in stage.outputs]
        done = manifest["stages"].get(stage.name)
        if (not redo and done and done.get("status") == "done" and done.get("input_hash") == key
                and done.get("outputs") == _hash_files(outputs, run_dir)):
            echo(f"[{k}/{len(STAGES)}] {stage.name}: done before, skipped")
        else:
            redo = True   # every later stage is redone too
            if not done or done.get("input_hash") != key:
                _clear(stage, run_dir)   # inputs changed (or never started): no partial work to continue
            for sub in sorted({Path(o).parts[0] for o in stage.outputs if len(Path(o).parts) > 1}):
                StateDir(run_dir / sub, f"run {stage.name}").adopt()   # kept when resumed, refused if not bisent's
            # marked as started with this input hash: a killed run continues inside the stage
            manifest["stages"][stage.name] = {"input_hash": key, "status": "running"}
            _write_manifest(run_dir, manifest)
            echo(f"[{k}/{len(STAGES)}] {stage.name} ...")
            t0 = time.perf_counter()
            summary = stage.fn(ctx)
            manifest["stages"][stage.name] = {"input_hash": key, "status": "done",
                                              "outputs": _hash_files(outputs, run_dir),
                                              "summary": summary, "seconds": round(time.perf_counter() - t0, 2)}
            _write_manifest(run_dir, manifest)
            echo(f"[{k}/{len(STAGES)}] {stage.name}: {json.dumps(summary)}")
        earlier_outputs += outputs
        if os.environ.get("BISENT_RUN_PAUSE_AFTER") == stage.name:
            (run_dir / f".paused-{stage.name}").touch()
            time.sleep(3600)
    return json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))


def report_run(config_path, run_dir, out_path, overrides=None) -> str:
    """The HTML report of a ``bisent run`` folder: its documents, alignment and filter stages on one page.

    The filter stage is scored and calibrated as ``bisent filter --report`` does
    (its record ``filter/kept.tsv.report.json`` is written), the align stage
    is calibrated as ``bisent align --report`` does; the documents
    stage shows scores and counts only (its document embeddings are not kept,
    so it has no calibration here: ``bisent documents mine --report`` has one).
    """
    from .report import record as rec_mod
    from .report.html import render
    from .report.runs import align_run_record, finish_filter

    config, base = load_run_config(config_path, overrides)
    run_dir = Path(run_dir) if run_dir is not None else base / config["run_dir"]   # as run_pipeline resolves it
    ctx = RunContext(config, run_dir, base, progress=False)
    records = []
    matches = run_dir / "documents" / "matches.tsv"
    if matches.is_file() and matches.stat().st_size:
        records.append(("documents", rec_mod.docs_record(matches, params=dict(ctx.section("documents")),
                                                         threshold=doc_settings(ctx.section("documents"))[0])))
    aligned = sorted((run_dir / "align").glob("*.tsv")) if (run_dir / "align").is_dir() else []
    if aligned:
        sec = dict(ctx.section("align"))
        records.append(("align", align_run_record(aligned, str(sec.get("encoder", "use-m3")), ctx.src_lang,
                                                  ctx.tgt_lang, params=sec)))
    summary_path = run_dir / "filter" / "summary.json"
    if summary_path.is_file():
        summary = read_json(summary_path)
        out = finish_filter(run_dir / "candidates.tsv", run_dir / "filter" / "kept.tsv",
                            run_dir / "filter" / "rejected.tsv",
                            summary, _filter_config(ctx), ctx.src_lang, ctx.tgt_lang)
        records.append(("filter", read_json(out["record"])))
    return str(render(records, out_path, title=f"bisent run: {run_dir.name}"))
