"""The divergence paper's losses and its set-up for the training loop (wemb: Eq. 3, word level; semb: Eq. 5).

Eq. 3, soft-margin loss over every word with labels Y = -1 (parallel) / +1
(divergent), on the Eq. 2 aggregates:

    L = sum_i log(1 + exp(aggr_s(i) * Y_i^src)) + sum_j log(1 + exp(aggr_t(j) * Y_j^tgt))

(here divided by the number of words in the batch, so the learning rate
does not depend on sentence length). Eq. 5 for semb: ``log(1 + exp(h_sim * Y))``
with Y = -1 for a true pair and +1 for any negative example.

:func:`setup` plugs the model into :func:`bisent.training.loop.train`: one
stream of :class:`bisent.training.data.Batches` per example kind the recipe
switches on (``objectives: {unpaired, replace, insert}``), all of weight 1, so
each batch holds as many paired examples as each negative kind (section 5:
"the same number of paired examples"). A sub-batch's negatives are drawn with
a generator seeded by ``(seed, stream, epoch, position)``, so a resumed run
sees the very same examples. The recipe is ``divergence`` (``bisent recipes``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from ...errors import BisentError
from ...models.keys import Field
from ..data import Batches, Bitext, Monotext, PairSpec, fingerprint
from . import Setup

#: the sections of its recipes besides the model's (models/divergence.py)
RECIPE_SECTIONS = {
    "objectives": {"loss": Field("wemb", str, ("wemb", "semb")),          # Eq. 3 (words) or Eq. 5 (sentences)
                   "unpaired": Field(True, bool), "replace": Field(True, bool), "insert": Field(True, bool),
                   "word_classes": Field(64, int, minimum=1)},
    "data": {"max_words": Field(50, int, minimum=1)}}                    # training pairs with longer sides are left out

#: example kinds and the ``objectives`` switch of each negative kind (P is always drawn)
KINDS = (("U", "unpaired"), ("R", "replace"), ("I", "insert"))


def kinds_of(recipe: dict) -> list[str]:
    """The example kinds a batch draws from: P plus each switched-on negative (U, R, I)."""
    return ["P"] + [k for k, name in KINDS if recipe["objectives"][name]]


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
    """The recipe's loss on a list of :class:`bisent.divergence.negatives.Example`, and the share of words classified
    right."""
    si, sl = model.featurize([e.src for e in examples], "src")
    ti, tl = model.featurize([e.tgt for e in examples], "tgt")
    dev = next(model.parameters()).device
    out = model(si.to(dev), sl, ti.to(dev), tl)
    ys = _labels([e.y_src[:model.max_words] for e in examples], si.shape[1]).to(dev)   # (B, I)
    yt = _labels([e.y_tgt[:model.max_words] for e in examples], ti.shape[1]).to(dev)   # (B, J)
    if loss == "semb":
        y = torch.tensor([-1.0 if e.kind == "P" else 1.0 for e in examples], device=dev)
        value = sentence_loss(model.semb(out["src_vec"], out["tgt_vec"]), y)
    else:
        value = word_loss(out, ys, yt)
    with torch.no_grad():
        right = ((out["aggr_src"] < 0) == (ys > 0))[out["src_mask"]].sum() + \
            ((out["aggr_tgt"] < 0) == (yt > 0))[out["tgt_mask"]].sum()
        words = out["src_mask"].sum() + out["tgt_mask"].sum()
    return value, {"word_acc": float(right) / max(int(words), 1)}


# --- vocabulary and the set-up ------------------------------------------------------------------

def build_vocab(sents: Sequence[list[str]], size: int, min_count: int, lowercase: bool) -> list[str]:
    """``<pad>``, ``<unk>`` then the ``size`` most frequent words seen at least ``min_count`` times."""
    from collections import Counter

    c = Counter(w.lower() if lowercase else w for s in sents for w in s)
    return ["<pad>", "<unk>"] + [w for w, n in c.most_common(size) if n >= min_count]


@dataclass
class ExampleBatch:
    """One kind's share of a batch: :class:`bisent.divergence.negatives.Example` s (featurized in the loss)."""

    kind: str
    examples: list

    def to(self, device) -> "ExampleBatch":
        return self


def _word_vector_files(spec, src_lang: str, tgt_lang: str) -> dict[str, str]:
    """``model.word_vectors``: one file for both sides, or ``{lang or src/tgt: file}`` -> ``{side: file}``."""
    if spec is None:
        return {}
    if isinstance(spec, str):
        return {"src": spec, "tgt": spec}
    out = {}
    for key, path in spec.items():
        side = "src" if key in ("src", src_lang) else "tgt" if key in ("tgt", tgt_lang) else None
        if side is None:
            raise BisentError(f"model.word_vectors: '{key}' is neither {src_lang} nor {tgt_lang}")
        out[side] = path
    return out


