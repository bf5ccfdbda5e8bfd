"""Teacher-student distillation (Reimers & Gurevych 2020): both sides of a pair map onto the teacher's source vector.

For a pair (x, y) with x in a language the teacher knows well, T(x) its
(unit) teacher embedding and f the student:

    L_distill = 1/2 ( d(f(x), T(x)) + d(f(y), T(x)) )

with d the squared Euclidean distance ``||f(.) - T(x)||^2`` of f's raw
output (``distill_loss: mse``: the paper's mean squared error times D, so
that the gradients do not shrink with D towards Adam's epsilon; f also
learns unit length) or ``1 - cos`` (``cosine``), averaged over the K pairs. The student thus inherits the teacher's geometry
on the source language and is pulled to put translations on the same
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

    L = distill * L_distill + ranking * J
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F

from ..data import Bitext, DualSubBatch, Monotext
from ..teacher import fill_cache, teacher_embeddings
from . import Setup, dual
from .guo2019 import ranking_term


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
    terms = ([ranking_term(oc)] if oc["ranking"] > 0 else []) + [distill_term(oc)]
    return dual.setup(recipe, bitexts, monos, dev, out_dir, state=state, device=device, terms=terms,
                      teachers=teachers or None, mono_teachers=mono_teachers if monos else None,
                      info={"teacher": reports, **({"teacher_fill": filled} if filled else {})})
