"""The training loop: one function, read top to bottom (nanoGPT style).

``train(recipe, bitexts, monos, dev, out_dir)``:

1. the recipe's objective (``objectives/<objective>.py``) sets the run up
   (:class:`bisent.training.objectives.Setup`): data batches, the model from a
   fixed seed, the loss, the model as an Encoder for the dev figures, how to
   write the model directory;
2. Adam, and :class:`~bisent.training.optim.RowAdam` for a model's hashed
   embedding tables (:mod:`bisent.training.optim`); resuming restores
   model, optimisers, data position and RNG from the checkpoint
   (:mod:`bisent.training.checkpoint`), so the loss curve continues exactly as
   if the run had never stopped;
3. every step: one mixed batch, loss (a non-finite loss stops the run with
   an error naming the step; the last checkpoint stays), backward, clip,
   step; or, for an objective with a step hook (``Setup.step``: Zhang 2016's
   L-BFGS iteration on the whole corpus), that step, with no optimiser here;
   every ``log_every`` steps a JSON line in ``train_log.jsonl``; every
   ``eval_every`` steps the dev figures (:func:`bisent.evaluate.evaluate_dev`);
   every ``checkpoint_every`` steps (and at the end) a checkpoint and the model directory.
   On a CPU the loop runs inside :func:`~bisent.training.heap.keep_freed_memory`
   (``train.keep_freed_memory``): each step's large row buffers reuse the last
   step's memory instead of fresh pages from the kernel.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..errors import BisentError
from ..evaluate import evaluate_dev
from ..models.modeldir import WEIGHTS_FILE
from ..models.tokenizer import Tokenizer
from ..progress import progress_bar
from . import checkpoint
from .data import Bitext, Monotext
from .heap import keep_freed_memory
from .objectives import get_objective
from .optim import lr_at, make_optimizers, set_lr
from .runlog import RunLog

LOG_FILE = "train_log.jsonl"


@dataclass
class TrainResult:
    """What :func:`train` leaves behind: the model directory, the module, its tokenizer, the log."""

    model_dir: Path
    model: torch.nn.Module
    tokenizer: Tokenizer | None
    step: int
    log: list[dict] = field(default_factory=list)


def train(recipe: dict, bitexts: list[Bitext], monos: list[Monotext] | None = None, dev: list[Bitext] | None = None,
          out_dir=None, *, resume: bool = False, max_steps: int | None = None, max_minutes: float | None = None,
          progress: bool | None = None, init=None) -> TrainResult:
    """Train the recipe's architecture on ``bitexts`` (+ ``monos``), evaluate on ``dev``, write ``out_dir``.

    ``max_steps`` / ``max_minutes`` override the recipe's ``train`` section
    (the minutes count this call only). With ``resume=True`` the run continues
    from ``out_dir``'s checkpoint and must use the same recipe and data. ``init``: a model directory whose
    weights a new run starts from (:func:`.checkpoint.init_weights`; any data, the same model).
    """
    if init is not None and resume:
        raise BisentError("--init starts a new run from a model's weights; --resume continues one: choose one")
    if init is not None and getattr(get_objective(recipe.get("objective") or recipe["architecture"]), "OWN_STEP",
                                    False):
        raise BisentError(f"--init: the {recipe.get('objective') or recipe['architecture']} objective "
                          "cannot start from a model directory (its word vectors are its corpus's own)")
    t_start = time.monotonic()
    out_dir = Path(out_dir)
    arch, tr, oc = recipe["architecture"], recipe["train"], recipe["optim"]
    max_steps = tr["max_steps"] if max_steps is None else max_steps
    max_minutes = tr["max_minutes"] if max_minutes is None else max_minutes
    state = checkpoint.open_run(out_dir, resume)                     # the checkpoint's state when resuming
    device = pick_device(tr)

    # 1. data, tokenizer (if any), model: the objective's set-up
    objective = recipe.get("objective") or arch
    run = get_objective(objective).setup(recipe, list(bitexts), list(monos or []), list(dev or []), out_dir,
                                         state=state, device=device)
    model, batches = run.model, run.batches
    init_info = checkpoint.init_weights(model, init, recipe) if init is not None else {}

    # 2. optimisers (none when the objective steps itself: Setup.step); a resumed run continues from its checkpoint
    opts = make_optimizers(model, oc) if run.step is None else []
    step, elapsed_before = checkpoint.resume(state, recipe, run, opts, out_dir) if state is not None else (0, 0.0)
    log = RunLog(out_dir / LOG_FILE, step)

    def save(at: int) -> None:                                        # a checkpoint, then the model directory
        checkpoint.save(out_dir, run, opts, recipe, step=at, elapsed_s=elapsed_before + time.monotonic() - t_start)
        run.save_model(out_dir, at)

    if state is None:
        log.write({"step": 0, "event": "start", "architecture": arch, "objective": objective, "device": str(device),
               "params": sum(p.numel() for p in model.parameters()), **init_info, **run.info,
                   "streams": batches.describe()})

    # 3. the loop
    clip = oc["clip"] if oc.get("clip") is not None else math.inf
    window: list[dict] = []                                           # the steps since the last log line
    t_log, last_saved = time.monotonic(), step
    bar = progress_bar(progress, total=max_steps, initial=step, desc=f"train {arch}", unit="step")
    try:
        with keep_freed_memory(tr["keep_freed_memory"] and device.type == "cpu"):   # training/heap.py
            while step < max_steps:
                if max_minutes is not None and time.monotonic() - t_start > max_minutes * 60:
                    log.write({"step": step, "event": "time limit", "max_minutes": max_minutes})
                    break
                if run.step is None:
                    set_lr(opts, lr_at(oc, step))
                    batch = [sb.to(device) for sb in next(batches)]        # list of sub-batches, one per stream
                    parts = _optimise(run, batch, opts, clip, step + 1, last_saved)
                else:                                                      # the objective's own step (zhang2016)
                    parts = _own_step(run, step, last_saved)
                step += 1
                rec: dict = dict((run.on_step(step) if run.on_step is not None else None) or {})
                window.append(parts)
                bar.update(1)
                if step % tr["log_every"] == 0 or step == max_steps:
                    rec = {"step": step, **_mean(window), **({"lr": lr_at(oc, step - 1)} if opts else {}),
                           "steps_per_s": len(window) / max(time.monotonic() - t_log, 1e-9),
                           "elapsed_s": round(elapsed_before + time.monotonic() - t_start, 2), **rec}
                    bar.set_postfix(loss=f"{rec['loss']:.3f}")
                    window, t_log = [], time.monotonic()
                if run.dev and (step % tr["eval_every"] == 0 or step == max_steps):
                    rec = {"step": step, **rec, **evaluate_dev(_dev_encoder(run), run.dev, tr["dev_max"])}
                if rec:
                    log.write({"step": step, **rec})
                if step % tr["checkpoint_every"] == 0:
                    save(step)
                    last_saved = step
            # stopped early (time limit): log the last partial window and evaluate where we are
            rec = {"step": step, **_mean(window)} if window else {}
            if run.dev and step > 0 and not any(r.get("step") == step and "dev_err" in r for r in log.records[-2:]):
                rec = {"step": step, **rec, **evaluate_dev(_dev_encoder(run), run.dev, tr["dev_max"])}
            if rec:
                log.write(rec)
    finally:
        bar.close()
        log.close()
    if last_saved != step or not (out_dir / WEIGHTS_FILE).exists():
        save(step)
    model.eval()
    return TrainResult(out_dir, model, run.tokenizer, step, log.records)


def _mean(window: list[dict]) -> dict[str, float]:
    """Each field's sum over the window's steps, divided by the number of steps."""
    out: dict[str, float] = {}
    for parts in window:
        for k, v in parts.items():
            out[k] = out.get(k, 0.0) + v
    return {k: v / len(window) for k, v in out.items()}


def _optimise(run, batch: list, opts: list, clip: float, step: int, last_saved: int) -> dict:
    """One optimisation step on ``batch``: loss, backward, clip (dense parameters; sparse table gradients
    are not clipped), step. Returns the loss, its parts and the gradient norm; a non-finite loss is an error."""
    run.model.train()
    loss, parts = run.loss(run.model, batch)                           # scalar
    if not torch.isfinite(loss.detach()):
        raise BisentError(f"training: the loss is {float(loss.detach())} at step {step}; stopped (the last "
                          f"checkpoint, step {last_saved}, is kept; try a lower optim.lr or optim.clip)")
    for o in opts:
        o.zero_grad(set_to_none=True)
    loss.backward()
    gnorm = torch.nn.utils.clip_grad_norm_(opts[0].param_groups[0]["params"], clip)   # Adam's: the dense ones
    for o in opts:
        o.step()
    return {"loss": float(loss.detach()), **parts, "grad_norm": float(gnorm)}


def _own_step(run, step: int, last_saved: int) -> dict:
    """The objective's own step ``step`` (0-based, :attr:`Setup.step`); a non-finite loss is an error."""
    run.model.train()
    loss, parts = run.step(step)
    if not math.isfinite(loss):
        raise BisentError(f"training: the loss is {loss} at step {step + 1}; stopped (the last checkpoint, "
                          f"step {last_saved}, is kept; try a lower optim.lr)")
    return {"loss": loss, **parts}


def _dev_encoder(run):
    """The encoder for the dev figures: ``run.encoder``, or one built at the current weights."""
    return run.dev_encoder() if run.dev_encoder is not None else run.encoder


def pick_device(tr: dict) -> torch.device:
    """The recipe's ``train.device``; sets ``train.threads`` (the same count when resuming, for identical sums)."""
    if tr["threads"]:
        torch.set_num_threads(tr["threads"])
    name = tr["device"]
    if name == "cuda" and not torch.cuda.is_available():
        raise BisentError("train.device: cuda requested but torch sees no GPU")
    return torch.device("cuda" if name == "cuda" or (name == "auto" and torch.cuda.is_available()) else "cpu")
