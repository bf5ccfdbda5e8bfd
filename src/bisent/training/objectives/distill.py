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

The teacher rows are computed once per sentence by the teacher's
``encode`` (:mod:`bisent.training.teacher`), which uses the persistent
embedding cache: a second run is free. ``objectives.ranking > 0`` adds the
Guo et al. ranking loss (:mod:`.guo2019`, Eq. 1-2) on the same batch:

    L = distill * L_distill + ranking * J
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .guo2019 import setup  # noqa: F401  the same dual-encoder set-up; the recipe's weights pick the losses


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
