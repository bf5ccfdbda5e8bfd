"""Optimisers of the training loop: Adam for dense parameters, :class:`RowAdam` for hashed tables.

``make_optimizers(model, recipe["optim"])`` splits the parameters into the two
groups; :func:`set_lr` applies the warm-up schedule (:func:`lr_at`) to every
group, scaled by the group's ``lr_mult``.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import torch


class RowAdam(torch.optim.Optimizer):
    """Adam for tables with row-sparse gradients ("lazy" Adam, as ``torch.optim.SparseAdam``): only the
    rows in a step's gradient move, and only their moments decay.

    SparseAdam's update without its sparse-tensor arithmetic. A float32 table on
    the CPU is updated by one compiled pass over its rows (:func:`_row_adam_update`);
    any other (a GPU's, or with ``fused=False``) by dense row gathers and scatters
    (``index_select`` / ``index_copy_``). Both are faster than SparseAdam on a CPU
    (``python benchmarks/table_optimiser.py``). One difference: epsilon is added
    to the bias-corrected root, as ``torch.optim.Adam`` adds it; SparseAdam adds it
    before the correction, which matters only where a gradient is within a few
    hundred epsilons of 0. State per parameter: ``step`` (int), ``exp_avg``, ``exp_avg_sq``.
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, *, fused: bool = True):
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps})
        self.fused = fused

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                rows, vals = _distinct_rows(p.grad)                                   # (U,), (U, E)
                st = self.state[p]
                if not st:
                    st["step"] = 0
                    st["exp_avg"] = torch.zeros_like(p)
                    st["exp_avg_sq"] = torch.zeros_like(p)
                st["step"] += 1
                bc1, bc2 = 1 - b1 ** st["step"], 1 - b2 ** st["step"]
                if (self.fused and p.device.type == "cpu" and p.dtype == vals.dtype == torch.float32
                        and p.is_contiguous()):
                    _row_adam_update(p.detach().numpy(), st["exp_avg"].numpy(), st["exp_avg_sq"].numpy(),
                                     rows.contiguous().numpy(), vals.contiguous().numpy(), group["lr"] / bc1, b1, b2,
                                     math.sqrt(bc2), group["eps"])
                    continue
                m = st["exp_avg"].index_select(0, rows).mul_(b1).add_(vals, alpha=1 - b1)
                v = st["exp_avg_sq"].index_select(0, rows).mul_(b2).addcmul_(vals, vals, value=1 - b2)
                st["exp_avg"].index_copy_(0, rows, m)
                st["exp_avg_sq"].index_copy_(0, rows, v)
                update = m.div_(v.sqrt_().div_(math.sqrt(bc2)).add_(group["eps"])).mul_(group["lr"] / bc1)
                p.index_add_(0, rows, update, alpha=-1.0)
        return None


def _distinct_rows(grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The rows of a table's gradient and their summed values, each row once: ``(U,)`` int64, ``(U, E)``.

    A sparse gradient whose rows already increase strictly (the DAN looks up each
    distinct row once, in order) is used as it is; any other is coalesced (its
    repeated rows summed, as SparseAdam does)."""
    if not grad.is_sparse:
        grad = grad.to_sparse(1)
    if not grad.is_coalesced():
        rows = grad._indices()[0]
        if len(rows) < 2 or bool((rows[1:] > rows[:-1]).all()):
            return rows, grad._values()
        grad = grad.coalesce()
    return grad.indices()[0], grad.values()


@numba.njit(nogil=True, cache=True)
def _row_adam_update(table, exp_avg, exp_avg_sq, rows, grads, step_size, b1, b2, sqrt_bc2, eps):
    """One Adam step on the rows ``rows`` (U,) of ``table`` (N, E) with gradients ``grads`` (U, E), in place,
    with the moments ``exp_avg`` / ``exp_avg_sq`` (N, E): one pass over each row, no temporaries.

    ``step_size`` = lr / (1 - b1^t), ``sqrt_bc2`` = sqrt(1 - b2^t). The torch
    path of :meth:`RowAdam.step` makes nine passes over (U, E) temporaries and
    gathers and scatters each moment; on one CPU thread that was half of a
    training step of the general student."""
    one = np.float32(1.0)
    b1, b2, step_size, eps = np.float32(b1), np.float32(b2), np.float32(step_size), np.float32(eps)
    c1, c2, inv_sqrt_bc2 = one - b1, one - b2, one / np.float32(sqrt_bc2)    # float32 arithmetic, as torch's
    for i in range(rows.shape[0]):
        r = rows[i]
        p, m, v, g = table[r], exp_avg[r], exp_avg_sq[r], grads[i]          # (E,) views
        for j in range(p.shape[0]):
            m[j] = b1 * m[j] + c1 * g[j]
            v[j] = b2 * v[j] + c2 * g[j] * g[j]
            p[j] -= step_size * m[j] / (math.sqrt(v[j]) * inv_sqrt_bc2 + eps)


def make_optimizers(model: torch.nn.Module, oc: dict) -> list[torch.optim.Optimizer]:
    """Adam over the dense parameters; :class:`RowAdam` (learning rate x ``optim.embed_lr_mult``, no
    weight decay) over the hashed embedding tables a model lists in ``sparse_parameters()`` (their
    gradients are row-sparse). Gradient clipping applies to the dense parameters only."""
    sparse = list(getattr(model, "sparse_parameters", lambda: [])())
    ids = {id(p) for p in sparse}
    dense = [p for p in model.parameters() if id(p) not in ids and p.requires_grad]
    opts = [torch.optim.Adam(dense, lr=oc["lr"], betas=tuple(oc["betas"]), eps=oc["eps"],
                             weight_decay=oc["weight_decay"])]
    if sparse:
        mult = float(oc.get("embed_lr_mult", 1.0))
        opts.append(RowAdam(sparse, lr=oc["lr"] * mult, betas=tuple(oc["betas"]), eps=oc["eps"]))
        opts[-1].param_groups[0]["lr_mult"] = mult
    return opts


def lr_at(oc: dict, step: int) -> float:
    """Learning rate of step ``step`` (0-based): linear warm-up over ``optim.warmup_steps``, then constant."""
    w = oc["warmup_steps"]
    return oc["lr"] * min(1.0, (step + 1) / w) if w else oc["lr"]


def set_lr(opts: list[torch.optim.Optimizer], lr: float) -> None:
    for o in opts:
        for g in o.param_groups:
            g["lr"] = lr * g.get("lr_mult", 1.0)
