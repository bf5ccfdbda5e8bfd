"""The training loop: one function, read top to bottom (nanoGPT style).

``train(recipe, bitexts, monos, dev, out_dir)``:

1-3. the recipe's objective (``objectives/<objective>.py``) sets the run up
   (:class:`Setup`): data batches, the model from a fixed seed, the model
   as an :class:`Encoder` for the dev error, how to write the model directory.
   Sequence-to-sequence objectives (kim2019, artetxe2019) use
   :func:`seq2seq_setup` here: a joint SentencePiece model ->
   ``tokenizer.model``, the objective's streams in a seeded, length-bucketed
   :class:`BatchIterator`. Dual-encoder objectives (guo2019, distill) bring
   their own ``setup``;
   then Adam (:class:`RowAdam` for a model's hashed embedding tables), gradient clipping;
4. every step: one mixed batch, loss, backward, clip, step; every
   ``log_every`` steps a JSON line in ``train_log.jsonl``; every
   ``eval_every`` steps the dev alignment-recovery error both ways; every
   ``checkpoint_every`` steps (and at the end) a checkpoint and the model directory.

A checkpoint is ``checkpoint.safetensors`` (model weights, Adam's moments
flattened to tensors, RNG states, the objective's own state such as mined
hard negatives) + ``checkpoint.json`` (step, recipe, data position,
optimiser hyper-parameters). Resuming restores all of it, so the loss curve
continues exactly as if the run had never stopped.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
from tqdm.auto import tqdm

from ..errors import BisentError
from ..io import atomic_write
from ..encoders.base import Encoder
from ..models.rnn import Seq2SeqEncoder, build_model, init_from_word_vectors, save_model_dir
from .data import Bitext, BatchIterator, Monotext, all_text, fingerprint
from .objectives import get_objective
from .tokenizer import FILENAME as TOKENIZER_FILE
from .tokenizer import Tokenizer, train_tokenizer

LOG_FILE = "train_log.jsonl"
CKPT_TENSORS = "checkpoint.safetensors"
CKPT_STATE = "checkpoint.json"
#: recipe sections that change the numbers; a resumed run must agree on all of them
_MATH_KEYS = ("architecture", "objective", "seed", "languages", "tokenizer", "data", "model", "objectives", "optim")


@dataclass
class TrainResult:
    """What :func:`train` leaves behind: the model directory, the module, its tokenizer, the log."""

    model_dir: Path
    model: torch.nn.Module
    tokenizer: Tokenizer | None
    step: int
    log: list[dict] = field(default_factory=list)


@dataclass
class Setup:
    """What an objective hands the loop: everything that differs between model families.

    ``batches`` yields one batch per step (a list of sub-batches with ``.to(device)``)
    and has ``state_dict`` / ``load_state_dict`` / ``describe``; ``loss(model, batch)``
    returns ``(scalar, {name: float})``; ``save_model(out_dir, step)`` writes the
    model directory; ``fingerprints`` are artefacts a resumed run must find
    unchanged (the tokenizer); ``on_step(step)`` runs after each optimiser step
    and may return log fields; ``state()`` / ``load_state(tensors)`` carry the
    objective's own state through checkpoints (mined hard negatives).
    """

    model: torch.nn.Module
    batches: Any
    loss: Callable[[torch.nn.Module, Any], tuple[torch.Tensor, dict[str, float]]]
    encoder: Encoder
    save_model: Callable[[Path, int], None]
    data_hash: str
    dev: list[Bitext]
    info: dict = field(default_factory=dict)
    fingerprints: dict[str, str] = field(default_factory=dict)
    tokenizer: Tokenizer | None = None
    on_step: Callable[[int], dict | None] | None = None
    state: Callable[[], dict[str, torch.Tensor]] | None = None
    load_state: Callable[[dict[str, torch.Tensor]], None] | None = None


# --- evaluation ------------------------------------------------------------------------------------

def recovery_error(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """Alignment recovery on unit rows ``a`` (n, d), ``b`` (n, d) where row i of each is a pair.

    Returns ``(error a->b, error b->a, cosine gap)``: the share of rows whose
    nearest neighbour by cosine on the other side is not their pair, both
    ways, and mean cos of pairs minus mean cos of all (a cheap spread measure).
    """
    sim = a @ b.T                                                    # (n, n) cosines
    gold = np.arange(len(a))
    err_ab = float(np.mean(sim.argmax(axis=1) != gold))
    err_ba = float(np.mean(sim.argmax(axis=0) != gold))
    return err_ab, err_ba, float(np.mean(np.diag(sim)) - np.mean(sim))


def unique_pairs(pairs: list[tuple[str, str]], limit: int) -> list[tuple[str, str]]:
    """First ``limit`` pairs whose source and target are both unseen so far (duplicates make recovery ambiguous)."""
    seen_a, seen_b, out = set(), set(), []
    for a, b in pairs:
        if a not in seen_a and b not in seen_b:
            seen_a.add(a)
            seen_b.add(b)
            out.append((a, b))
            if len(out) == limit:
                break
    return out


def evaluate_dev(encoder: Encoder, dev: list[Bitext], limit: int) -> dict[str, float]:
    """Dev alignment-recovery error both ways and mining F1 per language pair, and their means (``dev_err``, ``dev_mine_f1``)."""
    out: dict[str, float] = {}
    errs, f1s = [], []
    for bt in dev:
        pairs = unique_pairs(bt.pairs, limit)
        if len(pairs) < 2:
            continue
        a = encoder.encode([p[0] for p in pairs], bt.src_lang, cache=False, progress=False)  # (n, D)
        b = encoder.encode([p[1] for p in pairs], bt.tgt_lang, cache=False, progress=False)  # (n, D)
        e_ab, e_ba, gap = recovery_error(a, b)
        s, t = bt.src_lang, bt.tgt_lang
        out.update({f"dev_err_{s}_{t}": e_ab, f"dev_err_{t}_{s}": e_ba, f"dev_cos_gap_{s}_{t}": gap, f"dev_n_{s}_{t}": len(pairs)})
        errs += [e_ab, e_ba]
        f1 = dev_mining_f1(encoder, bt, pairs)
        if f1 is not None:
            out[f"dev_mine_f1_{s}_{t}"] = f1
            f1s.append(f1)
    if errs:
        out["dev_err"] = float(np.mean(errs))
    if f1s:
        out["dev_mine_f1"] = float(np.mean(f1s))
    return out


@dataclass
class _DevPair:
    doc: str
    src: str
    tgt: str
    split: str = "dev"


def dev_mining_f1(encoder: Encoder, bt: Bitext, pairs: list[tuple[str, str]], block: int = 10) -> float | None:
    """Mining F1 (in %) on a BUCC-like task built from dev ``pairs``: ratio margin, k=4, max retrieval, best threshold.

    The task (about a quarter of each side has its translation on the other) is
    built by :func:`bisent.datasets.comparable.make_mining_task` from blocks of
    ``block`` consecutive pairs standing in for documents (dev files are in
    document order). The threshold is the dev optimum, the same one the mining
    benchmark tunes on dev before it scores test. ``None`` when too few pairs.
    """
    from ..datasets.comparable import make_mining_task
    from ..evaluate import best_threshold
    from ..mining import retrieve
    from ..scoring import Scorer

    if len(pairs) < 4 * block:
        return None
    task = make_mining_task([_DevPair(f"d{i // block}", a, b) for i, (a, b) in enumerate(pairs)], "dev",
                            src_lang=bt.src_lang, tgt_lang=bt.tgt_lang)
    x = encoder.encode([t for _, t in task.src], bt.src_lang, cache=False, progress=False)   # (n_src, D)
    y = encoder.encode([t for _, t in task.tgt], bt.tgt_lang, cache=False, progress=False)   # (n_tgt, D)
    cands = Scorer("ratio", 4).fit(y).score(x)
    mined = [(p.score, task.src[p.src][0], task.tgt[p.tgt][0]) for p in retrieve(cands, "max")]
    return round(100 * best_threshold(mined, set(task.gold)).f1, 2)


# --- checkpoints -----------------------------------------------------------------------------------

class RowAdam(torch.optim.Optimizer):
    """Adam for tables with row-sparse gradients ("lazy" Adam, as ``torch.optim.SparseAdam``): only the
    rows in a step's gradient move, and only their moments decay.

    The same update as SparseAdam, written with dense row gathers and
    scatters (``index_select`` / ``index_copy_``), which on a CPU is several
    times faster than SparseAdam's sparse-tensor arithmetic for a hashed table
    of 2^18 rows. State per parameter: ``step`` (int), ``exp_avg``, ``exp_avg_sq``.
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


