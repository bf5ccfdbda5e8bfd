"""Training recipes: YAML files naming an architecture and its hyper-parameters.

A recipe is a plain nested dict (JSON-serialisable, so it goes into
``config.json`` and the checkpoint unchanged). :func:`load_recipe` fills
in defaults and checks every key against :data:`SCHEMA`; a misspelt key, a
wrong type or an unknown choice is a one-line :class:`BisentError` naming the
file and the dotted key, e.g. ``kim.yaml: unknown key 'model.hiden_dim'``.
"""

from __future__ import annotations

import copy
import math
from typing import Any, Iterable, NamedTuple

from ..errors import BisentError
from ..recipes import resolve
from ..safeload import read_yaml, yaml_text

SEQ2SEQ = ("kim2019", "artetxe2019")
#: dual encoders (one encoder for every language; models/dual.py), trained by a dual objective
DUAL = ("dan", "hash-transformer", "bilstm", "adapter")
ARCHITECTURES = SEQ2SEQ + DUAL
#: objectives of the dual encoders (training/objectives/<name>.py)
DUAL_OBJECTIVES = ("guo2019", "distill")


class Field(NamedTuple):
    """One recipe key: default value, accepted type(s), allowed choices, whether null is allowed."""

    default: Any
    type: type | tuple[type, ...]
    choices: tuple | None = None
    nullable: bool = False
    minimum: float | None = None


_NUM = (int, float)

#: Keys shared by every architecture: section -> key -> Field.
COMMON: dict[str, dict[str, Field]] = {
    "tokenizer": {
        "model_type": Field("bpe", str, ("bpe", "unigram")),
        "vocab_size": Field(8000, int, minimum=8),
        "lowercase": Field(True, bool),
        "character_coverage": Field(1.0, _NUM, minimum=0.5),
        "input_sentence_size": Field(1_000_000, int, minimum=0),
    },
    "data": {
        "max_len": Field(60, int, minimum=2),            # subword tokens; longer sentences are truncated
        "batch_size": Field(64, int, minimum=1),         # sentences per step, all objectives together
        "bucket_batches": Field(50, int, minimum=1),     # sort this many batches' worth by length at a time
    },
    "optim": {
        "lr": Field(1e-3, _NUM, minimum=0),
        "betas": Field([0.9, 0.999], list),
        "eps": Field(1e-8, _NUM, minimum=0),
        "weight_decay": Field(0.0, _NUM, minimum=0),
        "clip": Field(1.0, _NUM, nullable=True, minimum=0),  # max global gradient norm
        "warmup_steps": Field(0, int, minimum=0),             # linear warm-up, then constant
    },
    "train": {
        "max_steps": Field(10_000, int, minimum=0),
        "max_minutes": Field(None, _NUM, nullable=True, minimum=0),
        "log_every": Field(50, int, minimum=1),
        "eval_every": Field(500, int, minimum=1),
        "checkpoint_every": Field(1000, int, minimum=1),
        "dev_max": Field(2000, int, minimum=2),          # dev pairs used per language pair
        "device": Field("auto", str, ("auto", "cpu", "cuda")),
        "threads": Field(None, int, nullable=True, minimum=1),  # CPU threads (null: torch's default); 1 on a busy
                                                                # machine
        "keep_freed_memory": Field(True, bool),    # CPU, glibc: freed blocks reused by the next step (training/heap.py)
    },
}

