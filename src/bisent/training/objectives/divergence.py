"""The divergence paper's losses and its training run (wemb: Eq. 3, word level; semb: Eq. 5, sentence level).

Eq. 3, soft-margin loss over every word with labels Y = -1 (parallel) / +1
(divergent), on the Eq. 2 aggregates:

    L = sum_i log(1 + exp(aggr_s(i) * Y_i^src)) + sum_j log(1 + exp(aggr_t(j) * Y_j^tgt))

(here divided by the number of words in the batch, so the learning rate
does not depend on sentence length). Eq. 5 for semb: ``log(1 + exp(h_sim * Y))``
with Y = -1 for a true pair and +1 for any negative example.

Each batch draws its examples from the kinds the recipe switches on
(``negatives: {unpaired, replace, insert}``), the paired examples as often
as each negative kind (section 5: "the same number of paired examples").
:func:`train_divergence` is a small self-contained loop (Adam, gradient
clipping, a time limit, a log, the model directory written at the end and
every ``checkpoint_every`` steps); the recipe is ``recipes/divergence.yaml``.
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
import torch.nn.functional as F
import yaml
from tqdm import tqdm

from ...errors import BisentError

#: recipe keys: section -> key -> default (the type is the default's; None: any number)
RECIPE: dict[str, dict[str, Any]] = {
    "model": {"embed_dim": 128, "hidden_dim": 128, "r": 1.0, "dropout": 0.0, "semb_hidden": 128,
              "vocab_size": 30000, "min_count": 2, "lowercase": True, "max_words": 200},
    "objective": {"loss": "wemb"},                                         # wemb (Eq. 3) or semb (Eq. 5)
    "negatives": {"unpaired": True, "replace": True, "insert": True, "word_classes": 64},
    "data": {"batch_size": 32, "max_words": 50},                           # training pairs with longer sides are left out
    "optim": {"lr": 1e-3, "clip": 5.0},
    "train": {"max_steps": 20000, "max_minutes": None, "log_every": 100, "checkpoint_every": 1000,
              "threads": 1, "seed": 1},
}


def load_recipe(path=None, overrides: dict[str, Any] | None = None) -> dict:
    """Read ``recipes/divergence.yaml`` (or the defaults), apply ``{"section.key": value}``, check every key."""
    raw: dict = {}
    src = str(path) if path else "defaults"
    if path is not None:
        try:
            raw = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
            raise BisentError(f"{path}: cannot read the recipe ({' '.join(str(e).split())[:120]})") from None
    raw.pop("architecture", None)
    for key, value in (overrides or {}).items():
        sec, _, sub = key.partition(".")
        raw.setdefault(sec, {})[sub] = value
    out = copy.deepcopy(RECIPE)
    for sec, fields in raw.items():
        if sec not in out or not isinstance(fields, dict):
            raise BisentError(f"{src}: unknown section '{sec}' (known: {', '.join(out)})")
        for key, value in fields.items():
            if key not in out[sec]:
                raise BisentError(f"{src}: unknown key '{sec}.{key}' (known: {', '.join(out[sec])})")
            default = out[sec][key]
            ok = (value is None and default is None) or default is None and isinstance(value, (int, float)) or \
                isinstance(value, type(default)) or (isinstance(default, float) and isinstance(value, int))
            if not ok or (isinstance(value, bool) and not isinstance(default, bool)):
                raise BisentError(f"{src}: {sec}.{key}: expected {type(default).__name__}, got {value!r}")
            out[sec][key] = value
    if out["objective"]["loss"] not in ("wemb", "semb"):
        raise BisentError(f"{src}: objective.loss: '{out['objective']['loss']}' is not one of wemb, semb")
    return out


def kinds_of(recipe: dict) -> list[str]:
    """The example kinds a batch draws from: P plus each switched-on negative (U, R, I)."""
    neg = recipe["negatives"]
    return ["P"] + [k for k, name in (("U", "unpaired"), ("R", "replace"), ("I", "insert")) if neg[name]]


# --- the losses ---------------------------------------------------------------------------------

def word_loss(out: dict[str, torch.Tensor], y_src: torch.Tensor, y_tgt: torch.Tensor) -> torch.Tensor:
    """Eq. 3 over a batch: labels (B, I) / (B, J) in {-1, +1}, padding ignored; mean over the words."""
    ls = F.softplus(out["aggr_src"] * y_src)[out["src_mask"]]
    lt = F.softplus(out["aggr_tgt"] * y_tgt)[out["tgt_mask"]]
    return (ls.sum() + lt.sum()) / (ls.numel() + lt.numel())


def sentence_loss(h_sim: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Eq. 5: ``log(1 + exp(h_sim * Y))`` (B,) averaged; Y = -1 parallel, +1 divergent."""
    return F.softplus(h_sim * y).mean()


