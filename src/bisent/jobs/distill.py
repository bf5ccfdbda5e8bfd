"""``bisent distill``: a fast student of a teacher encoder, distilled on the user's own text, with its quality.

:func:`distill` draws a sample of the input files (stratified by language and file, part of each language held
out; :mod:`bisent.distill.sample`), embeds it with the teacher (through its persistent embedding cache, so a
killed teacher pass resumes where it stopped), trains the ``distill-dan`` recipe on it with the one training loop
(:func:`bisent.training.loop.train`; its checkpoints make a killed run resume to the same model) and measures the
student against its teacher on the held-out sentences (:mod:`bisent.distill.quality`). The output folder is a
model directory (``-e DIR`` in every command) holding ``distill.json`` and ``distill.html`` beside the weights.

:func:`fast_student` is the student ``bisent mine --fast`` mines with: distilled on the two inputs and kept
beside the output, reused while the inputs are the same.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from ..encoders import REGISTRY, get_encoder
from ..errors import BisentError
from ..io import atomic_write, is_stdio
from ..langcodes import normalise_lang, supported

DEFAULT_TEACHER = "use-m3"
#: sentences drawn, all languages together: about the 36,000 verses + 11,500 fortunes of the measured Bible student
DEFAULT_SAMPLE = 50_000
#: held-out sentences per language (at most a tenth of the language's sample): the quality figures' queries
DEFAULT_HELDOUT = 1000
#: training steps: of 500 and 1,000, the lower mean dev error over UI messages en-zh_CN, en-ru and the Bible en-es
#: (benchmarks/README.md, "Distilling on your own text")
DEFAULT_STEPS = 500
RECIPE = "distill-dan"
#: recipe keys set on top of distill-dan: character 1-2-grams of CJK tokens, Latin spelling of Cyrillic ones
#: (both measured on the general student: Chinese UI 36.7 -> 6.7 %, Russian words 31.8 -> 26.5 %); float16 weights
#: (half the directory, the same errors there)
RECIPE_SET = {"model.cjk_n_min": 1, "model.translit": True, "train.half_weights": True, "train.max_minutes": None}
SUMMARY_FILE = "distill.json"
REPORT_FILE = "distill.html"
SAMPLE_DIR = "sample"
CHECKPOINT = "checkpoint.safetensors"


def _say(message: str) -> None:
    print(f"bisent distill: {message}", file=sys.stderr, flush=True)


def check_languages(langs: list[str], teacher: str):
    """The teacher encoder, after one-line errors for inputs in one language only or a language it lacks
    (naming the registered encoders that cover it)."""
    if len(set(langs)) < 2:
        raise BisentError(f"all inputs are in one language ({langs[0]}): a student for mining two languages needs "
                          "text in at least two (give each file's language with -l, one per file)")
    enc = get_encoder(teacher)
    for lang in dict.fromkeys(langs):
        if not supported(lang, enc.languages):
            cover = [n for n, r in REGISTRY.items() if n != teacher and r.languages is not None
                     and supported(lang, r.languages)]
            hint = f"encoders that cover it: {', '.join(cover)}" if cover else "no registered encoder covers it"
            raise BisentError(f"teacher {enc.name} does not know '{lang}'; {hint} (-e NAME, or a model directory)")
    return enc


def _open_folder(out: Path, files: list, settings: dict, replace: bool) -> dict | None:
    """Make or adopt ``out`` (a state folder whose fingerprint is every input's bytes and language and every
    setting); the finished summary when it holds this very distillation (nothing to do). A folder of another
    distillation is refused, or emptied and started afresh with ``replace`` or when it stopped before its
    sample was drawn (a bad input)."""
    from ..state import StateDir

    store = StateDir(out, "distill", what="a distillation", remedy="choose another -o (or remove that folder)")
    inputs = {f"input {i + 1}": {"lang": s[0].lang, "blake2b": s[0].digest,
                                 **({"line_languages": len(s)} if s[0].stratum else {})} for i, s in enumerate(files)}
    drawn = (out / SAMPLE_DIR / "sample.json").is_file()
    try:
        resumed = store.open(inputs=inputs, settings=settings, restart=not drawn)
    except BisentError:
        if not replace:
            raise
        resumed = store.open(inputs=inputs, settings=settings, restart=True)
    done = out / SUMMARY_FILE
    return json.loads(done.read_text(encoding="utf-8")) if resumed and done.is_file() else None


def _sample(out: Path, sources, total: int, heldout: int, seed: int) -> tuple[dict, dict, dict, dict]:
    """``(train, held out, held-out line languages, report)``: lang -> sentences (and, for a language whose files
    came with a language file, lang -> the line language of each held-out sentence), read back from the sample
    folder or drawn and written there."""
    from ..distill.sample import draw, read_sources, split_heldout

    folder, manifest = out / SAMPLE_DIR, out / SAMPLE_DIR / "sample.json"
    if manifest.is_file():
        report = json.loads(manifest.read_text(encoding="utf-8"))
        read = {part: {lang: (folder / f"{part}.{lang}.txt").read_text(encoding="utf-8").split("\n")[:-1]
                       for lang in report["languages"]} for part in ("train", "heldout")}
        strata = {lang: (folder / f"heldout.{lang}.lang").read_text(encoding="utf-8").split("\n")[:-1]
                  for lang in report.get("line_languages", {})}
        return read["train"], read["heldout"], strata, report
    usable = sum(len(s.lines) for s in sources)
    if total >= usable:
        _say(f"the sample ({total:,} sentences) is not smaller than the input ({usable:,} usable lines): all of "
             "it is used")
    by_lang: dict[str, dict[str | None, list[str]]] = {}       # lang -> line language (None: the file's) -> text
    for src, sents in zip(sources, read_sources(sources, draw(sources, total, seed))):
        by_lang.setdefault(src.lang, {}).setdefault(src.stratum, []).extend(sents)
    train, held, strata, counts = {}, {}, {}, {}
    for lang, groups in by_lang.items():
        seen: set[str] = set()
        train[lang], held[lang], of_held = [], [], []
        for stratum, sents in groups.items():             # a sentence in two line languages counts in the first
            uniq = [x for x in dict.fromkeys(sents) if x not in seen]
            seen.update(uniq)
            tr, he = split_heldout(uniq, heldout, seed)
            train[lang] += tr
            held[lang] += he
            of_held += [stratum or lang] * len(he)        # a file of the language without a language file
            if stratum is not None:
                counts.setdefault(lang, {})[stratum] = {"train": len(tr), "held_out": len(he)}
        if lang in counts:
            strata[lang] = of_held
        if not train[lang] or not held[lang]:
            raise BisentError(f"the {lang} input has {len(seen)} distinct sentence(s): too few to train on "
                              "and hold some out (give at least two)")
    report = {"languages": list(by_lang), "asked": total, "usable_lines": usable, "all_used": total >= usable,
              "drawn": {lang: sum(map(len, g.values())) for lang, g in by_lang.items()},
              "train": {lang: len(v) for lang, v in train.items()},
              "held_out": {lang: len(v) for lang, v in held.items()},
              **({"line_languages": counts} if counts else {})}
    _write_sample(folder, train, held, strata, report)
    return train, held, strata, report


def _write_sample(folder: Path, train: dict, held: dict, strata: dict, report: dict) -> None:
    """The sample's files (``heldout.LANG.lang``: the line language of each held-out sentence, for a language
    given a language file), then its manifest (last: a sample without one is drawn again)."""
    folder.mkdir(exist_ok=True)
    for part, data in (("train", train), ("heldout", held)):
        for lang, sents in data.items():
            with atomic_write(folder / f"{part}.{lang}.txt") as f:
                f.write("".join(s + "\n" for s in sents))
    for lang, codes in strata.items():
        with atomic_write(folder / f"heldout.{lang}.lang") as f:
            f.write("".join(c + "\n" for c in codes))
    with atomic_write(folder / "sample.json") as f:
        json.dump(report, f, indent=1)


def _teacher_pass(teacher: str, train: dict, held: dict, progress) -> tuple[dict, float]:
    """The teacher's unit rows of the held-out sentences (lang -> ``(n, D)``) and the seconds spent; the
    training sentences' rows go into the teacher's cache, where the training run reads them."""
    from ..training.teacher import teacher_embeddings

    t0, rows = time.monotonic(), {}
    for lang in train:
        teacher_embeddings(teacher, train[lang], lang, progress=progress)
        rows[lang] = teacher_embeddings(teacher, held[lang], lang, progress=progress)[0]
    return rows, time.monotonic() - t0


def _train(out: Path, train: dict, teacher: str, steps: int, seed: int, overrides: dict, progress) -> dict:
    """Train the student (resuming a killed run from its checkpoint); the checkpoint is removed once done."""
    from ..training.data import Monotext
    from ..training.loop import train as run_training
    from ..training.recipe import load_recipe

    trained = out / "trained.json"
    if trained.is_file():
        return json.loads(trained.read_text(encoding="utf-8"))
    recipe = load_recipe(RECIPE, {**RECIPE_SET, "objectives.teacher": teacher, "train.max_steps": steps,
                                  "seed": seed, "train.checkpoint_every": max(1, min(100, steps // 10)), **overrides})
    monos = [Monotext(lang, sents, f"{SAMPLE_DIR}/train.{lang}.txt") for lang, sents in train.items()]
    t0 = time.monotonic()
    result = run_training(recipe, [], monos, [], out, resume=(out / CHECKPOINT).is_file(), progress=progress)
    last = next((r for r in reversed(result.log) if "loss" in r), {})
    info = {"recipe": RECIPE, "set": {k: v for k, v in {**RECIPE_SET, **overrides}.items() if v is not None},
            "steps": result.step,
            "loss": last.get("loss"), "seconds": round(time.monotonic() - t0, 1)}
    with atomic_write(trained) as f:
        json.dump(info, f, indent=1)
    (out / CHECKPOINT).unlink(missing_ok=True)          # the weights are written; the optimiser state is not needed
    return info


def _gold(specs, student, teacher) -> list[dict]:
    """Both encoders' recovery error on each ``[SRC-TGT=]PAIRS.tsv`` of gold pairs."""
    from ..distill.quality import gold_errors
    from ..training.data import resolve_bitext

    out = []
    for spec in specs:
        bt = resolve_bitext(spec)
        src, tgt = [p[0] for p in bt.pairs], [p[1] for p in bt.pairs]
        vecs = {e.name: (e.encode(src, bt.src_lang), e.encode(tgt, bt.tgt_lang)) for e in (student, teacher)}
        out.append({**gold_errors(f"{bt.src_lang}-{bt.tgt_lang} {bt.source}", vecs[student.name],
                                  vecs[teacher.name]), "langs": [bt.src_lang, bt.tgt_lang]})
    return out