def _optim_prefix(j: int) -> str:
    return "optim" if j == 0 else f"optim{j}"


def save_checkpoint(out_dir: Path, *, step: int, model, opt, batches, recipe: dict,
                    data_hash: str, tok: Tokenizer | None = None, elapsed_s: float,
                    fingerprints: dict[str, str] | None = None, extra: dict[str, torch.Tensor] | None = None) -> None:
    """Write ``checkpoint.safetensors`` then ``checkpoint.json`` (the JSON names the tensors' hash).

    ``opt`` is one optimiser or a list (their tensors are ``optim.*``, ``optim1.*``, ...);
    ``extra`` are the objective's own tensors (stored as ``extra.NAME``).
    """
    from safetensors.torch import save

    opts = opt if isinstance(opt, (list, tuple)) else [opt]
    tensors: dict[str, torch.Tensor] = {f"model.{k}": v for k, v in model.state_dict().items()}
    optim_json = []
    for j, o in enumerate(opts):
        opt_state = o.state_dict()
        scalars: dict[str, dict] = {}
        for i, st in opt_state["state"].items():                    # Adam: step, exp_avg, exp_avg_sq per parameter
            for name, v in st.items():
                if torch.is_tensor(v):
                    tensors[f"{_optim_prefix(j)}.{i}.{name}"] = v
                else:
                    scalars.setdefault(str(i), {})[name] = v
        optim_json.append({"param_groups": opt_state["param_groups"], "scalars": scalars,
                           "n_params": len(opt_state["param_groups"][0]["params"])})
    for k, v in (extra or {}).items():
        tensors[f"extra.{k}"] = v
    tensors["rng.torch"] = torch.get_rng_state()
    if torch.cuda.is_available():
        for d, s in enumerate(torch.cuda.get_rng_state_all()):
            tensors[f"rng.cuda.{d}"] = s
    blob = save({k: v.detach().to("cpu").contiguous() for k, v in tensors.items()})
    with atomic_write(out_dir / CKPT_TENSORS, "wb") as f:
        f.write(blob)
    fp = dict(fingerprints or {})
    if tok is not None:
        fp.setdefault("tokenizer_sha256", hashlib.sha256(tok.proto).hexdigest())
    state = {
        "step": step,
        "elapsed_s": elapsed_s,
        "recipe": recipe,
        "data": batches.state_dict(),
        "data_fingerprint": data_hash,
        **fp,
        "tensors_sha256": hashlib.sha256(blob).hexdigest(),
        "optim": optim_json[0],
    }
    if len(optim_json) > 1:
        state["optim_more"] = optim_json[1:]
    with atomic_write(out_dir / CKPT_STATE) as f:
        json.dump(state, f, indent=1)


