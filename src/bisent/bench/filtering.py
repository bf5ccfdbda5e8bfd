"""Filtering benchmark: held-out clean pairs mixed with realistic noise, ranked by a scorer or a pipeline.

Figures: average precision (AP) of ranking the clean pairs first, and per
noise kind the share ranked above the median clean pair (what would leak
through a filter that keeps the better half); for each pipeline variant also
its decisions: ``clean_lost`` (% of clean pairs rejected) and ``kept`` (% of
each noise kind kept). Per encoder, on the same items:

- each scorer alone: cosine, CSLS and the ratio margin, the noisy set itself
  as background (a fixed bitext needs no comparable corpus for margin scores);
- the default pipeline (the ``filter-default`` recipe: rules, language id,
  an embedding score, here with this encoder), ranked by
  :func:`bisent.filtering.rank_scores` (kept pairs first, rejected pairs by
  how far they got, each tier by the score);
- Kim et al. (2019)'s MLP similarity trained on TRAIN documents with each
  negative strategy (random, sample, worst:20…100, synthetic; input [a; b],
  and [a; b; |a−b|; a∗b] with synthetic negatives), alone (``scorer:
  mlp:<negatives>``) and in place of the default pipeline's embedding step
  (``pipeline+mlp:<negatives>``).

Also: the language identifier on the third-language noise (share caught)
and its speed, and per encoder the default pipeline end to end over a file
(:func:`filter_file`) with cached embeddings, beside the encoder's own
embedding time. Timing keys end in ``seconds`` (with the counts beside them),
so every other figure repeats exactly from run to run.

Training data (deterministic): TRAIN documents are shuffled by seed; whole
documents give ``train_pairs`` clean positives (in page order, so synthetic
"neighbour"/"glued" noise uses real neighbours); the other TRAIN documents
give a noisy corpus of ``noisy_pairs`` items (half clean, half the six noise
kinds, :func:`make_noisy_set`) for the sample and worst:X strategies.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from ..datasets.libreoffice import load_pairs
from ..datasets.noise import NOISE_KINDS, make_noisy_set
from ..errors import BisentError
from ..evaluate import average_precision
from ..mining.scoring import Scorer
from ..recipes import HERE as RECIPES
from .common import Recorder

SCORES = ("cosine", "csls", "ratio")
MLP_STRATEGIES = ("random", "sample", "worst:20", "worst:40", "worst:60", "worst:80", "worst:100", "synthetic")
#: (negatives, network input) of each MLP trained: the paper's [a; b] with every strategy, plus
#: [a; b; |a-b|; a*b] with synthetic negatives
MLP_RUNS = tuple((s, "concat") for s in MLP_STRATEGIES) + (("synthetic", "concat-diff-prod"),)
#: below this many test items (``limit``) the MLPs are trained in quick mode (tests)
QUICK_BELOW = 1000
DEFAULT_CONFIG = RECIPES / "filter-default.yaml"


def third_language(src_lang: str, tgt_lang: str) -> str:
    """The language whose help gives the 'translation into a third language' noise."""
    return next(lang for lang in ("fr", "de", "es", "it") if lang not in (src_lang, tgt_lang))


def build_set(src_lang: str, tgt_lang: str, *, limit: int | None = 4000, split: str = "test", seed: int = 0):
    """The labelled noisy set of a split, and the third language used."""
    third = third_language(src_lang, tgt_lang)
    pairs = load_pairs(src_lang, tgt_lang, split=split)
    third_map = {(p.doc, p.pid): p.tgt for p in load_pairs(src_lang, third, split=split)}
    return make_noisy_set(pairs, third_map, seed=seed, limit=limit), third


def build_training(src_lang: str, tgt_lang: str, *, train_pairs: int = 2000, noisy_pairs: int = 6000,
                   clean_share: float = 0.5, seed: int = 0) -> tuple[list, list, dict]:
    """(clean positives in page order, noisy corpus of LabelledPair, third-language map) from TRAIN documents."""
    third = third_language(src_lang, tgt_lang)
    pairs = load_pairs(src_lang, tgt_lang, split="train")
    third_map = {(p.doc, p.pid): p.tgt for p in load_pairs(src_lang, third, split="train")}
    by_doc: dict[str, list] = defaultdict(list)
    for p in pairs:
        by_doc[p.doc].append(p)
    docs = sorted(by_doc)
    random.Random(seed).shuffle(docs)
    clean: list = []
    used = set()
    for d in docs:
        if len(clean) >= train_pairs:
            break
        clean.extend(by_doc[d])
        used.add(d)
    clean = clean[:train_pairs]
    rest = [p for p in pairs if p.doc not in used]
    noisy = make_noisy_set(rest, third_map, clean_share=clean_share, seed=seed, limit=noisy_pairs)
    return clean, noisy, third_map


def leak_rates(scores: np.ndarray, kinds: list[str]) -> dict[str, float]:
    """Per noise kind: share of its pairs scoring above the median clean pair."""
    kinds_a = np.array(kinds)
    median_clean = float(np.median(scores[kinds_a == "clean"]))
    return {k: round(100 * float(np.mean(scores[kinds_a == k] > median_clean)), 2)
            for k in NOISE_KINDS if (kinds_a == k).any()}


def evaluate_scores(scores: np.ndarray, kinds: list[str]) -> dict:
    clean = np.array([k == "clean" for k in kinds])
    return {"ap": round(100 * average_precision(scores, clean), 2), "above_median_clean": leak_rates(scores, kinds)}


def default_config(config=None):
    """The default pipeline's YAML path (the installed ``filter-default`` recipe) or ``config``."""
    path = Path(config) if config is not None else DEFAULT_CONFIG
    if not path.is_file():
        raise BisentError(f"{path}: filter pipeline not found (pass config=PATH)")
    return path