def _quality(out: Path, held: dict, strata: dict, teacher_rows: dict, teacher: str, gold) -> dict:
    """The no-gold figures on the held-out sentences (per line language too where ``strata`` gives them), the
    student's speed on them, and the gold figures if any."""
    from ..distill.quality import by_line_language, no_gold_report
    from ..encoders.trained import load_model_dir

    student = load_model_dir(out)
    t0, n = time.perf_counter(), sum(map(len, held.values()))
    rows = {lang: student.encode(sents, lang, cache=False) for lang, sents in held.items()}
    speed = n / max(time.perf_counter() - t0, 1e-9)
    return {**no_gold_report(rows, teacher_rows),
            **({"by_line_language": by_line_language(rows, teacher_rows, strata)} if strata else {}),
            "student_sentences_per_s": round(speed),
            "gold": _gold(gold, student, get_encoder(teacher)) if gold else []}


def _summary_line(q: dict, teacher: str) -> str:
    lowest = q["lowest_agreement"]
    dirs = "; ".join(f"{k} {v['agreement']:.1%} [{v['interval'][0]:.1%}, {v['interval'][1]:.1%}]"
                     for p in q["pairs"] for k, v in p.items() if isinstance(v, dict))
    bar = q["agreement_bar"]
    verdict = ("above" if lowest["agreement"] >= bar else "below") + f" the bar of {bar:.0%}"
    return (f"top-1 agreement with {teacher} on held-out text (95 % interval): {dirs}; lowest "
            f"{lowest['direction']} {lowest['agreement']:.1%}, {verdict} (see distill.html)")