def read_checkpoint_state(out_dir: Path) -> dict:
    path = out_dir / CKPT_STATE
    if not path.is_file():
        raise BisentError(f"{path}: missing: nothing to resume in {out_dir}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BisentError(f"{path}: corrupt JSON ({e})") from None


def load_checkpoint(out_dir: Path, state: dict, *, model, opt, batches, device) -> dict[str, torch.Tensor]:
    """Restore model, optimiser states, data position and RNG states (in place); return the ``extra`` tensors."""
    from safetensors import SafetensorError
    from safetensors.torch import load

    path = out_dir / CKPT_TENSORS
    if not path.is_file():
        raise BisentError(f"{path}: missing (the checkpoint is incomplete)")
    blob = path.read_bytes()
    if hashlib.sha256(blob).hexdigest() != state.get("tensors_sha256"):
        raise BisentError(f"{path}: does not match {CKPT_STATE} (interrupted write?)")
    try:
        tensors = load(blob)
    except (SafetensorError, ValueError, RuntimeError) as e:
        raise BisentError(f"{path}: corrupt safetensors file ({e})") from None
    model.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("model.")}, strict=True)
    opts = opt if isinstance(opt, (list, tuple)) else [opt]
    saved = [state["optim"], *state.get("optim_more", [])]
    if len(saved) != len(opts):
        raise BisentError(f"{out_dir / CKPT_STATE}: {len(saved)} optimiser states, this run has {len(opts)}")
    for j, (o, js) in enumerate(zip(opts, saved)):
        opt_state: dict = {"state": {}, "param_groups": js["param_groups"]}
        prefix = _optim_prefix(j) + "."
        for k, v in tensors.items():
            if k.startswith(prefix):
                _, i, name = k.split(".", 2)
                opt_state["state"].setdefault(int(i), {})[name] = v
        for i, sc in js["scalars"].items():
            opt_state["state"].setdefault(int(i), {}).update(sc)
        o.load_state_dict(opt_state)
    batches.load_state_dict(state["data"])
    torch.set_rng_state(tensors["rng.torch"])
    cuda = [tensors[f"rng.cuda.{d}"] for d in range(torch.cuda.device_count()) if f"rng.cuda.{d}" in tensors]
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda)
    return {k[6:]: v for k, v in tensors.items() if k.startswith("extra.")}


