"""Optimisers of the training loop: Adam for dense parameters, :class:`RowAdam` for hashed tables.

``make_optimizers(model, recipe["optim"])`` splits the parameters into the two
groups; :func:`set_lr` applies the warm-up schedule (:func:`lr_at`) to every
group, scaled by the group's ``lr_mult``.
"""

from __future__ import annotations

import math

import torch


class RowAdam(torch.optim.Optimizer):
    """Adam for tables with row-sparse gradients ("lazy" Adam, as ``torch.optim.SparseAdam``): only the
    rows in a step's gradient move, and only their moments decay.

    SparseAdam's update, written with dense row gathers and scatters
    (``index_select`` / ``index_copy_``), which on a CPU are faster than
    SparseAdam's sparse-tensor arithmetic (``python benchmarks/table_optimiser.py``).
    One difference: epsilon is added to the bias-corrected root, as
    ``torch.optim.Adam`` adds it; SparseAdam adds it before the correction,
    which matters only where a gradient is within a few hundred epsilons of 0.
    State per parameter: ``step`` (int), ``exp_avg``, ``exp_avg_sq``.
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8):
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad.coalesce() if p.grad.is_sparse else p.grad.to_sparse(1).coalesce()
                rows, vals = g.indices()[0], g.values()                        # (U,), (U, E): distinct rows
                st = self.state[p]
                if not st:
                    st["step"] = 0
                    st["exp_avg"] = torch.zeros_like(p)
                    st["exp_avg_sq"] = torch.zeros_like(p)
                st["step"] += 1
                m = st["exp_avg"].index_select(0, rows).mul_(b1).add_(vals, alpha=1 - b1)
                v = st["exp_avg_sq"].index_select(0, rows).mul_(b2).addcmul_(vals, vals, value=1 - b2)
                st["exp_avg"].index_copy_(0, rows, m)
                st["exp_avg_sq"].index_copy_(0, rows, v)
                bc1, bc2 = 1 - b1 ** st["step"], 1 - b2 ** st["step"]
                update = m.div_(v.sqrt_().div_(math.sqrt(bc2)).add_(group["eps"])).mul_(group["lr"] / bc1)
                p.index_add_(0, rows, update, alpha=-1.0)
        return None


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