#: Architecture-specific sections.
ARCH: dict[str, dict[str, dict[str, Field]]] = {
    "kim2019": {
        "model": {
            "rnn": Field("gru", str, ("gru", "lstm")),
            "embed_dim": Field(256, int, minimum=1),
            "hidden_dim": Field(256, int, minimum=1),    # per direction; sentence embedding = 2 * hidden_dim
            "layers": Field(1, int, minimum=1),
            "dropout": Field(0.1, _NUM, minimum=0),
            "word_vectors": Field(None, (str, dict), nullable=True),  # path, or {lang: path}
        },
        "objectives": {
            "translation": Field(1.0, _NUM, minimum=0),   # share of each batch (Eq. 7 / Eq. 9)
            "autoencoding": Field(1.0, _NUM, minimum=0),  # share of each batch (Eq. 8 / Eq. 10)
            "direction": Field("src2tgt", str, ("src2tgt", "tgt2src", "both")),
        },
    },
    "artetxe2019": {
        "model": {
            "embed_dim": Field(256, int, minimum=1),
            "hidden_dim": Field(256, int, minimum=1),    # encoder, per direction; embedding = 2 * hidden_dim
            "decoder_dim": Field(512, int, minimum=1),
            "lang_dim": Field(32, int, minimum=1),
            "layers": Field(1, int, minimum=1),
            "dropout": Field(0.1, _NUM, minimum=0),
        },
        "objectives": {
            "both_directions": Field(True, bool),        # train a->b and b->a for every pair a-b in the data
            "autoencoding": Field(0.0, _NUM, minimum=0),  # not in the paper: weight of x->x streams per language
        },
    },
}

_HASHING = {
    "buckets": Field(1 << 18, int, minimum=2),      # hashed feature ids (one table for every kind of feature)
    "n_min": Field(3, int, minimum=1),              # character n-grams of each <token>, n_min <= n <= n_max
    "n_max": Field(5, int, minimum=0),
    "lowercase": Field(True, bool),
    "max_tokens": Field(128, int, minimum=1),       # tokens kept per sentence
    "cjk_n_min": Field(0, int, minimum=0),        # 0: off; else tokens with CJK characters also get n-grams from this n
    "translit": Field(False, bool),                 # Cyrillic tokens also get their Latin transliteration's features
    "hash_seed": Field(0, int, minimum=0),          # 0: as always; N: other features share a bucket (ensemble members)
}

#: Sections shared by every dual architecture (merged into ARCH below).
_DUAL_COMMON: dict[str, dict[str, Field]] = {
    "data": {
        "batch_size": Field(128, int, minimum=2),   # K pairs per step, split between the language pairs
        "max_pairs": Field(None, int, nullable=True, minimum=1),  # use the first N pairs of each language pair
        "mono_weight": Field(1.0, _NUM, minimum=0),  # batch share of each --mono language vs one language pair
                                                     # (distill)
        "vocab_weight": Field(None, _NUM, nullable=True, minimum=0),  # ... of each vocab.XX.txt stream; null:
                                                                      # mono_weight
        "words_weight": Field(None, _NUM, nullable=True, minimum=0),  # ... of each words.XX.txt stream; null:
                                                                      # mono_weight
        # null: every word list gets words_weight; N: a list of W words gets words_weight * max(1, W / N), so each
        # word of a longer list is seen as often as one of an N-word list (raise batch_size so the other streams keep
        # their rows)
        "words_ref_size": Field(None, int, nullable=True, minimum=1),
        # one stream per (language pair, domain) of `bisent data general`'s files when either is set, sharing the pair's
        # batch share in proportion to weight * rows ** (1 / temperature) (weight: 1 for a domain not named; temperature
        # null: equal base shares, 1: shares as the rows, 2: as their square roots); both null: one stream per pair
        "domain_weights": Field(None, dict, nullable=True),
        "domain_temperature": Field(None, _NUM, nullable=True, minimum=1),
        # {domain: share}: that domain's rows of each pair form a stream of their own (named `en-it lexicon`) with that
        # batch share against a language pair's 1, beside the pair's stream of its other rows (`bisent data lexicon`)
        "stream_domains": Field(None, dict, nullable=True),
    },
    "optim": {
        "embed_lr_mult": Field(1.0, _NUM, minimum=0),  # learning-rate multiplier of hashed embedding tables
    },
    "objectives": {
        "ranking": Field(1.0, _NUM, minimum=0),      # weight of the bidirectional ranking loss (Eq. 1-2)
        "scale": Field(20.0, _NUM, minimum=0),       # s: logits are s * (cos - m on the diagonal)
        "margin": Field(0.3, _NUM, minimum=0),       # m, additive margin (paper: 0.3)
        "hard_negatives": Field(False, bool),        # append mined hard negatives to the in-batch ones
        "hard_every": Field(1000, int, minimum=1),   # re-mine them with the current model every N steps
        # model: mined with the model being trained (every hard_every steps); teacher (distill): each source's
        # nearest other source by the teacher's rows, mined once before step 1
        "hard_source": Field("model", str, ("model", "teacher")),
        "distill": Field(0.0, _NUM, minimum=0),      # weight of the teacher loss (objective: distill)
        "teacher": Field("me5-small", str),          # registered encoder or model directory
        "distill_loss": Field("mse", str, ("mse", "cosine")),
        # weight of the teacher-contrastive term (distill): each text's student vector must pick its own teacher row
        # (a translation: its source's) out of the sub-batch's, a softmax at contrast_scale over cosines
        "contrast": Field(0.0, _NUM, minimum=0),
        "contrast_scale": Field(20.0, _NUM, minimum=0),
        # the teacher rows of harder negatives join the term: a pair's mined hard sources (hard_negatives), and for each
        # text of a monolingual stream or word list its nearest other text by the teacher (mined once, cached)
        "contrast_hard": Field(False, bool),
        "teacher_batch": Field(64, int, minimum=1),  # sentences per teacher call (its persistent cache is used)
        "teacher_workers": Field(1, int, minimum=1), # processes that fill the teacher's cache first (many cores)
    },
    "train": {
        "half_weights": Field(False, bool),         # store the model's weights as float16 (half the directory)
        "int8_weights": Field(False, bool),         # large tables as int8 rows + a scale each, the rest float16
    },
}