def _line_languages(files: list[str], langs: list[str], specs) -> dict[int, str]:
    """``INPUT=LANGS`` specs -> {index of the input file: its language file}; INPUT is a file's position (1 is
    the first) or its language code when only one file has it."""
    out: dict[int, str] = {}
    for spec in specs or ():
        key, eq, path = str(spec).partition("=")
        owners = [i for i, lang in enumerate(langs) if lang == normalise_lang(key)] if key and not key.isdigit() else []
        i = int(key) - 1 if key.isdigit() else (owners[0] if len(owners) == 1 else -1)
        if not eq or not path or not 0 <= i < len(files):
            raise BisentError(f"--lang-file {spec}: expected INPUT=LANGS, INPUT the position of an input file (1 to "
                              f"{len(files)}) or the language code of exactly one of them")
        if i in out:
            raise BisentError(f"--lang-file {spec}: input {i + 1} ({files[i]}) has a language file already")
        out[i] = path
    return out


def distill(files, langs, output, *, teacher: str = DEFAULT_TEACHER, sample: int = DEFAULT_SAMPLE,
            heldout: int = DEFAULT_HELDOUT, steps: int = DEFAULT_STEPS, seed: int = 1, gold=(),
            overrides: dict | None = None, progress: bool | None = None, replace: bool = False,
            lang_files=()) -> dict:
    """Distil a student of ``teacher`` on ``files`` (``langs``: one language per file) into the model directory
    ``output``; returns the summary also written to ``output/distill.json`` (and ``distill.html``).

    Killed at any point, the same call resumes (the teacher's rows from its cache, training from its last
    checkpoint) to the same model; called again when finished, it returns the summary and does nothing.
    ``overrides``: more keys of the recipe (``{"model.buckets": 65536}``). ``replace``: a folder holding a
    distillation of other inputs is replaced instead of refused. ``lang_files``: ``INPUT=LANGS`` specs giving a
    file of many languages the language of each line (:func:`bisent.distill.sample.split_by_language`): its
    sample is stratified by them and the report gives the agreement per line language.
    """
    from ..distill.sample import scan, split_by_language
    from ..report.distill import write_report

    files, langs = [str(f) for f in files], [normalise_lang(lang) for lang in langs]
    if len(files) != len(langs):
        raise BisentError(f"give one language per input file: {len(files)} file(s), {len(langs)} language(s)")
    t0, out = time.monotonic(), Path(output)
    enc = check_languages(langs, teacher)
    line_langs = _line_languages(files, langs, lang_files)
    per_file = [[scan(f, lang)] for f, lang in zip(files, langs)]
    for i, path in line_langs.items():
        per_file[i] = split_by_language(per_file[i][0], path)
        lacks = [(s.stratum, len(s.lines)) for s in per_file[i] if not supported(s.stratum, enc.languages)]
        if lacks:
            _say(f"{path}: teacher {enc.name} does not list {len(lacks)} of its {len(per_file[i])} languages ("
                 + ", ".join(f"{lang} {n:,} lines" for lang, n in lacks[:8]) + (", ..." if len(lacks) > 8 else "")
                 + f"); they are embedded as {langs[i]} like the rest of {files[i]}, and their figures say how "
                 "closely the student follows the teacher there, not how well either does")
    sources = [s for group in per_file for s in group]
    settings = {"teacher": enc.id, "sample": sample, "heldout": heldout, "steps": steps, "seed": seed,
                "recipe": RECIPE, "set": {**RECIPE_SET, **(overrides or {})}, "gold": sorted(map(str, gold))}
    done = _open_folder(out, per_file, settings, replace)
    if done is not None:
        _say(f"{out} holds this distillation already (the same inputs and settings): reused")
        return done
    train, held, strata, sample_report = _sample(out, sources, sample, heldout, seed)
    teacher_rows, teacher_s = _teacher_pass(teacher, train, held, progress)
    training = _train(out, train, teacher, steps, seed, overrides or {}, progress)
    quality = _quality(out, held, strata, teacher_rows, teacher, gold)
    summary = {"model_dir": str(out), "teacher": enc.name, "inputs": [
        {"file": g[0].path, "lang": g[0].lang, "usable_lines": sum(len(s.lines) for s in g),
         "skipped_lines": sum(s.skipped for s in g),
         **({"lang_file": line_langs[i], "line_languages": len(g)} if i in line_langs else {})}
        for i, g in enumerate(per_file)],
        "sample": sample_report, "teacher_seconds": round(teacher_s, 1), "training": training, "quality": quality,
        "seconds": round(time.monotonic() - t0, 1)}
    write_report(summary, out / REPORT_FILE)
    with atomic_write(out / SUMMARY_FILE) as f:
        json.dump(summary, f, indent=1, ensure_ascii=False)
    _say(_summary_line(quality, enc.name))
    return summary


