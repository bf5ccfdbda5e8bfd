"""Guo et al. (2019), section 3.1: a dual encoder trained to rank true translations (additive margin softmax).

ONE encoder maps the source x_i and the target y_i of every pair in a batch
of K pairs to x'_i, y'_i (unit vectors here). All K x K scores come from one
matrix product, ``S = X' Y'^T``; the true pairs are on the diagonal, and every
other target of the batch is a negative for x_i. Eq. 1, forward ranking
(``p(y_i | x_i)``), with the margin m subtracted from the true pair only:

    J_fwd = -1/K sum_i log  e^{s (S_ii - m)} / ( e^{s (S_ii - m)} + sum_{k != i} e^{s S_ik} )

(the printed Eq. 1 writes the negatives as x'_k y'_k; the ranking the text
describes, and Yang et al. 2019 whom it follows, score x'_i y'_k). Eq. 2 adds
the backward ranking ``p(x_i | y_i)``, the same over the columns of S:

    J = J_fwd + J_bwd,   J_bwd = -1/K sum_i log e^{s (S_ii - m)} / ( e^{s (S_ii - m)} + sum_{k != i} e^{s S_ki} )

``s`` (``objectives.scale``) is the usual additive-margin-softmax scale for
cosine scores (AM-softmax, Wang et al. 2018); ``s = 1`` with unnormalised
vectors is the paper's plain dot product. Paper: m = 0.3, K = 100.

Hard negatives (``objectives.hard_negatives``; Guo et al. 2018, Yang et al.
2019): every ``hard_every`` steps the current model embeds all training
sentences of a language pair and each source gets its most similar wrong
target (and each target its most similar wrong source). A batch appends the
H = K mined targets as extra columns of the forward softmax and the mined
sources as extra columns of the backward one, for every row of the batch.

Scores of a wrong candidate with the very same text as the true one
(duplicates in the data) are masked out: they are not negatives.

The run itself (language-pair streams, the model of :mod:`bisent.models.dual`,
mining the hard negatives) is the dual-encoder set-up of :mod:`.dual`;
this module brings the loss.
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F

from ..data import Bitext, DualSubBatch, Monotext
from . import Setup, dual
from .dual import RECIPE_SECTIONS, check_recipe  # noqa: F401  the dual objectives' keys and rules

# --- the loss (Eq. 1-2) -------------------------------------------------------------------------------

def ranking_loss(x: torch.Tensor, y: torch.Tensor, *, scale: float = 1.0, margin: float = 0.3,
                 x_hard: torch.Tensor | None = None, y_hard: torch.Tensor | None = None,
                 fwd_mask: torch.Tensor | None = None, bwd_mask: torch.Tensor | None = None
                 ) -> tuple[torch.Tensor, dict[str, float]]:
    """Bidirectional additive-margin softmax over in-batch (+ hard) negatives: ``J_fwd + J_bwd`` (Eq. 2).

    ``x``, ``y``: ``(K, D)`` source / target embeddings, row i a true pair
    (normalise them first for cosine scores). ``x_hard``, ``y_hard``:
    ``(H, D)`` extra negative sources / targets, shared by every row.
    ``fwd_mask`` / ``bwd_mask``: ``(K, K + H)`` True where a candidate is not a
    negative for that row (the same text as its true partner); never the diagonal.
    Returns the scalar loss and ``{"loss_fwd", "loss_bwd", "acc_fwd", "acc_bwd"}``
    (acc: share of rows whose true partner scores highest, margin included).
    """
    K = x.shape[0]
    eye = torch.eye(K, dtype=x.dtype, device=x.device)
    s = x @ y.T                                                          # (K, K) all pairwise scores
    fwd = s - margin * eye                                               # margin on the true pairs only
    bwd = s.T - margin * eye                                             # (K, K) rows: targets, columns: sources
    if y_hard is not None and len(y_hard):
        fwd = torch.cat([fwd, x @ y_hard.T], dim=1)                      # (K, K + H)
    if x_hard is not None and len(x_hard):
        bwd = torch.cat([bwd, y @ x_hard.T], dim=1)                      # (K, K + H)
    fwd, bwd = scale * fwd, scale * bwd
    if fwd_mask is not None:
        fwd = fwd.masked_fill(fwd_mask[:, : fwd.shape[1]], float("-inf"))
    if bwd_mask is not None:
        bwd = bwd.masked_fill(bwd_mask[:, : bwd.shape[1]], float("-inf"))
    gold = torch.arange(K, device=x.device)
    j_fwd = F.cross_entropy(fwd, gold)                                   # -1/K sum_i log p(y_i | x_i), Eq. 1
    j_bwd = F.cross_entropy(bwd, gold)                                   # -1/K sum_i log p(x_i | y_i)
    parts = {"loss_fwd": float(j_fwd.detach()), "loss_bwd": float(j_bwd.detach()),
             "acc_fwd": float((fwd.detach().argmax(1) == gold).float().mean()),
             "acc_bwd": float((bwd.detach().argmax(1) == gold).float().mean())}
    return j_fwd + j_bwd, parts


def duplicate_mask(ids: torch.Tensor, k: int) -> torch.Tensor:
    """``(K, K + H)`` True where candidate j has the same text id as row i's true partner, j != i."""
    same = ids[:k, None] == ids[None, :]                                 # (K, K + H)
    same[:, :k].fill_diagonal_(False)
    return same


def ranking_term(oc: dict):
    """``objectives.ranking`` x J (Eq. 2) of one sub-batch, on normalised outputs, duplicates masked."""
    w = float(oc["ranking"])

    def term(sb: DualSubBatch, x, y, x_hard, y_hard) -> tuple[torch.Tensor, dict[str, float]]:
        if sb.mono:                                                      # no translations to rank
            return x.new_zeros(()), {}
        j, p = ranking_loss(F.normalize(x, dim=-1), F.normalize(y, dim=-1), scale=oc["scale"], margin=oc["margin"],
                            x_hard=F.normalize(x_hard, dim=-1), y_hard=F.normalize(y_hard, dim=-1),
                            fwd_mask=duplicate_mask(sb.tgt_text_ids, sb.k),
                            bwd_mask=duplicate_mask(sb.src_text_ids, sb.k))
        return w * j, {f"rank_{sb.name}": float(j.detach()), f"acc_{sb.name}": (p["acc_fwd"] + p["acc_bwd"]) / 2}

    return term


def setup(recipe: dict, bitexts: list[Bitext], monos: list[Monotext], dev: list[Bitext], out_dir: Path, *,
          state: dict | None, device: torch.device) -> Setup:
    """A dual encoder trained on the ranking loss alone (:func:`.dual.setup`)."""
    return dual.setup(recipe, bitexts, monos, dev, out_dir, state=state, device=device,
                      terms=[ranking_term(recipe["objectives"])])
