"""An ensemble of trained encoders in one model directory: the normalised mean of its members' embeddings.

Students distilled into the same teacher's space from different seeds make
different errors (on the general student's benchmarks two seeds differ by
0.8 points a set on average, README); the mean of their unit vectors keeps
what they agree on. Every member must give vectors of one dimension in one
space (students of one teacher), which the loader cannot check beyond the
dimension: join students of the same teacher only.

A directory::

    config.json        {"architecture": "ensemble", "format_version": 1, "members": ["member-1", "member-2"]}
    member-1/          a model directory of any architecture (config.json + safetensors)
    member-2/

Members are sub-directories, so the ensemble moves and copies as one folder.
:func:`make_ensemble` builds one from model directories (hard links where the
file system allows, else copies; a run's training checkpoint stays behind);
``bisent ensemble`` is its command.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np

from ..encoders.base import Encoder, l2_normalise
from ..encoders.trained import load_model_dir, read_config, register_architecture
from ..errors import BisentError
from ..io import atomic_dir
from .dan import DANEncoder

ARCHITECTURE = "ensemble"
FORMAT_VERSION = 1


class EnsembleEncoder(Encoder):
    """The mean of the members' unit embeddings (``encode`` normalises it again)."""

    def __init__(self, members: list[Encoder], *, name: str):
        if len(members) < 2:
            raise BisentError(f"ensemble {name}: needs at least 2 members, got {len(members)}")
        dims = sorted({m.dim for m in members})
        if len(dims) > 1:
            raise BisentError(f"ensemble {name}: members give vectors of different sizes ({', '.join(map(str, dims))})")
        self.members = members
        self.name = name
        self.dim = dims[0]
        self.id = f"{ARCHITECTURE}/" + hashlib.sha256("|".join(m.id for m in members).encode()).hexdigest()[:20]
        known = [m.languages for m in members if m.languages is not None]
        self.languages = frozenset.intersection(*known) if known else None
        self.lang_dependent = any(m.lang_dependent for m in members)
        self.batch_size = min(m.batch_size for m in members)

    def embed_batch(self, sentences: list[str], lang: str) -> np.ndarray:
        out = np.zeros((len(sentences), self.dim), dtype=np.float32)                 # (B, D)
        raw: dict = {}               # DAN members that differ at most in hash seed and buckets share one featurisation
        bags: dict = {}              # ... and those that hash alike one bucketing of it
        for m in self.members:
            if isinstance(m, DANEncoder):
                f = m.featurizer
                if f.config not in bags:
                    if f.shared_key() not in raw:
                        raw[f.shared_key()] = f.raw_bags(sentences)
                    bags[f.config] = f.bucketed(raw[f.shared_key()])
                vecs = m.embed_bags(bags[f.config])                                     # (B, D)
            else:
                vecs = m.embed_batch(sentences, lang)
            out += l2_normalise(vecs)                                                   # (B, D) unit rows
        return out


@register_architecture(ARCHITECTURE)
def load_ensemble(model_dir: Path, config: dict) -> EnsembleEncoder:
    """Load every member (a sub-directory named in ``members``) and join them."""
    where = Path(model_dir) / "config.json"
    members = config.get("members")
    if not isinstance(members, list) or not all(isinstance(m, str) and m for m in members):
        raise BisentError(f"{where}: 'members' must be a list of sub-directory names")
    root = Path(model_dir).resolve()
    loaded = []
    for m in members:
        path = (root / m).resolve()
        if Path(m).is_absolute() or root not in path.parents:
            raise BisentError(f"{where}: member '{m}' is not a sub-directory of the ensemble")
        if not path.is_dir():
            raise BisentError(f"{where}: member '{m}' is missing ({path.name}/ not found)")
        loaded.append(load_model_dir(path))
    return EnsembleEncoder(loaded, name=str(model_dir))


#: a training run's state beside its model (``bisent.training.checkpoint``): 3 GB for a general student,
#: needed only to resume that run, so an ensemble leaves it behind
RUN_STATE = frozenset({"checkpoint.safetensors", "checkpoint.json"})


def _copy_tree(src: Path, dst: Path) -> None:
    """Copy a model directory, hard-linking its files where the file system allows (no second copy of a 273 MB table),
    without a training run's checkpoint (:data:`RUN_STATE`)."""
    for path in sorted(src.rglob("*")):
        if path.name in RUN_STATE and path.parent == src:
            continue
        target = dst / path.relative_to(src)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, target)
        except OSError:
            shutil.copy2(path, target)


def make_ensemble(out_dir, members: list) -> Path:
    """Write an ensemble directory at ``out_dir`` holding the model directories ``members`` (at least 2, each
    loadable, the same output size), as ``member-1/``, ``member-2/``, ...; built in a temp folder and renamed."""
    out_dir = Path(out_dir)
    members = [Path(m) for m in members]
    if len(members) < 2:
        raise BisentError(f"ensemble: needs at least 2 model directories, got {len(members)}")
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise BisentError(f"{out_dir}: exists and is not an empty folder; choose a new one")
    for m in members:
        if not m.is_dir():
            raise BisentError(f"{m}: no such model directory")
    EnsembleEncoder([load_model_dir(m) for m in members], name=str(out_dir))   # loadable, one size: before writing
    names = [f"member-{i + 1}" for i in range(len(members))]
    sources = [{"member": n, "from": src.name, "architecture": read_config(src)["architecture"]}
               for n, src in zip(names, members)]
    config = {"architecture": ARCHITECTURE, "format_version": FORMAT_VERSION, "members": names, "sources": sources}
    with atomic_dir(out_dir, replace_names=frozenset()) as tmp:      # a folder filled meanwhile: an error
        for src, name in zip(members, names):
            _copy_tree(src, tmp / name)
        (tmp / "config.json").write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")
    return out_dir
