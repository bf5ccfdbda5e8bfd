"""Artetxe & Schwenk (2019): one language-agnostic encoder trained by translating into every language.

For every language pair ``a-b`` in the data, both directions are trained
(``objectives.both_directions``), each batch holding every direction in equal
shares ("alternating over all combinations of the languages involved"):

    L = - sum_{(a, b) directions} sum_{(x, y)} log p(y | enc(x), lang = b)

The encoder never sees a language id; the decoder gets the output language's
embedding at every step. Monolingual text is not used.

Not in the paper: ``objectives.autoencoding`` > 0 adds ``x -> x`` streams for
every language (that weight each; translation directions weigh 1). With a
single language pair, translation alone never asks the decoder for the same
output from both languages' embeddings, so nothing but shared weights pulls
them together; with three or more languages that are parallel with each
other (en-de, en-fr, de-fr) the common targets do it, as in the paper.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from ...errors import BisentError
from ...models.keys import NUM, Field
from ..data import Bitext, Monotext, StreamSpec, SubBatch
from . import Setup, seq2seq
from .common import data_languages
from .seq2seq import token_nll

#: the ``objectives`` section of its recipes (the model section: models/rnn.py)
RECIPE_SECTIONS = {"objectives": {
    "both_directions": Field(True, bool),        # train a->b and b->a for every pair a-b in the data
    "autoencoding": Field(0.0, NUM, minimum=0),  # not in the paper: weight of x->x streams per language
}}


def languages(bitexts: list[Bitext], recipe: dict) -> list[str]:
    """The recipe's ``languages`` or every language in the data, in order of appearance."""
    return data_languages(bitexts, recipe)


def dev_pairs(bitexts: list[Bitext], recipe: dict, langs: list[str]) -> list[Bitext]:
    return list(bitexts)


def output_languages(recipe: dict, langs: list[str]) -> list[str]:
    return list(langs)


def build_streams(bitexts: list[Bitext], monos: list[Monotext], recipe: dict) -> list[StreamSpec]:
    languages(bitexts, recipe)
    if monos:
        raise BisentError(f"{monos[0].source}: artetxe2019 trains on parallel data only; drop --mono")
    by_pair: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for b in bitexts:                                  # merge files of the same pair, whichever way round
        key = tuple(sorted(b.langs))
        if b.src_lang == b.tgt_lang:
            raise BisentError(f"{b.source}: both columns are {b.src_lang}")
        by_pair.setdefault(key, []).extend(p if b.langs == key else (p[1], p[0]) for p in b.pairs)
    specs = []
    for (a, b), pairs in by_pair.items():
        xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
        specs.append(StreamSpec(f"translation {a}-{b}", "translation", a, b, xs, ys, 1.0))
        if recipe["objectives"]["both_directions"]:
            specs.append(StreamSpec(f"translation {b}-{a}", "translation", b, a, ys, xs, 1.0))
    w_ae = recipe["objectives"]["autoencoding"]
    if w_ae > 0:
        for lang in dict.fromkeys(l for pair in by_pair for l in pair):
            sents = [p[pair.index(lang)] for pair, pairs in by_pair.items() if lang in pair for p in pairs]
            specs.append(StreamSpec(f"autoencoding {lang}", "autoencoding", lang, lang, sents, sents, w_ae))
    return specs


def loss(model, batch: list[SubBatch]) -> tuple[torch.Tensor, dict[str, float]]:
    """Token-averaged cross-entropy over all directions; parts per direction (``loss_en-de``)."""
    total, n_total, parts = 0.0, 0, {}
    for sb in batch:
        nll, n = token_nll(model, sb)
        total = total + nll
        n_total += n
        key = f"loss_{sb.enc_lang}-{sb.dec_lang}" if sb.objective == "translation" else f"loss_ae_{sb.enc_lang}"
        parts[key] = float(nll.detach()) / max(n, 1)
    return total / max(n_total, 1), parts


def setup(recipe: dict, bitexts: list[Bitext], monos: list[Monotext], dev: list[Bitext], out_dir: Path, *,
          state: dict | None, device: torch.device) -> Setup:
    """The run: this module's streams and loss on a seq2seq model (:func:`.seq2seq.setup`)."""
    return seq2seq.setup(sys.modules[__name__], recipe, bitexts, monos, dev, out_dir, state=state, device=device)