def encoder_init(model, encoder_name: str, src_lang: str, tgt_lang: str) -> dict[str, int]:
    """Set both word tables (all words but ``<pad>``/``<unk>``) from ``encoder``'s vectors of each word, one
    PCA for both languages (:mod:`bisent.training.word_vectors`); returns the words set per side."""
    from ...encoders import get_encoder
    from ..word_vectors import encoder_word_vectors

    enc = get_encoder(encoder_name)
    words = {side: model.vocab[side][2:] for side in ("src", "tgt")}
    vecs = encoder_word_vectors(enc, [(src_lang, words["src"]), (tgt_lang, words["tgt"])],
                                model.emb["src"].weight.shape[1])
    with torch.no_grad():
        for side, v in zip(("src", "tgt"), vecs):
            model.emb[side].weight[2:] = torch.from_numpy(v)
    return {side: len(w) for side, w in words.items()}


def setup(recipe: dict, bitexts: list[Bitext], monos: list[Monotext], dev: list[Bitext], out_dir: Path, *,
          state: dict | None, device: torch.device) -> Setup:
    """The BiLSTM divergence model on one language pair for :func:`bisent.training.loop.train`."""
    from ...divergence.negatives import NegativeSampler
    from ...divergence.tokens import tokenize
    from ...models.divergence import DivergenceEncoder, DivergenceNet, load_word_vectors, save_divergence

    if monos:
        raise BisentError(f"{monos[0].source}: the divergence model trains on parallel data only; drop --mono")
    if len({b.langs for b in bitexts}) != 1:
        raise BisentError("--train: a divergence model is trained on one language pair (give files of one pair)")
    mc, dc, oc = recipe["model"], recipe["data"], recipe["objectives"]
    src_lang, tgt_lang = bitexts[0].langs
    toks = [(tokenize(s).words, tokenize(t).words) for b in bitexts for s, t in b.pairs]
    toks = [(s, t) for s, t in toks if 1 <= len(s) <= dc["max_words"] and 1 <= len(t) <= dc["max_words"]]
    if len(toks) < 10:
        raise BisentError(f"only {len(toks)} usable training pairs (1..{dc['max_words']} words a side); need at least "
                          "10")
    kinds = kinds_of(recipe)
    sampler = NegativeSampler(oc["word_classes"], seed=recipe["seed"]).fit(toks, replace="R" in kinds)
    torch.manual_seed(recipe["seed"])
    model = DivergenceNet(build_vocab([s for s, _ in toks], mc["vocab_size"], mc["min_count"], mc["lowercase"]),
                          build_vocab([t for _, t in toks], mc["vocab_size"], mc["min_count"], mc["lowercase"]),
                          embed_dim=mc["embed_dim"], hidden_dim=mc["hidden_dim"], r=mc["r"],
                          semb=oc["loss"] == "semb", semb_hidden=mc["semb_hidden"], dropout=mc["dropout"],
                          src_lang=src_lang, tgt_lang=tgt_lang, lowercase=mc["lowercase"], max_words=mc["max_words"])
    found = {side: load_word_vectors(model, side, path)                 # a resumed run reloads the weights anyway
             for side, path in _word_vector_files(mc["word_vectors"], src_lang, tgt_lang).items()}
    if mc["word_vectors_from"]:
        if mc["word_vectors"]:
            raise BisentError("model.word_vectors and model.word_vectors_from: give one or the other")
        if state is None:                                               # a resumed run reloads the weights
            found = encoder_init(model, mc["word_vectors_from"], src_lang, tgt_lang)
    model = model.to(device)
    keys = np.array([max(len(s), len(t)) for s, t in toks], dtype=np.int64)   # (N,) length buckets: less padding
    seed = recipe["seed"]
    holder: dict = {}

    def collate(i: int, idx: np.ndarray) -> ExampleBatch:
        """Stream ``i``'s pairs ``idx`` as examples of its kind; a function of (seed, stream, sampler position)."""
        s = holder["batches"].samplers[i]
        rng = np.random.default_rng([seed, i, s.epoch, s.pos])
        out = []
        for k in idx:
            ex = None
            for _ in range(5):
                ex = sampler.make(int(k), kinds[i], rng)
                if ex is not None:
                    break
            out.append(ex if ex is not None else sampler.make(int(k), "P", rng))   # no valid negative: the pair
        return ExampleBatch(kinds[i], out)

    batches = Batches([(k, keys, 1.0) for k in kinds], collate, batch_size=dc["batch_size"], seed=seed,
                      bucket_batches=dc["bucket_batches"])
    holder["batches"] = batches
    loss_name = oc["loss"]

    def loss(model, batch: list[ExampleBatch]) -> tuple[torch.Tensor, dict[str, float]]:
        return batch_loss(model, [e for sb in batch for e in sb.examples], loss_name)

    def save(at_dir: Path, step: int) -> None:
        save_divergence(model, at_dir, {"training": {"step": step, "recipe": recipe, "kinds": "".join(kinds)}})

    spec = PairSpec(f"{src_lang}-{tgt_lang}", src_lang, tgt_lang, [" ".join(s) for s, _ in toks],
                    [" ".join(t) for _, t in toks])
    info = {"languages": [src_lang, tgt_lang], "loss_kind": loss_name, "kinds": "".join(kinds), "pairs": len(toks),
            "vocab": [len(model.vocab["src"]), len(model.vocab["tgt"])], "word_vectors_found": found}
    return Setup(model=model, batches=batches, loss=loss,
                 encoder=DivergenceEncoder(model, name=f"{out_dir} (training)", content_hash="training"),
                 save_model=save, data_hash=fingerprint([spec]), dev=list(dev), info=info)