#: Dual architectures: model keys (``dim: null`` = the teacher's dimension, else an architecture default).
_DUAL_MODELS: dict[str, dict[str, Field]] = {
    "dan": {
        "dim": Field(None, int, nullable=True, minimum=1),
        "embed_dim": Field(256, int, minimum=1),
        "hidden": Field([512], list),                # ReLU layers between the mean and the output
        "feature_dropout": Field(0.0, _NUM, minimum=0),  # drop whole features before averaging (training only)
        "dropout": Field(0.0, _NUM, minimum=0),
        **_HASHING,
        "word_ngrams": Field(2, int, minimum=1),     # 1: words, 2: words and bigrams
    },
    "hash-transformer": {
        "dim": Field(None, int, nullable=True, minimum=1),
        "embed_dim": Field(128, int, minimum=1),     # word / n-gram embedding size, projected to d_model
        "d_model": Field(256, int, minimum=8),
        "layers": Field(2, int, minimum=1),
        "heads": Field(4, int, minimum=1),
        "ff_dim": Field(512, int, minimum=1),
        "dropout": Field(0.1, _NUM, minimum=0),
        **_HASHING,
        "max_tokens": Field(64, int, minimum=1),
    },
    "bilstm": {
        "dim": Field(None, int, nullable=True, minimum=1),  # null: 2 * hidden_dim (no output layer), or the teacher's
        "embed_dim": Field(256, int, minimum=1),
        "hidden_dim": Field(256, int, minimum=1),
        "layers": Field(1, int, minimum=1),
        "dropout": Field(0.1, _NUM, minimum=0),
    },
    "adapter": {
        "base": Field("use-m3", str),                # the frozen encoder: registered name or model directory
        "dim": Field(None, int, nullable=True, minimum=1),  # null: the base's dimension (or the teacher's)
        "hidden": Field([], list),                   # [] = one linear map (starts as the identity)
        "residual": Field(False, bool),              # x + MLP(x), the last layer starting at zero
    },
}

for _arch, _model in _DUAL_MODELS.items():
    ARCH[_arch] = {"model": _model, **{k: dict(v) for k, v in _DUAL_COMMON.items()}}