def _labels(rows: list[list[int]], width: int) -> torch.Tensor:
    out = torch.zeros(len(rows), width)
    for k, r in enumerate(rows):
        out[k, :len(r)] = torch.tensor(r, dtype=torch.float32)
    return out


def batch_loss(model, examples: Sequence, loss: str) -> tuple[torch.Tensor, dict[str, float]]:
    """The recipe's loss on a list of :class:`bisent.divergence.Example`, and the share of words classified right."""
    si, sl = model.featurize([e.src for e in examples], "src")
    ti, tl = model.featurize([e.tgt for e in examples], "tgt")
    out = model(si, sl, ti, tl)
    ys = _labels([e.y_src[:model.max_words] for e in examples], si.shape[1])
    yt = _labels([e.y_tgt[:model.max_words] for e in examples], ti.shape[1])
    if loss == "semb":
        y = torch.tensor([-1.0 if e.kind == "P" else 1.0 for e in examples])
        value = sentence_loss(model.semb(out["src_vec"], out["tgt_vec"]), y)
    else:
        value = word_loss(out, ys, yt)
    with torch.no_grad():
        right = ((out["aggr_src"] < 0) == (ys > 0))[out["src_mask"]].sum() + \
            ((out["aggr_tgt"] < 0) == (yt > 0))[out["tgt_mask"]].sum()
        words = out["src_mask"].sum() + out["tgt_mask"].sum()
    return value, {"word_acc": float(right) / max(int(words), 1)}


# --- vocabulary and the run ---------------------------------------------------------------------

def build_vocab(sents: Sequence[list[str]], size: int, min_count: int, lowercase: bool) -> list[str]:
    """``<pad>``, ``<unk>`` then the ``size`` most frequent words seen at least ``min_count`` times."""
    from collections import Counter

    c = Counter(w.lower() if lowercase else w for s in sents for w in s)
    return ["<pad>", "<unk>"] + [w for w, n in c.most_common(size) if n >= min_count]


