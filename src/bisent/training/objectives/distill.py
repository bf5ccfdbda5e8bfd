"""Teacher-student distillation (Reimers & Gurevych 2020): both sides of a pair map onto the teacher's source vector.

For a pair (x, y) with x in a language the teacher knows well, T(x) its
(unit) teacher embedding and f the student:

    L_distill = 1/2 ( d(f(x), T(x)) + d(f(y), T(x)) )

with d the squared Euclidean distance ``||f(.) - T(x)||^2`` of f's raw
output (``distill_loss: mse``: the paper's mean squared error times D, so
that the gradients do not shrink with D towards Adam's epsilon; f also
learns unit length) or ``1 - cos`` (``cosine``), averaged over the K pairs. The student thus inherits the teacher's
geometry on the source language and is pulled to put translations on the same
point; its own architecture can be anything in :mod:`bisent.models.dual`,
chosen for speed (a DAN runs at thousands of sentences/s on one core).

Monolingual text (``--mono``, any language the teacher covers) adds one
stream per language with the same loss on the text alone,
``d(f(x), T(x))`` (Reimers & Gurevych's student(x) ~ teacher(x) for every
language the teacher knows; batch share ``data.mono_weight`` per language
against one language pair), so a student can learn a language or a domain
it has no bitext for.

The teacher rows are computed once per sentence by the teacher's
``encode`` (:mod:`bisent.training.teacher`), which uses the persistent
embedding cache: a second run is free. ``objectives.ranking > 0`` adds the
Guo et al. ranking loss (:mod:`.guo2019`, Eq. 1-2) on the same batch:

    L = distill * L_distill + ranking * J + contrast * C

``objectives.contrast > 0`` adds a teacher-contrastive term C on every
sub-batch, monolingual ones and word lists included: with s
(``contrast_scale``) and cosines,

    C = -1/K sum_i log e^{s cos(f(x_i), T(x_i))} / sum_j e^{s cos(f(x_i), T(x_j))}

(and the same for f(y_i) of a translation, against the sources' rows). The
squared distance pulls f(x) onto T(x) with no regard for the other texts;
retrieval needs f(x) nearer T(x) than any other text's T, which is what C
asks (contrastive representation distillation, Tian et al. 2020). Rows of
the same text are not negatives. In-batch negatives are mostly far apart;
``contrast_hard`` adds the teacher rows of near ones: a pair's mined hard
sources as extra columns, and in a monolingual stream each text's nearest
other text by the teacher as H extra texts (rows and columns).
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F

from ..data import Bitext, DualSubBatch, Monotext
from ..teacher import fill_cache, teacher_embeddings
from . import Setup, dual
from .dual import RECIPE_SECTIONS, check_recipe  # noqa: F401  the dual objectives' keys and rules
from .guo2019 import duplicate_mask, ranking_term


def distill_loss(student_src: torch.Tensor, student_tgt: torch.Tensor, teacher: torch.Tensor,
                 kind: str = "mse") -> torch.Tensor:
    """``(K, D)`` raw student outputs of sources and targets, ``(K, D)`` unit teacher rows of the sources -> scalar."""
    if kind == "mse":
        d_src = (student_src - teacher).pow(2).sum(dim=-1).mean()        # mean over K of ||.||^2 (D x MSE)
        d_tgt = (student_tgt - teacher).pow(2).sum(dim=-1).mean()
    elif kind == "cosine":
        d_src = (1 - F.cosine_similarity(student_src, teacher, dim=-1)).mean()
        d_tgt = (1 - F.cosine_similarity(student_tgt, teacher, dim=-1)).mean()
    else:
        raise ValueError(f"unknown distillation loss {kind!r}")
    return (d_src + d_tgt) / 2


def contrast_loss(student: torch.Tensor, teacher: torch.Tensor, *, scale: float = 20.0,
                  mask: torch.Tensor | None = None) -> torch.Tensor:
    """``(K, D)`` raw student outputs, ``(M, D)`` teacher rows, M >= K (row i: the text student row i must find;
    the rest extra negatives) -> scalar cross-entropy of finding row i's teacher row among the M by cosine at
    ``scale``; ``mask`` ``(K, M)`` True where a column is not a negative (the same text), never the diagonal."""
    logits = scale * F.normalize(student, dim=-1) @ F.normalize(teacher, dim=-1).T       # (K, M)
    if mask is not None:
        logits = logits.masked_fill(mask, float("-inf"))
    return F.cross_entropy(logits, torch.arange(len(logits), device=logits.device))


def contrast_term(oc: dict):
    """``objectives.contrast`` x the teacher-contrastive loss of one sub-batch (sources and, for a translation,
    targets against the sources' teacher rows)."""
    w, scale = float(oc["contrast"]), float(oc["contrast_scale"])

    def term(sb: DualSubBatch, x, y, x_hard, y_hard) -> tuple[torch.Tensor, dict[str, float]]:
        t = sb.teacher if sb.teacher_hard is None else torch.cat([sb.teacher, sb.teacher_hard])    # (K [+ H], D)
        if sb.mono:                                                      # every text a row: K (+ H hard ones)
            mask = duplicate_mask(sb.src_text_ids, len(sb.src_text_ids))   # (K + H, K + H): the same text
            c = contrast_loss(torch.cat([x, x_hard]), t, scale=scale, mask=mask)
        else:                                                            # sources, then targets, vs the sources' rows
            mask = duplicate_mask(sb.src_text_ids, sb.k)[:, : len(t)]                    # (K, K [+ H])
            c = (contrast_loss(x, t, scale=scale, mask=mask) + contrast_loss(y, t, scale=scale, mask=mask)) / 2
        return w * c, {f"contrast_{sb.name}": float(c.detach())}

    return term


def distill_term(oc: dict):
    """``objectives.distill`` x the teacher loss of one sub-batch (raw student outputs vs unit teacher rows)."""
    w = float(oc["distill"])

    def term(sb: DualSubBatch, x, y, x_hard, y_hard) -> tuple[torch.Tensor, dict[str, float]]:
        d = distill_loss(x, y, sb.teacher, oc["distill_loss"])
        return w * d, {f"distill_{sb.name}": float(d.detach())}

    return term


def setup(recipe: dict, bitexts: list[Bitext], monos: list[Monotext], dev: list[Bitext], out_dir: Path, *,
          state: dict | None, device: torch.device) -> Setup:
    """A dual-encoder student of the teacher's rows of every source sentence (persistent cache: computed
    once, across runs), plus the ranking loss when ``objectives.ranking > 0`` (:func:`.dual.setup`)."""
    oc = recipe["objectives"]
    teachers, mono_teachers, reports = [], [], []
    pair_specs = dual.pair_specs(bitexts, recipe) if bitexts else []
    mono_specs = dual.mono_specs(monos, recipe)
    filled = fill_cache(oc["teacher"], [(s.src, s.src_lang) for s in pair_specs + mono_specs],
                        workers=oc["teacher_workers"], batch_size=oc["teacher_batch"])  # many cores: in parallel
    for spec in pair_specs:
        vecs, rep = teacher_embeddings(oc["teacher"], spec.src, spec.src_lang, batch_size=oc["teacher_batch"])
        teachers.append(torch.from_numpy(vecs))                              # (N, D_teacher)
        reports.append(rep)
    for spec in mono_specs:                                                  # student(x) ~ teacher(x), any language
        vecs, rep = teacher_embeddings(oc["teacher"], spec.src, spec.src_lang, batch_size=oc["teacher_batch"])
        mono_teachers.append(torch.from_numpy(vecs))                         # (N, D_teacher)
        reports.append(rep)
    terms = (([ranking_term(oc)] if oc["ranking"] > 0 else []) + [distill_term(oc)]
             + ([contrast_term(oc)] if oc["contrast"] > 0 else []))
    return dual.setup(recipe, bitexts, monos, dev, out_dir, state=state, device=device, terms=terms,
                      teachers=teachers or None, mono_teachers=mono_teachers if monos else None,
                      info={"teacher": reports, **({"teacher_fill": filled} if filled else {})})