#: Zhang et al. (2016) and its BBoWAE baseline: a word vocabulary per language (training/objectives/zhang2016.py).
_WORD_AE: dict[str, dict[str, Field]] = {
    "tokenizer": {"min_count": Field(2, int, minimum=1),           # rarer words read as <unk>
                  "vocab_size": Field(50_000, int, minimum=2)},    # per language, <unk> included
    "data": {"max_len": Field(100, int, minimum=1),                # words kept per sentence
             "batch_size": Field(1000, int, minimum=1),            # pairs per Adam step (whole blocks)
             "chunk": Field(2000, int, minimum=1)},                # pairs per forward pass of the full-corpus objective
    "optim": {"optimizer": Field("lbfgs", str, ("lbfgs", "adam")), "lr": Field(1.0, _NUM, minimum=0),
              "history": Field(10, int, minimum=1)},               # L-BFGS curvature pairs
}
ARCH["zhang2016"] = {**_WORD_AE, "model": {
    "variant": Field("mm2as", str, ("mm2as", "as2mm")),          # input [min; max] -> target [avg; std], or the reverse
    "word_dim": Field(64, int, minimum=1),                         # d
    "hidden": Field(None, int, nullable=True, minimum=1),          # m (null: 2d, as in the paper)
    "descriptor_norm": Field("none", str, ("none", "standard")),   # standard: each descriptor dimension centred, sd ->
                                                                   # 0.5
    "target_weight": Field(1.0, _NUM, minimum=0),                  # gamma on W_dec^T g_tgt in Eq. 11-12 (1: the paper)
    "finetune_words": Field(False, bool),                          # train the word tables L (Eq. 10) or keep word2vec's
    "word_vectors": Field(None, (str, dict), nullable=True),       # path, or {lang: path}; null: word2vec on the pairs
    "unseen_language": Field("auto", str)},                        # auto: read other languages as the 2nd; refuse
    "objectives": {"alpha": Field(0.1, _NUM, minimum=0), "block": Field(100, int, minimum=1),
                   "lambda_l": Field(1e-6, _NUM, minimum=0), "lambda_w": Field(1e-3, _NUM, minimum=0),
                   "w2v_epochs": Field(5, int, minimum=1), "w2v_window": Field(5, int, minimum=1),
                   "w2v_negative": Field(5, int, minimum=1),
                   "w2v_bilingual": Field(False, bool)}}       # one skip-gram on pseudo-bilingual pairs (not the paper)
ARCH["bbowae"] = {**_WORD_AE, "model": {"hidden": Field(128, int, minimum=1), "unseen_language": Field("auto", str)},
                  "objectives": {"beta": Field(1.0, _NUM, minimum=0), "lambda_cor": Field(4.0, _NUM, minimum=0),
                                 "block": Field(100, int, minimum=2)}}  # pairs per correlation estimate
ARCHITECTURES += ("zhang2016", "bbowae")
#: Pham et al. (2018): the word-alignment BiLSTM divergence model (training/objectives/divergence.py).
ARCH["divergence"] = {
    "model": {"embed_dim": Field(128, int, minimum=1), "hidden_dim": Field(128, int, minimum=1),
              "r": Field(1.0, _NUM, minimum=0), "dropout": Field(0.0, _NUM, minimum=0),
              "semb_hidden": Field(128, int, minimum=1), "vocab_size": Field(30000, int, minimum=1),
              "min_count": Field(2, int, minimum=1), "lowercase": Field(True, bool),
              "max_words": Field(200, int, minimum=1),                     # longer sides are not scored
              "word_vectors": Field(None, (str, dict), nullable=True),    # path, or {lang or src/tgt: path}
              "word_vectors_from": Field(None, str, nullable=True)},     # an encoder: its vectors of each word, PCA'd
    "objectives": {"loss": Field("wemb", str, ("wemb", "semb")),          # Eq. 3 (words) or Eq. 5 (sentences)
                   "unpaired": Field(True, bool), "replace": Field(True, bool), "insert": Field(True, bool),
                   "word_classes": Field(64, int, minimum=1)},
    "data": {"max_words": Field(50, int, minimum=1)}}                    # training pairs with longer sides are left out