def train_divergence(pairs: Sequence[tuple[str, str]], out_dir, *, src_lang: str, tgt_lang: str, recipe: dict | None = None,
                     word_vectors: dict[str, str] | None = None, progress: bool | None = None):
    """Train the word-alignment BiLSTM (or semb) on ``(src, tgt)`` text pairs; write ``out_dir``; return the model.

    ``word_vectors`` maps 'src'/'tgt' to text files of cross-lingual vectors that initialise the embeddings.
    """
    from ...divergence import NegativeSampler, tokenize
    from ...models.divergence import DivergenceNet, load_word_vectors, save_divergence

    recipe = recipe or load_recipe()
    mc, dc, tc, oc = recipe["model"], recipe["data"], recipe["train"], recipe["optim"]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if tc["threads"]:
        torch.set_num_threads(tc["threads"])
    t0 = time.monotonic()
    toks = [(tokenize(s).words, tokenize(t).words) for s, t in pairs]
    toks = [(s, t) for s, t in toks if 1 <= len(s) <= dc["max_words"] and 1 <= len(t) <= dc["max_words"]]
    if len(toks) < 10:
        raise BisentError(f"only {len(toks)} usable training pairs (1..{dc['max_words']} words a side); need at least 10")
    kinds = kinds_of(recipe)
    sampler = NegativeSampler(recipe["negatives"]["word_classes"], seed=tc["seed"]).fit(toks, replace="R" in kinds)
    order = np.argsort([max(len(s), len(t)) for s, t in toks], kind="stable")   # length buckets
    t_prep = time.monotonic() - t0
    t0 = time.monotonic()                                                  # max_minutes counts the training steps
    torch.manual_seed(tc["seed"])
    model = DivergenceNet(build_vocab([s for s, _ in toks], mc["vocab_size"], mc["min_count"], mc["lowercase"]),
                          build_vocab([t for _, t in toks], mc["vocab_size"], mc["min_count"], mc["lowercase"]),
                          embed_dim=mc["embed_dim"], hidden_dim=mc["hidden_dim"], r=mc["r"],
                          semb=recipe["objective"]["loss"] == "semb", semb_hidden=mc["semb_hidden"],
                          dropout=mc["dropout"], src_lang=src_lang, tgt_lang=tgt_lang, lowercase=mc["lowercase"],
                          max_words=mc["max_words"])
    found = {side: load_word_vectors(model, side, path) for side, path in (word_vectors or {}).items()}
    opt = torch.optim.Adam(model.parameters(), lr=oc["lr"])
    rng = np.random.default_rng(tc["seed"])
    log_path = out_dir / "train_log.jsonl"
    log = open(log_path, "w", encoding="utf-8")
    start = {"event": "start", "architecture": "divergence", "loss": recipe["objective"]["loss"], "kinds": "".join(kinds),
             "pairs": len(toks), "prep_s": round(t_prep, 2), "params": sum(p.numel() for p in model.parameters()),
             "vocab": [len(model.vocab["src"]), len(model.vocab["tgt"])], "word_vectors_found": found}
    log.write(json.dumps(start) + "\n")

    def save(step: int) -> None:
        save_divergence(model, out_dir, {"training": {"step": step, "recipe": recipe, "kinds": "".join(kinds)}})

    step, acc, n_acc = 0, {"loss": 0.0, "word_acc": 0.0}, 0
    bar = tqdm(total=tc["max_steps"], desc=f"train divergence ({''.join(kinds)})", unit="step",
               disable=(not progress) if progress is not None else None)
    try:
        while step < tc["max_steps"]:
            if tc["max_minutes"] is not None and time.monotonic() - t0 > tc["max_minutes"] * 60:
                log.write(json.dumps({"step": step, "event": "time limit"}) + "\n")
                break
            batch = []
            bsz = dc["batch_size"]
            lo = int(rng.integers(max(1, len(order) - 4 * bsz)))       # pairs of similar length: less padding
            window = order[lo:lo + 4 * bsz]
            while len(batch) < bsz:
                ex = sampler.make(int(window[rng.integers(len(window))]), kinds[int(rng.integers(len(kinds)))], rng)
                if ex is not None:
                    batch.append(ex)
            model.train()
            value, parts = batch_loss(model, batch, recipe["objective"]["loss"])
            opt.zero_grad(set_to_none=True)
            value.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), oc["clip"])
            opt.step()
            step += 1
            bar.update(1)
            acc["loss"] += float(value.detach())
            acc["word_acc"] += parts["word_acc"]
            n_acc += 1
            if step % tc["log_every"] == 0:
                rec = {"step": step, **{k: v / n_acc for k, v in acc.items()},
                       "elapsed_s": round(time.monotonic() - t0, 1)}
                log.write(json.dumps(rec) + "\n")
                log.flush()
                bar.set_postfix(loss=f"{rec['loss']:.3f}", acc=f"{rec['word_acc']:.3f}")
                acc, n_acc = {"loss": 0.0, "word_acc": 0.0}, 0
            if step % tc["checkpoint_every"] == 0:
                save(step)
        log.write(json.dumps({"step": step, "event": "end", "elapsed_s": round(time.monotonic() - t0, 1)}) + "\n")
    finally:
        bar.close()
        log.close()
    save(step)
    return model.eval()