def fast_student(src, tgt, src_lang: str, tgt_lang: str, output, *, teacher: str = DEFAULT_TEACHER,
                 vectors=None, progress: bool | None = None) -> str:
    """The model directory ``OUTPUT.student`` of a student of ``teacher`` distilled on ``src`` and ``tgt``
    (:func:`distill` with its defaults), made if missing or made for other inputs, reused otherwise."""
    if vectors:
        raise BisentError("--fast distils an encoder to embed SRC and TGT with; drop --src-vectors / --tgt-vectors")
    if is_stdio(output):
        raise BisentError("--fast keeps its student beside the output (OUTPUT.student): give -o FILE, not -o -")
    for path in (src, tgt):
        if not Path(path).is_file():
            raise BisentError(f"--fast: {path}: distilling reads the input twice; give a regular file")
    folder = f"{output}.student"
    _say(f"--fast: mining with a student of {teacher} distilled on {src} and {tgt}, kept in {folder} (reused "
         "while the inputs are the same)")
    distill([src, tgt], [src_lang, tgt_lang], folder, teacher=teacher, sample=DEFAULT_SAMPLE, heldout=DEFAULT_HELDOUT,
            steps=DEFAULT_STEPS, progress=progress, replace=True)
    return folder


__all__ = ["distill", "fast_student", "check_languages", "DEFAULT_SAMPLE", "DEFAULT_STEPS", "DEFAULT_HELDOUT",
           "DEFAULT_TEACHER"]
