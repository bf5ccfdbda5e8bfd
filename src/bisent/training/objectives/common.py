"""Pieces every objective's set-up shares: the languages of the data, and the tokenizer."""

from __future__ import annotations

import hashlib
from pathlib import Path

from ...errors import BisentError
from ...models.tokenizer import FILENAME, Tokenizer, train_tokenizer
from ..data import Bitext


def data_languages(bitexts: list[Bitext], recipe: dict) -> list[str]:
    """The recipe's ``languages`` or every language in the data, in order of appearance (checked against each other)."""
    if not bitexts:
        raise BisentError(f"{recipe.get('objective') or recipe['architecture']}: needs parallel training data "
                          "(--train)")
    seen = list(dict.fromkeys(l for b in bitexts for l in b.langs))
    if recipe["languages"]:
        missing = [l for l in seen if l not in recipe["languages"]]
        if missing:
            raise BisentError(f"recipe languages {recipe['languages']} miss {missing}, found in the training data")
        return list(recipe["languages"])
    return seen


def tokenizer_for(recipe: dict, texts: list[str], out_dir: Path, state: dict | None) -> Tokenizer:
    """The run's joint SentencePiece model: trained on ``texts`` and saved as ``out_dir/tokenizer.model``,
    or reloaded from there when resuming (``state`` given)."""
    tc, max_len = recipe["tokenizer"], recipe["data"]["max_len"]
    path = Path(out_dir) / FILENAME
    if state is not None:
        return Tokenizer.load(path, max_len)
    tok = train_tokenizer(texts, vocab_size=tc["vocab_size"], model_type=tc["model_type"], lowercase=tc["lowercase"],
                          character_coverage=tc["character_coverage"], input_sentence_size=tc["input_sentence_size"],
                          seed=recipe["seed"], max_len=max_len)
    tok.save(path)
    return tok


def tokenizer_fingerprint(tok: Tokenizer | None) -> dict[str, str]:
    """What a resumed run must find unchanged about the tokenizer."""
    return {"tokenizer_sha256": hashlib.sha256(tok.proto).hexdigest()} if tok is not None else {}