ARCHITECTURES += ("divergence",)

#: Guo et al. (2019) document encoders on document pairs (training/objectives/hide.py, models/hide.py)
DOCUMENT = ("hide", "doc-bow")
_DOC_COMMON: dict[str, dict[str, Field]] = {
    "data": {"segmentations": Field(["given", "sentencex"], list),   # views of each document, one drawn per side
             "max_units": Field(16, int, minimum=1),                  # units (paragraphs / sentences) kept per document
             "batch_size": Field(64, int, minimum=2)},                # K document pairs per step
    "optim": {"clip": Field(None, _NUM, nullable=True, minimum=0)},
    "objectives": {"scale": Field(20.0, _NUM, minimum=0), "margin": Field(0.3, _NUM, minimum=0)},
    "train": {"max_steps": Field(1500, int, minimum=0), "eval_every": Field(250, int, minimum=1)},
}
ARCH["hide"] = {"model": {"mode": Field("dnn-pool", str, ("dnn-pool", "pool-dnn")), "base": Field("use-m3", str),
                          "hidden": Field([320, 320, 500, 500], list)}, **{k: dict(v) for k, v in _DOC_COMMON.items()}}
ARCH["doc-bow"] = {"model": {"buckets": Field(1 << 18, int, minimum=2), "embed_dim": Field(320, int, minimum=1),
                             "hidden": Field([320, 500], list), "ngrams": Field(False, bool)},
                   **{k: dict(v) for k, v in _DOC_COMMON.items()}}
ARCHITECTURES += DOCUMENT

TOP_LEVEL = {"architecture", "objective", "seed", "languages", *COMMON, "model", "objectives"}


def schema(architecture: str) -> dict[str, dict[str, Field]]:
    """All sections and fields of one architecture's recipe (shared sections merged key by key).

    Dual architectures other than ``bilstm`` have no tokenizer and no ``data.max_len`` (their input is hashed).
    """
    out = {k: dict(v) for k, v in COMMON.items()}
    if (architecture in DUAL and architecture != "bilstm") or architecture in DOCUMENT:
        del out["tokenizer"]
        del out["data"]["max_len"]
    for section, fields in ARCH[architecture].items():
        out[section] = {**out.get(section, {}), **fields}
    return out


def defaults(architecture: str) -> dict:
    """The full default recipe of an architecture."""
    out: dict[str, Any] = {"architecture": architecture, "seed": 1, "languages": None}
    if architecture in DUAL:
        out["objective"] = "guo2019"
    if architecture in DOCUMENT:
        out["objective"] = "hide"
    for section, fields in schema(architecture).items():
        out[section] = {k: copy.deepcopy(f.default) for k, f in fields.items()}
    return out


def _check_value(src: str, key: str, f: Field, value: Any) -> Any:
    if value is None:
        if f.nullable:
            return None
        raise BisentError(f"{src}: {key}: may not be null")
    types = f.type if isinstance(f.type, tuple) else (f.type,)
    if float in types and isinstance(value, str):          # YAML 1.1 reads 1e-3 as a string
        try:
            value = float(value)
        except ValueError:
            pass
    if isinstance(value, bool) and bool not in types:
        raise BisentError(f"{src}: {key}: expected {'/'.join(t.__name__ for t in types)}, got {value!r}")
    if not isinstance(value, types):
        raise BisentError(f"{src}: {key}: expected {'/'.join(t.__name__ for t in types)}, got {value!r}")
    if f.choices is not None and value not in f.choices:
        raise BisentError(f"{src}: {key}: '{value}' is not one of {', '.join(map(str, f.choices))}")
    if isinstance(value, float) and not math.isfinite(value):
        raise BisentError(f"{src}: {key}: {value} is not a finite number")
    if f.minimum is not None and isinstance(value, (int, float)) and value < f.minimum:
        raise BisentError(f"{src}: {key}: {value} is below the minimum {f.minimum}")
    if key == "optim.betas" and (len(value) != 2 or not all(isinstance(b, (int, float)) and 0 <= b < 1 for b in value)):
        raise BisentError(f"{src}: {key}: expected two numbers in [0, 1), got {value!r}")
    return float(value) if float in types and int in types and not isinstance(value, bool) else value


