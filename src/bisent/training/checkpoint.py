"""Training checkpoints: ONE file, ``checkpoint.safetensors``, written atomically.

The tensors are the model weights (``model.*``), every optimiser's moments
flattened to tensors (``optim.*``, ``optim1.*``, ...), the RNG states
(``rng.*``) and the objective's own state (``extra.*``: mined hard
negatives). The JSON state (step, recipe, data position, optimiser scalars
and hyper-parameters, fingerprints of the data and the tokenizer) rides in
the safetensors header's metadata, so tensors and state can never disagree:
the file is written to a temporary name and renamed into place
(:func:`bisent.io.atomic_write`), and the previous checkpoint stays whole
until the new one is complete. A kill at any moment leaves a resumable run.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import torch

from ..errors import BisentError
from ..io import atomic_write
from ..models.modeldir import write_safetensors
from ..state import StateDir, check_same, fingerprint

FILE = "checkpoint.safetensors"
LEGACY_STATE = "checkpoint.json"          # first-wave checkpoints kept the state in a second file
_META_KEY = "bisent_checkpoint"
#: recipe sections that change the numbers; a resumed run must agree on all of them
MATH_KEYS = ("architecture", "objective", "seed", "languages", "tokenizer", "data", "model", "objectives", "optim")


def _prefix(j: int) -> str:
    return "optim" if j == 0 else f"optim{j}"


def open_run(out_dir: Path, resume: bool) -> dict | None:
    """Create ``out_dir`` for a new run (refusing one that holds a run, or a user's folder holding files: it is
    marked as bisent's, :func:`bisent.io.make_state_dir`), or read the state to resume."""
    out_dir = Path(out_dir)
    if not resume and exists(out_dir):
        raise BisentError(f"{out_dir}: holds a training run already; pass --resume to continue it, or choose another "
                          "-o")
    state = read_state(out_dir) if resume else None
    if resume:
        out_dir.mkdir(parents=True, exist_ok=True)
    else:
        StateDir(out_dir, "train").adopt()    # the run's fingerprint rides in its checkpoint (check_same_run)
    return state


def save(out_dir: Path, run, opts: list, recipe: dict, *, step: int, elapsed_s: float) -> None:
    """Write ``checkpoint.safetensors``: the model, optimisers, RNG and objective state (``run.state()``) of
    ``run`` (an objective's Setup), and the JSON state (step, recipe, data position, fingerprints)."""
    model, batches, extra = run.model, run.batches, run.state() if run.state is not None else None
    state = {"step": step, "elapsed_s": elapsed_s, "recipe": recipe, "data_fingerprint": run.data_hash,
             **run.fingerprints}
    tensors: dict[str, torch.Tensor] = {f"model.{k}": v for k, v in model.state_dict().items()}
    optim_json = []
    for j, o in enumerate(opts):
        opt_state = o.state_dict()
        scalars: dict[str, dict] = {}
        for i, st in opt_state["state"].items():                    # Adam: step, exp_avg, exp_avg_sq per parameter
            for name, v in st.items():
                if torch.is_tensor(v):
                    tensors[f"{_prefix(j)}.{i}.{name}"] = v
                else:
                    scalars.setdefault(str(i), {})[name] = v
        optim_json.append({"param_groups": opt_state["param_groups"], "scalars": scalars})
    for k, v in (extra or {}).items():
        tensors[f"extra.{k}"] = v
    tensors["rng.torch"] = torch.get_rng_state()
    if torch.cuda.is_available():
        for d, s in enumerate(torch.cuda.get_rng_state_all()):
            tensors[f"rng.cuda.{d}"] = s
    meta = {**state, "data": batches.state_dict(), "optim": optim_json}
    with atomic_write(Path(out_dir) / FILE, "wb") as f:
        write_safetensors(f, tensors, metadata={_META_KEY: json.dumps(meta)})
    (Path(out_dir) / LEGACY_STATE).unlink(missing_ok=True)             # a resumed first-wave run's old state


def exists(out_dir: Path) -> bool:
    return (Path(out_dir) / FILE).exists()


def read_state(out_dir: Path) -> dict:
    """The JSON state of ``out_dir``'s checkpoint (cheap: reads the header only)."""
    path = Path(out_dir) / FILE
    if not path.is_file():
        raise BisentError(f"{path}: missing: nothing to resume in {out_dir}")
    try:
        with open(path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            meta = json.loads(f.read(n)).get("__metadata__") or {}
        if _META_KEY not in meta and (path.parent / LEGACY_STATE).is_file():
            return _legacy_state(path)
        return json.loads(meta[_META_KEY])
    except (struct.error, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, AttributeError,
            MemoryError, OverflowError) as e:
        raise BisentError(f"{path}: not a bisent checkpoint ({e.__class__.__name__})") from None


def _legacy_state(path: Path) -> dict:
    """The state of a first-wave checkpoint (``checkpoint.json`` beside the tensors), if both belong together."""
    import hashlib

    state = json.loads((path.parent / LEGACY_STATE).read_text(encoding="utf-8"))
    if hashlib.sha256(path.read_bytes()).hexdigest() != state.get("tensors_sha256"):
        raise BisentError(f"{path}: does not match {LEGACY_STATE} (a write was interrupted; start a new run)")
    state["optim"] = [state["optim"], *state.pop("optim_more", [])]
    return state


def check_same_run(state: dict, recipe: dict, data_hash: str, fingerprints: dict[str, str], out_dir: Path) -> None:
    """Refuse to resume with another recipe, other data or another tokenizer: the checkpoint's fingerprint (kept
    in its header, atomically with the tensors) against this run's, the one rule of :mod:`bisent.state`."""
    def fp(data, rec, extra):
        return fingerprint("train", {"training data": data}, {**{k: rec.get(k) for k in MATH_KEYS}, **extra})

    check_same(Path(out_dir), "a training run", fp(state.get("data_fingerprint"), state["recipe"],
                                                   {k: state.get(k) for k in fingerprints}),
               fp(data_hash, recipe, fingerprints), "use the recipe and data of that run, or start a new one elsewhere")


def load(out_dir: Path, state: dict, *, model, opts: list, batches) -> dict[str, torch.Tensor]:
    """Restore model, optimiser states, data position and RNG states (in place); return the ``extra`` tensors."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    path = Path(out_dir) / FILE
    try:
        # mapped, not read into one bytes object first; each tensor then copied out of the mapping (tensors
        # left as views of it made a resumed L-BFGS run differ in the 8th digit: test_zhang2016)
        tensors = {k: v.clone() for k, v in load_file(path).items()}
    except (SafetensorError, ValueError, RuntimeError, OSError) as e:
        raise BisentError(f"{path}: corrupt safetensors file ({' '.join(str(e).split())[:120]})") from None
    model.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("model.")}, strict=True)
    if len(state["optim"]) != len(opts):
        raise BisentError(f"{path}: {len(state['optim'])} optimiser states, this run has {len(opts)}")
    for j, (o, js) in enumerate(zip(opts, state["optim"])):
        opt_state: dict = {"state": {}, "param_groups": js["param_groups"]}
        prefix = _prefix(j) + "."
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


def resume(state: dict, recipe: dict, run, opts: list, out_dir: Path) -> tuple[int, float]:
    """Check that ``run`` (an objective's Setup) is the checkpoint's run, then load the checkpoint into its
    model, the optimisers, the data position and the objective's state; return ``(step, seconds so far)``."""
    check_same_run(state, recipe, run.data_hash, run.fingerprints, out_dir)
    extra = load(out_dir, state, model=run.model, opts=opts, batches=run.batches)
    if run.load_state is not None:
        run.load_state(extra)
    return int(state["step"]), float(state.get("elapsed_s", 0.0))


def init_weights(model: torch.nn.Module, model_dir, recipe: dict) -> dict:
    """Load a trained model directory's weights into ``model`` (a new run's freshly built model): ``--init``.

    Continued training with other data, where ``--resume`` (same recipe, same data) does not apply: only the
    weights carry over (optimisers, data order and step start afresh). The directory's training checkpoint,
    if there, gives the exact float32 weights; else ``model.safetensors`` (float16 ones widened). Another
    architecture or any tensor name or shape that differs is a one-line error. Returns what to log."""
    from safetensors import SafetensorError, safe_open

    from ..encoders.trained import read_config
    from ..models.modeldir import read_safetensors

    model_dir = Path(model_dir)
    config = read_config(model_dir)
    if config["architecture"] != recipe["architecture"]:
        raise BisentError(f"--init {model_dir}: a {config['architecture']} model, the recipe trains "
                          f"{recipe['architecture']}")
    ckpt = model_dir / FILE
    if ckpt.is_file():
        try:
            with safe_open(str(ckpt), framework="pt") as f:
                tensors = {k[6:]: f.get_tensor(k) for k in f.keys() if k.startswith("model.")}
        except (SafetensorError, OSError, RuntimeError) as e:
            raise BisentError(f"{ckpt}: corrupt checkpoint ({' '.join(str(e).split())[:120]})") from None
        source = FILE
    else:
        tensors = read_safetensors(model_dir / "model.safetensors", framework="torch")[1]
        source = "model.safetensors"
    own = model.state_dict()
    for k, v in own.items():
        if k not in tensors:
            raise BisentError(f"--init {model_dir}: {source} has no tensor {k!r} (another model size or kind?)")
        if tuple(tensors[k].shape) != tuple(v.shape):
            raise BisentError(f"--init {model_dir}: {k} is {tuple(tensors[k].shape)} there, "
                              f"{tuple(v.shape)} in the recipe's model")
    extra = sorted(set(tensors) - set(own))
    if extra:
        raise BisentError(f"--init {model_dir}: {source} has tensors the recipe's model lacks ({extra[0]}, ...)")
    model.load_state_dict({k: tensors[k].to(v.dtype) for k, v in own.items()})
    return {"init": model_dir.name, "init_from": source, "init_step": config.get("training", {}).get("step")}
