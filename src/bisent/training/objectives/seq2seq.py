"""The set-up shared by the translation/autoencoding objectives (:mod:`.kim2019`, :mod:`.artetxe2019`).

The objective module decides the languages, the streams and their ratio and
the loss; this module adds a joint tokenizer (``tokenizer.model``), tokenised
length-bucketed :class:`bisent.training.data.Batches`, the seq2seq model
(:mod:`bisent.models.rnn`) from the recipe's seed, and its model directory.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import torch
import torch.nn.functional as F

from ...models.rnn import Seq2SeqEncoder, build_model, init_from_word_vectors, save_seq2seq
from ...models.tokenizer import PAD
from ..data import Bitext, Monotext, all_text, fingerprint, token_batches
from . import Setup
from .common import tokenizer_fingerprint, tokenizer_for


def token_nll(model, sb) -> tuple[torch.Tensor, int]:
    """Summed cross-entropy of one sub-batch under teacher forcing, and its number of target tokens.

    ``-sum_i log p(y_i | y_<i, embed(x))`` over the non-pad positions of ``sb.tgt_out``.
    """
    emb = model.embed(sb.src, sb.src_len, sb.enc_lang)                 # (B, D)
    logits = model.decode(emb, sb.tgt_in, sb.dec_lang)                 # (B, T, V)
    nll = F.cross_entropy(logits.flatten(0, 1), sb.tgt_out.flatten(),  # (B*T, V) vs (B*T,)
                          ignore_index=PAD, reduction="sum")
    return nll, int((sb.tgt_out != PAD).sum())


def setup(objective: ModuleType, recipe: dict, bitexts: list[Bitext], monos: list[Monotext], dev: list[Bitext],
          out_dir: Path, *, state: dict | None, device: torch.device) -> Setup:
    """Streams of ``objective`` (its ``languages``, ``build_streams``, ``dev_pairs``, ``output_languages``,
    ``loss``), a joint tokenizer, the model; see :class:`bisent.training.objectives.Setup`."""
    arch, seed, data = recipe["architecture"], recipe["seed"], recipe["data"]
    # 1. what to train on: the paper's objective decides the streams and their ratio
    langs = objective.languages(bitexts, recipe)
    specs = objective.build_streams(bitexts, monos, recipe)
    dev = objective.dev_pairs(dev, recipe, langs)
    # 2. one joint tokenizer for all languages (reloaded when resuming)
    tok = tokenizer_for(recipe, all_text(bitexts, monos), out_dir, state)
    batches = token_batches(specs, tok, batch_size=data["batch_size"], seed=seed, bucket_batches=data["bucket_batches"])
    # 3. the model, from a fixed seed
    torch.manual_seed(seed)
    hp = {k: v for k, v in recipe["model"].items() if k != "word_vectors"}
    model = build_model(arch, {**hp, "vocab_size": tok.vocab_size, "languages": langs}).to(device)
    init_report = {}
    if state is None and recipe["model"].get("word_vectors"):
        init_report = init_from_word_vectors(model, recipe["model"]["word_vectors"], tok.pieces(),
                                             recipe["tokenizer"]["lowercase"],
                                             objective.output_languages(recipe, langs))

    def save(at_dir: Path, step: int) -> None:
        save_seq2seq(model, tok, at_dir, extra={"training": {"step": step, "languages": langs, "recipe": recipe}})

    return Setup(model=model, batches=batches, loss=objective.loss,
                 encoder=Seq2SeqEncoder(model, tok, name=f"{out_dir} (training)", content_hash="training"),
                 save_model=save, data_hash=fingerprint(specs), dev=dev, tokenizer=tok,
                 fingerprints=tokenizer_fingerprint(tok),
                 info={"vocab_size": tok.vocab_size, "languages": langs, "word_vectors_init": init_report})