def _check_same_run(state: dict, recipe: dict, data_hash: str, out_dir: Path) -> None:
    for key in _MATH_KEYS:
        if state["recipe"].get(key) != recipe.get(key):
            raise BisentError(f"{out_dir / CKPT_STATE}: cannot resume: the recipe's '{key}' differs from the checkpoint's")
    if state["data_fingerprint"] != data_hash:
        raise BisentError(f"{out_dir / CKPT_STATE}: cannot resume: the training data differ from the checkpoint's")


def _read_log(path: Path, upto: int) -> list[dict]:
    """Log lines up to step ``upto`` (a resumed run rewrites what came after its checkpoint)."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if rec.get("step", math.inf) <= upto:
            out.append(rec)
    return out


def pick_device(name: str) -> torch.device:
    if name == "cuda" and not torch.cuda.is_available():
        raise BisentError("train.device: cuda requested but torch sees no GPU")
    return torch.device("cuda" if name == "cuda" or (name == "auto" and torch.cuda.is_available()) else "cpu")


# --- sequence-to-sequence set-up ------------------------------------------------------------------

def seq2seq_setup(recipe: dict, bitexts: list[Bitext], monos: list[Monotext], dev: list[Bitext], out_dir: Path, *,
                  state: dict | None, device: torch.device, check: Callable[[str], None]) -> Setup:
    """Kim et al. / Artetxe & Schwenk: streams, a joint tokenizer, the seq2seq model, ``tokenizer.model``."""
    arch, seed = recipe["architecture"], recipe["seed"]
    # 1. what to train on: the paper's objective decides the streams and their ratio
    objective = get_objective(arch)
    langs = objective.languages(bitexts, recipe)
    specs = objective.build_streams(bitexts, monos, recipe)
    dev = objective.dev_pairs(dev, recipe, langs)
    data_hash = fingerprint(specs)
    check(data_hash)

    # 2. one joint tokenizer for all languages (reloaded when resuming)
    tc = recipe["tokenizer"]
    max_len = recipe["data"]["max_len"]
    if state is not None:
        tok = Tokenizer.load(out_dir / TOKENIZER_FILE, max_len)
        if hashlib.sha256(tok.proto).hexdigest() != state["tokenizer_sha256"]:
            raise BisentError(f"{out_dir / TOKENIZER_FILE}: differs from the checkpoint's tokenizer")
    else:
        tok = train_tokenizer(all_text(bitexts, monos), vocab_size=tc["vocab_size"], model_type=tc["model_type"],
                              lowercase=tc["lowercase"], character_coverage=tc["character_coverage"],
                              input_sentence_size=tc["input_sentence_size"], seed=seed, max_len=max_len)
        tok.save(out_dir / TOKENIZER_FILE)
    batches = BatchIterator(specs, tok, batch_size=recipe["data"]["batch_size"], seed=seed,
                            bucket_batches=recipe["data"]["bucket_batches"])

    # 3. the model, from a fixed seed
    torch.manual_seed(seed)
    hp = {k: v for k, v in recipe["model"].items() if k != "word_vectors"}
    model = build_model(arch, {**hp, "vocab_size": tok.vocab_size, "languages": langs}).to(device)
    init_report = {}
    if state is None and recipe["model"].get("word_vectors"):
        init_report = init_from_word_vectors(model, recipe["model"]["word_vectors"], tok.pieces(), tc["lowercase"],
                                             objective.output_languages(recipe, langs))

    def save(at_dir: Path, step: int) -> None:
        save_model_dir(model, at_dir, max_len=max_len,
                       extra={"training": {"step": step, "languages": langs, "recipe": recipe}})

    return Setup(model=model, batches=batches, loss=objective.loss,
                 encoder=Seq2SeqEncoder(model, tok, name=f"{out_dir} (training)", content_hash="training"),
                 save_model=save, data_hash=data_hash, dev=dev, tokenizer=tok,
                 fingerprints={"tokenizer_sha256": hashlib.sha256(tok.proto).hexdigest()},
                 info={"vocab_size": tok.vocab_size, "languages": langs, "word_vectors_init": init_report})


# --- the loop --------------------------------------------------------------------------------------

def train(recipe: dict, bitexts: list[Bitext], monos: list[Monotext] | None = None, dev: list[Bitext] | None = None,
          out_dir=None, *, resume: bool = False, max_steps: int | None = None, max_minutes: float | None = None,
          progress: bool | None = None) -> TrainResult:
    """Train the recipe's architecture on ``bitexts`` (+ ``monos``), evaluate on ``dev``, write ``out_dir``.

    ``max_steps`` / ``max_minutes`` override the recipe's ``train`` section
    (the minutes count this call only). With ``resume=True`` the run continues
    from ``out_dir``'s checkpoint and must use the same recipe and data.
    """
    objective = get_objective(recipe.get("objective") or recipe["architecture"])
    if hasattr(objective, "train"):                                   # a paper with its own loop (zhang2016: L-BFGS)
        return objective.train(recipe, bitexts, monos, dev, out_dir, resume=resume, max_steps=max_steps,
                               max_minutes=max_minutes, progress=progress)
    t_start = time.monotonic()
    monos, dev = list(monos or []), list(dev or [])
    out_dir = Path(out_dir)
    arch, tr, seed = recipe["architecture"], recipe["train"], recipe["seed"]
    max_steps = tr["max_steps"] if max_steps is None else max_steps
    max_minutes = tr["max_minutes"] if max_minutes is None else max_minutes
    if not resume and (out_dir / CKPT_STATE).exists():
        raise BisentError(f"{out_dir}: holds a training run already; pass --resume to continue it, or choose another -o")
    state = read_checkpoint_state(out_dir) if resume else None
    out_dir.mkdir(parents=True, exist_ok=True)
    device = pick_device(tr["device"])
    if tr["threads"]:
        torch.set_num_threads(tr["threads"])                          # same count when resuming, for identical sums

    def check(data_hash: str) -> None:
        if state is not None:
            _check_same_run(state, recipe, data_hash, out_dir)

    # 1-3. data, tokenizer (if any), model: the objective's set-up
    objective = get_objective(recipe.get("objective") or arch)
    setup_fn = getattr(objective, "setup", None) or seq2seq_setup
    run = setup_fn(recipe, bitexts, monos, dev, out_dir, state=state, device=device, check=check)
    model, batches, encoder, dev = run.model, run.batches, run.encoder, run.dev
    oc = recipe["optim"]
    opts = make_optimizers(model, oc)
    step, elapsed_before = 0, 0.0
    if state is not None:
        for key, value in run.fingerprints.items():
            if state.get(key) != value:
                raise BisentError(f"{out_dir / CKPT_STATE}: cannot resume: {key} differs from the checkpoint's")
        extra = load_checkpoint(out_dir, state, model=model, opt=opts, batches=batches, device=device)
        if run.load_state is not None:
            run.load_state(extra)
        step, elapsed_before = int(state["step"]), float(state.get("elapsed_s", 0.0))
    n_params = sum(p.numel() for p in model.parameters())
    dense_params = [p for p in opts[0].param_groups[0]["params"]]

    log_path = out_dir / LOG_FILE
    log = _read_log(log_path, step)
    with atomic_write(log_path) as f:                                 # drop lines past the checkpoint
        f.writelines(json.dumps(r) + "\n" for r in log)
    log_f = open(log_path, "a", encoding="utf-8")

    def write(rec: dict) -> None:
        log.append(rec)
        log_f.write(json.dumps(rec) + "\n")
        log_f.flush()

    if state is None:
        write({"step": 0, "event": "start", "architecture": arch, "objective": recipe.get("objective") or arch,
               "device": str(device), "params": n_params, **run.info, "streams": batches.describe()})

    def checkpoint(at: int) -> None:
        elapsed = elapsed_before + time.monotonic() - t_start
        save_checkpoint(out_dir, step=at, model=model, opt=opts, batches=batches, recipe=recipe,
                        data_hash=run.data_hash, tok=run.tokenizer, elapsed_s=elapsed, fingerprints=run.fingerprints,
                        extra=run.state() if run.state is not None else None)
        run.save_model(out_dir, at)

    def lr_at(s: int) -> float:
        w = oc["warmup_steps"]
        return oc["lr"] * min(1.0, (s + 1) / w) if w else oc["lr"]

    # 4. the loop
    clip = oc["clip"] if oc["clip"] is not None else math.inf
    acc: dict[str, float] = {}
    n_acc, t_log = 0, time.monotonic()
    bar = tqdm(total=max_steps, initial=step, desc=f"train {arch}", unit="step",
               disable=(not progress) if progress is not None else None)
    last_saved = step
    try:
        while step < max_steps:
            if max_minutes is not None and time.monotonic() - t_start > max_minutes * 60:
                write({"step": step, "event": "time limit", "max_minutes": max_minutes})
                break
            for o in opts:
                for g in o.param_groups:
                    g["lr"] = lr_at(step) * g.get("lr_mult", 1.0)
            batch = [sb.to(device) for sb in next(batches)]            # list of sub-batches, one per stream
            model.train()
            loss, parts = run.loss(model, batch)                       # scalar
            for o in opts:
                o.zero_grad(set_to_none=True)
            loss.backward()
            gnorm = torch.nn.utils.clip_grad_norm_(dense_params, clip)  # sparse table gradients are not clipped
            for o in opts:
                o.step()
            step += 1
            hook = run.on_step(step) if run.on_step is not None else None

            for k, v in {"loss": float(loss.detach()), **parts, "grad_norm": float(gnorm)}.items():
                acc[k] = acc.get(k, 0.0) + v
            n_acc += 1
            bar.update(1)
            rec: dict = dict(hook or {})
            if step % tr["log_every"] == 0 or step == max_steps:
                dt = time.monotonic() - t_log
                rec = {"step": step, **{k: v / n_acc for k, v in acc.items()}, "lr": lr_at(step - 1),
                       "steps_per_s": n_acc / max(dt, 1e-9),
                       "elapsed_s": round(elapsed_before + time.monotonic() - t_start, 2), **rec}
                bar.set_postfix(loss=f"{rec['loss']:.3f}")
                acc, n_acc, t_log = {}, 0, time.monotonic()
            if dev and (step % tr["eval_every"] == 0 or step == max_steps):
                rec = {"step": step, **rec, **evaluate_dev(encoder, dev, tr["dev_max"])}
                if "dev_err" in rec:
                    bar.set_postfix(loss=f"{rec.get('loss', float('nan')):.3f}", dev_err=f"{rec['dev_err']:.3f}")
            if rec:
                write({"step": step, **rec})
            if step % tr["checkpoint_every"] == 0:
                checkpoint(step)
                last_saved = step
        # stopped early (time limit): log the last partial window and evaluate where we are
        rec = {"step": step, **{k: v / n_acc for k, v in acc.items()}} if n_acc else {}
        if dev and step > 0 and not any(r.get("step") == step and "dev_err" in r for r in log[-2:]):
            rec = {"step": step, **rec, **evaluate_dev(encoder, dev, tr["dev_max"])}
        if rec:
            write(rec)
    finally:
        bar.close()
        log_f.close()
    if last_saved != step or not (out_dir / "model.safetensors").exists():
        checkpoint(step)
    model.eval()
    return TrainResult(out_dir, model, run.tokenizer, step, log)