def kept_shares(results, kinds: list[str]) -> dict:
    """What a pipeline's decisions keep: ``clean_lost`` (% of clean pairs rejected) and ``kept`` (% of each
    noise kind kept), the figures a filter is chosen by beside the ranking's AP."""
    kinds_a = np.array(kinds)
    kept = np.array([r.kept for r in results])
    clean = kinds_a == "clean"
    return {"clean_lost": round(100 * float(1 - kept[clean].mean()), 2) if clean.any() else None,
            "kept": {k: round(100 * float(kept[kinds_a == k].mean()), 2) for k in NOISE_KINDS if (kinds_a == k).any()}}


def _rejections(results, kinds: list[str]) -> dict[str, dict[str, int]]:
    """Per kind: how many pairs each step rejected (kept pairs under 'kept')."""
    out: dict[str, Counter] = defaultdict(Counter)
    for r, kind in zip(results, kinds):
        out[kind][r.reason or "kept"] += 1
    return {k: dict(sorted(out[k].items())) for k in ("clean",) + NOISE_KINDS if k in out}


def run(src_lang: str, tgt_lang: str, encoders: list, record: Recorder, *, limit: int | None = 4000, k: int = 4,
        train_pairs: int = 2000, noisy_pairs: int = 6000, noisy_clean_share: float = 0.5, mlp_runs=MLP_RUNS,
        config=None, split: str = "test", progress: bool | None = None) -> list[dict]:
    """Run the filter benchmark for one language pair; return the records (also passed to ``record``).

    ``split``: the documents the noisy set is built from (``dev`` where settings are chosen, ``test``
    for the figures reported); the MLPs always train on TRAIN documents.

    ``limit`` caps the test items and the training sizes (positives at most
    ``limit``, noisy corpus at most 3 × ``limit``). Below :data:`QUICK_BELOW`
    items the MLPs are small and briefly trained (a quick check, not a figure):
    2 × 64 hidden units, ``limit // 8`` updates (at least 20).
    """
    from ..filtering import FilterPipeline, edit_config, rank_scores
    from ..filtering.mlp import Embedder, train_scorer

    config_path = default_config(config)
    items, third = build_set(src_lang, tgt_lang, limit=limit, split=split)
    kinds = [it.kind for it in items]
    pairs = [(it.src, it.tgt) for it in items]
    counts = {kind: kinds.count(kind) for kind in ("clean",) + NOISE_KINDS}
    mlp_hp: dict = {"hidden": (512, 512), "max_updates": 1000}   # the paper's MLP
    if limit:
        train_pairs, noisy_pairs = min(train_pairs, limit), min(noisy_pairs, 3 * limit)
        if limit < QUICK_BELOW:
            mlp_hp = {"hidden": (64, 64), "max_updates": max(20, limit // 8)}
    clean_train, noisy_train, third_train = build_training(
        src_lang, tgt_lang, train_pairs=train_pairs, noisy_pairs=noisy_pairs,
        clean_share=noisy_clean_share) if mlp_runs else ([], [], {})
    noisy_kind = {(it.src, it.tgt): it.kind for it in noisy_train}
    base = {"pair": f"{src_lang}-{tgt_lang}", "split": split, "third_language": third, "counts": counts}
    out = []
    for enc in encoders:
        who = {**base, "encoder": enc.name, "encoder_id": enc.id}
        x = enc.encode([it.src for it in items], src_lang, progress=progress)
        # the target side holds third-language text and source copies: embed it as the target language
        y = enc.encode([it.tgt for it in items], tgt_lang, progress=progress)
        for kind in SCORES:
            scores = Scorer(kind, k).fit(y, sources=x).score_pairs(x, y)
            out.append(record({**who, "scorer": kind, "k": k, **evaluate_scores(scores, kinds)}))

        pipe = FilterPipeline.from_config(edit_config(config_path, encoder=enc.name), src_lang=src_lang,
                                          tgt_lang=tgt_lang, source=str(config_path))
        ranks, results = rank_scores(pipe, pairs, return_results=True)
        out.append(record({**who, "scorer": "pipeline", "config": config_path.name, **evaluate_scores(ranks, kinds),
                           **kept_shares(results, kinds), "rejected_by": _rejections(results, kinds)}))

        embedder = Embedder(enc)
        with tempfile.TemporaryDirectory(prefix="bisent-mlp-") as tmp:
            for strategy, features in mlp_runs:
                model_dir = str(Path(tmp) / f"{strategy.replace(':', '-')}-{features}")
                scorer = train_scorer([(p.src, p.tgt) for p in clean_train], src_lang, tgt_lang, encoder=enc.name,
                                      negatives=strategy, noisy=[(it.src, it.tgt) for it in noisy_train],
                                      docs=[p.doc for p in clean_train],
                                      third=[third_train.get((p.doc, p.pid)) for p in clean_train],
                                      out_dir=model_dir, progress=progress, embedder=embedder, features=features,
                                      **mlp_hp)
                alone = evaluate_scores(scorer.score(x, y), kinds)
                mlp_config = edit_config(config_path, embedding_step={"name": "mlp", "type": "mlp", "model": model_dir})
                mlp_pipe, mlp_results = rank_scores(mlp_config, pairs, src_lang=src_lang, tgt_lang=tgt_lang,
                                                    return_results=True)
                train = dict(scorer.meta["training"])
                neg_kinds = Counter(noisy_kind.get(p, "synthetic" if strategy == "synthetic" else "random")
                                    for p in scorer.negative_pairs_)
                label = f"mlp:{strategy}" + ("" if features == "concat" else f"+{features}")
                mlp_info = {"negatives": strategy, "features": features}
                out.append(record({**who, "scorer": label, **mlp_info, **alone,
                                   "train": {"hidden": list(mlp_hp["hidden"]), "positives": train["positives"],
                                             "negatives": train["negative_pairs"],
                                             "noisy_corpus": train["noisy_pairs"],
                                             "noisy_clean_share": noisy_clean_share, "updates": train["updates"],
                                             "best_epoch": train["best_epoch"], "val_loss": train["val_loss"],
                                             "val_accuracy": train["val_accuracy"],
                                             "negative_kinds": dict(sorted(neg_kinds.items()))},
                                   "train_seconds": train["seconds"]}))
                out.append(record({**who, "scorer": f"pipeline+{label}", "config": config_path.name, **mlp_info,
                                   **evaluate_scores(mlp_pipe, kinds), **kept_shares(mlp_results, kinds)}))

        out.append(record({**who, "scorer": "speed", **_speed(pipe, items, enc, src_lang, tgt_lang)}))
    out.append(record({**base, "scorer": "langid", **_langid(items, tgt_lang)}))
    return out


def _speed(pipe, items, enc, src_lang: str, tgt_lang: str, n_embed: int = 200) -> dict:
    """The pipeline over a file of the items (embeddings cached by now), and the encoder's embedding time."""
    from ..filtering import filter_file

    with tempfile.TemporaryDirectory(prefix="bisent-filter-speed-") as tmp:
        src = Path(tmp) / "pairs.tsv"
        src.write_text("".join(f"{it.src}\t{it.tgt}\n" for it in items), encoding="utf-8")
        t = time.perf_counter()
        summary = filter_file(src, Path(tmp) / "kept.tsv", Path(tmp) / "rejected.tsv", src_lang, tgt_lang, pipe,
                              progress=False)
        pipeline_s = time.perf_counter() - t
    sents = list(dict.fromkeys(it.src for it in items))[:n_embed]
    enc.encode(sents[:4], src_lang, cache=False, progress=False)  # lazy weights loaded
    t = time.perf_counter()
    enc.encode(sents, src_lang, cache=False, progress=False)
    embed_s = time.perf_counter() - t
    return {"pipeline_lines": summary["lines"], "pipeline_kept": summary["kept"],
            "pipeline_seconds": round(pipeline_s, 3), "embed_sentences": len(sents),
            "embed_seconds": round(embed_s, 3)}


def _langid(items, tgt_lang: str) -> dict:
    """lid.176 on the targets: third-language noise caught (not taken for the target language), clean
    targets recognised, and identification time."""
    from ..filtering.langid import identify, normalise_lang

    want = normalise_lang(tgt_lang)
    third = [it.tgt for it in items if it.kind == "third_language"]
    clean = [it.tgt for it in items if it.kind == "clean"]
    texts = [t for it in items for t in (it.src, it.tgt)]
    list(identify(texts[:10]))  # model loaded
    t = time.perf_counter()
    list(identify(texts))
    seconds = time.perf_counter() - t
    caught = sum(lang != want for lang, _ in identify(third))
    right = sum(lang == want for lang, _ in identify(clean))
    return {"third_language_pairs": len(third), "third_language_caught": round(100 * caught / max(1, len(third)), 2),
            "clean_targets_recognised": round(100 * right / max(1, len(clean)), 2),
            "langid_sentences": len(texts), "langid_seconds": round(seconds, 4)}
