"""One module per paper's training criterion: which streams of examples, in what ratio, which loss.

Each module exposes
- ``languages(bitexts, recipe) -> list[str]``: the languages the model is built for;
- ``build_streams(bitexts, monos, recipe) -> list[StreamSpec]``: what is trained, in what ratio;
- ``dev_pairs(bitexts, recipe) -> list[Bitext]``: dev sets oriented as the model expects;
- ``loss(model, batch) -> (scalar loss, {name: float})``: the paper's criterion on one batch.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def get_objective(architecture: str) -> ModuleType:
    """The objective module of an architecture (``kim2019`` or ``artetxe2019``)."""
    return importlib.import_module(f"{__name__}.{architecture}")


def token_nll(model, sb) -> tuple["torch.Tensor", int]:
    """Summed cross-entropy of one sub-batch under teacher forcing, and its number of target tokens.

    ``-sum_i log p(y_i | y_<i, embed(x))`` over the non-pad positions of ``sb.tgt_out``.
    """
    import torch.nn.functional as F

    from ..tokenizer import PAD

    emb = model.embed(sb.src, sb.src_len, sb.enc_lang)                 # (B, D)
    logits = model.decode(emb, sb.tgt_in, sb.dec_lang)                 # (B, T, V)
    nll = F.cross_entropy(logits.flatten(0, 1), sb.tgt_out.flatten(),  # (B*T, V) vs (B*T,)
                          ignore_index=PAD, reduction="sum")
    return nll, int((sb.tgt_out != PAD).sum())