def validate_recipe(raw: Any, src: str = "recipe") -> dict:
    """Return a complete, checked recipe from a (partial) nested dict; one-line errors name ``src``."""
    if not isinstance(raw, dict):
        raise BisentError(f"{src}: a recipe is a YAML mapping (key: value), got {type(raw).__name__}")
    arch = raw.get("architecture")
    if arch is None:
        raise BisentError(f"{src}: missing key 'architecture' (one of {', '.join(ARCHITECTURES)})")
    if arch not in ARCHITECTURES:
        raise BisentError(f"{src}: architecture: unknown '{arch}' (one of {', '.join(ARCHITECTURES)})")
    out = defaults(arch)
    for key, value in raw.items():
        if key not in TOP_LEVEL:
            raise BisentError(f"{src}: unknown key '{key}' (known: {', '.join(sorted(TOP_LEVEL))})")
        if key == "architecture":
            continue
        if key == "objective":
            if arch not in DUAL:
                if value not in (None, arch):
                    raise BisentError(f"{src}: objective: {arch} has its own objective; leave 'objective' out")
                continue
            if value not in DUAL_OBJECTIVES:
                raise BisentError(f"{src}: objective: '{value}' is not one of {', '.join(DUAL_OBJECTIVES)}")
            out["objective"] = value
        elif key == "seed":
            out["seed"] = _check_value(src, "seed", Field(1, int, minimum=0), value)
        elif key == "languages":
            if value is not None and not (isinstance(value, list) and value and all(isinstance(v, str) and v
                                                                                    for v in value)):
                raise BisentError(f"{src}: languages: expected a list of language codes, got {value!r}")
            out["languages"] = value
        else:
            if key not in schema(arch):
                raise BisentError(f"{src}: unknown key '{key}' for architecture {arch} (it has no {key} section)")
            fields = schema(arch)[key]
            if value is None:
                continue
            if not isinstance(value, dict):
                raise BisentError(f"{src}: {key}: expected a mapping, got {value!r}")
            for sub, v in value.items():
                if sub not in fields:
                    raise BisentError(f"{src}: unknown key '{key}.{sub}' (known in {key}: {', '.join(fields)})")
                out[key][sub] = _check_value(src, f"{key}.{sub}", fields[sub], v)
    obj = out["objectives"]
    if arch in DUAL:
        _check_dual(out, raw, src)
    if arch in DOCUMENT:
        _check_document(out, src)
    if arch == "kim2019" and obj["translation"] <= 0:
        raise BisentError(f"{src}: objectives.translation: must be > 0 (the translation path trains the source "
                          "encoder)")
    if arch == "kim2019" and out["languages"] is not None and len(out["languages"]) != 2:
        raise BisentError(f"{src}: languages: kim2019 is bilingual: give [source, target], got {out['languages']!r}")
    return out


