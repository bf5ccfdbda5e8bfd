"""Kim et al. (2019): translation plus autoencoding through ONE shared decoder, 1:1 in each batch.

With source ``f`` and target ``e`` (``direction: src2tgt``):

    L = - sum_{(f, e) in P} log p(e | enc_src(f))      Eq. 7  translation
        - sum_{e in M_tgt}  log p(e | enc_tgt(e))      Eq. 8  autoencoding

where ``M_tgt`` is the target side of the bitext plus monolingual target
text. ``direction: tgt2src`` swaps the roles (Eq. 9-10); ``both`` trains all
four paths. Each batch holds the objectives in the recipe's ratio
(``objectives.translation : objectives.autoencoding``, 1:1 in the paper), so
neither encoder is optimised more than the other.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from ...errors import BisentError
from ...models.keys import NUM, Field
from ..data import Bitext, Monotext, StreamSpec, SubBatch
from . import Setup, seq2seq
from .seq2seq import token_nll

#: the ``objectives`` section of its recipes (the model section: models/rnn.py)
RECIPE_SECTIONS = {"objectives": {
    "translation": Field(1.0, NUM, minimum=0),   # share of each batch (Eq. 7 / Eq. 9)
    "autoencoding": Field(1.0, NUM, minimum=0),  # share of each batch (Eq. 8 / Eq. 10)
    "direction": Field("src2tgt", str, ("src2tgt", "tgt2src", "both")),
}}


def check_recipe(recipe: dict, raw: dict, src: str) -> None:
    """The translation path trains the source encoder; the model is bilingual."""
    if recipe["objectives"]["translation"] <= 0:
        raise BisentError(f"{src}: objectives.translation: must be > 0 (the translation path trains the source "
                          "encoder)")
    if recipe["languages"] is not None and len(recipe["languages"]) != 2:
        raise BisentError(f"{src}: languages: kim2019 is bilingual: give [source, target], got {recipe['languages']!r}")


def languages(bitexts: list[Bitext], recipe: dict) -> list[str]:
    """``[source, target]``: the recipe's ``languages`` or the first bitext's; every bitext must be that pair."""
    if not bitexts:
        raise BisentError("kim2019: needs parallel training data")
    langs = list(recipe["languages"] or bitexts[0].langs)
    for b in bitexts:
        if set(b.langs) != set(langs) or b.src_lang == b.tgt_lang:
            raise BisentError(f"{b.source}: kim2019 is bilingual ({'-'.join(langs)}); this file is {'-'.join(b.langs)}")
    return langs


def _oriented(bitexts: list[Bitext], src: str, tgt: str) -> list[tuple[str, str]]:
    """All pairs as (src-language sentence, tgt-language sentence)."""
    return [p if b.src_lang == src else (p[1], p[0]) for b in bitexts for p in b.pairs]


def dev_pairs(bitexts: list[Bitext], recipe: dict, langs: list[str]) -> list[Bitext]:
    src, tgt = langs
    for b in bitexts:
        if set(b.langs) != {src, tgt}:
            raise BisentError(f"{b.source}: dev pairs are {'-'.join(b.langs)}, the model is {src}-{tgt}")
    return [Bitext(src, tgt, _oriented(bitexts, src, tgt), "dev")] if bitexts else []


def output_languages(recipe: dict, langs: list[str]) -> list[str]:
    """The languages the shared decoder writes."""
    d = recipe["objectives"]["direction"]
    return {"src2tgt": [langs[1]], "tgt2src": [langs[0]], "both": list(langs)}[d]


def build_streams(bitexts: list[Bitext], monos: list[Monotext], recipe: dict) -> list[StreamSpec]:
    src, tgt = languages(bitexts, recipe)
    obj = recipe["objectives"]
    pairs = _oriented(bitexts, src, tgt)
    outs = output_languages(recipe, [src, tgt])
    for m in monos:
        if m.lang not in outs:
            raise BisentError(f"{m.source}: monolingual {m.lang} text is autoencoded only with objectives.direction "
                              f"{'tgt2src' if m.lang == src else 'src2tgt'} or both (languages: {src}-{tgt})")
    specs = []
    for out in outs:                                   # out: the language the decoder writes on this path
        inp = src if out == tgt else tgt
        side = 1 if out == tgt else 0
        x = [p[1 - side] for p in pairs]
        y = [p[side] for p in pairs]
        specs.append(StreamSpec(f"translation {inp}-{out}", "translation", inp, out, x, y, obj["translation"]))
        mono = [s for m in monos if m.lang == out for s in m.sentences]
        ae = y + mono                                  # target side of the bitext + monolingual target text
        specs.append(StreamSpec(f"autoencoding {out}", "autoencoding", out, out, ae, ae, obj["autoencoding"]))
    return specs


def loss(model, batch: list[SubBatch]) -> tuple[torch.Tensor, dict[str, float]]:
    """Token-averaged cross-entropy over the whole batch (Eq. 7 + Eq. 8); parts per objective."""
    total, n_total = 0.0, 0
    sums: dict[str, list[float]] = {}
    for sb in batch:
        nll, n = token_nll(model, sb)                  # scalar, tokens
        total = total + nll
        n_total += n
        acc = sums.setdefault(sb.objective, [0.0, 0])
        acc[0] += float(nll.detach())
        acc[1] += n
    parts = {f"loss_{k}": v[0] / max(v[1], 1) for k, v in sums.items()}
    return total / max(n_total, 1), parts


def setup(recipe: dict, bitexts: list[Bitext], monos: list[Monotext], dev: list[Bitext], out_dir: Path, *,
          state: dict | None, device: torch.device) -> Setup:
    """The run: this module's streams and loss on a seq2seq model (:func:`.seq2seq.setup`)."""
    return seq2seq.setup(sys.modules[__name__], recipe, bitexts, monos, dev, out_dir, state=state, device=device)