def _check_dual(out: dict, raw: dict, src: str) -> None:
    """Cross-key rules of the dual recipes; the ``distill`` objective weighs the teacher 1 unless told otherwise."""
    obj, model = out["objectives"], out["model"]
    given = raw.get("objectives") or {}
    if out["objective"] == "distill":
        if "distill" not in given:
            obj["distill"] = 1.0
        if "ranking" not in given:
            obj["ranking"] = 0.0
        if obj["distill"] <= 0:
            raise BisentError(f"{src}: objectives.distill: must be > 0 for objective: distill")
    elif obj["distill"] > 0 or obj["contrast"] > 0:
        key = "distill" if obj["distill"] > 0 else "contrast"
        raise BisentError(f"{src}: objectives.{key}: the guo2019 objective has no teacher; use objective: distill")
    if obj["ranking"] <= 0 and obj["distill"] <= 0:
        raise BisentError(f"{src}: objectives: ranking and distill are both 0: nothing to train")
    if obj["contrast_hard"] and obj["contrast"] <= 0:
        raise BisentError(f"{src}: objectives.contrast_hard: needs objectives.contrast > 0 (the term it adds to)")
    for key in ("domain_weights", "stream_domains"):                   # at load, not minutes later at train start
        for d, w in (out["data"].get(key) or {}).items():
            if not isinstance(w, (int, float)) or isinstance(w, bool) or not math.isfinite(w) or w < 0:
                raise BisentError(f"{src}: data.{key}.{d}: {w!r} is not a number >= 0")
    for key in ("hidden",):
        if key in model and not all(isinstance(h, int) and not isinstance(h, bool) and h > 0 for h in model[key]):
            raise BisentError(f"{src}: model.{key}: expected a list of positive integers, got {model[key]!r}")
    if "buckets" in model:                       # the hashed features: HashConfig's own rules, now, not at train start
        from ..models.dan import hash_config
        from ..models.hashing import HashConfigError
        try:
            hash_config(model).check()
        except HashConfigError as e:
            raise BisentError(f"{src}: model.{e.key}: {e.problem}") from None
    if out["architecture"] == "hash-transformer" and model["d_model"] % model["heads"]:
        raise BisentError(f"{src}: model.d_model: {model['d_model']} is not a multiple of model.heads "
                          f"({model['heads']})")
    if out["architecture"] == "adapter" and model["residual"] and model["dim"] is not None:
        raise BisentError(f"{src}: model.dim: a residual adapter keeps its base's dimension; leave it null")


def _check_document(out: dict, src: str) -> None:
    """The document recipes' list fields: views from ``given`` / ``sentencex``, positive layer sizes."""
    segs = out["data"]["segmentations"]
    if not segs or any(s not in ("given", "sentencex") for s in segs):
        raise BisentError(f"{src}: data.segmentations: choose from given, sentencex (got {segs!r})")
    hidden = out["model"]["hidden"]
    if not hidden or not all(isinstance(h, int) and not isinstance(h, bool) and h > 0 for h in hidden):
        raise BisentError(f"{src}: model.hidden: expected a list of positive integers, got {hidden!r}")


def parse_override(text: str) -> tuple[str, Any]:
    """``"model.hidden_dim=64"`` -> ``("model.hidden_dim", 64)`` (the value is read as YAML)."""
    if "=" not in text:
        raise BisentError(f"--set {text}: expected KEY=VALUE, e.g. model.hidden_dim=128")
    key, value = text.split("=", 1)
    return key.strip(), yaml_text(value, f"--set {text}", lines=False)


def apply_overrides(raw: dict, overrides: dict[str, Any] | Iterable[str] | None) -> dict:
    """Return a copy of ``raw`` with dotted keys set (``{"model.hidden_dim": 64}`` or ``["model.hidden_dim=64"]``)."""
    raw = copy.deepcopy(raw)
    if not overrides:
        return raw
    items = overrides.items() if isinstance(overrides, dict) else map(parse_override, overrides)
    for key, value in items:
        node = raw
        parts = key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise BisentError(f"override {key}: '{p}' is not a section")
        node[parts[-1]] = value
    return raw


def load_recipe(path, overrides: dict[str, Any] | Iterable[str] | None = None) -> dict:
    """Read a YAML recipe (a path, or an installed recipe's name), apply dotted overrides, fill in defaults and
    check every key."""
    path = resolve(path)
    if not path.is_file():
        raise BisentError(f"{path}: no such recipe file")
    raw = read_yaml(path)
    if raw is None:
        raise BisentError(f"{path}: recipe is empty")
    if not isinstance(raw, dict):
        raise BisentError(f"{path}: a recipe is a YAML mapping (key: value)")
    return validate_recipe(apply_overrides(raw, overrides), str(path))
