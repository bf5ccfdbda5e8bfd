"""Trained document encoders of Guo et al. 2019: HiDE (§3.2) and Document BoW (§3.1.2).

HiDE sits on a FROZEN sentence encoder (any bisent encoder: ``base``). With
v_s the embeddings of a document's sentences and mu_lang the mean sentence
embedding of that language in the training data (stored in the model; it
removes the per-language offset, as centring does for Sentence-Avg):

    HiDE DNN→pooling:  doc = unit( mean_s f(v_s - mu_lang) )
    HiDE pooling→DNN:  doc = unit( f(mean_s v_s - mu_lang) )

f is the paper's feed-forward stack (§4.2: hidden sizes 320, 320, 500, 500,
ReLU then Tanh on the last layer, residual connections where a layer keeps
its width). Document BoW is a DAN (Iyyer et al. 2015) over the document's
hashed unigrams (optionally the hashed word/char n-grams of
:mod:`bisent.models.hashing`): doc = unit( g(mean of their embeddings) ), g ReLU
layers then a linear output.

Inference runs in NumPy (no torch): :class:`HiDEEncoder`, :class:`DocBoWEncoder`.
Training uses the torch twins ``HiDE`` and ``DocBoW`` (:func:`build_torch`) with the same
parameter names (``training/objectives/hide.py``). A model directory is
``config.json`` (``architecture``: ``hide`` or ``doc-bow``; ``model``: the
keyword arguments; for HiDE ``base`` and ``base_id``) + ``model.safetensors``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..encoders.base import l2_normalise
from ..encoders.documents import CHUNK, DocumentEncoder, sentence_sums
from ..errors import BisentError
from . import modeldir
from .hashing import HashConfig, HashFeaturizer
from .keys import Field, ModelConfig

DOC_ARCHITECTURES = ("hide", "doc-bow")
#: the ``model`` section of each architecture's config.json (models/modeldir.py contract)
CONFIG_KEYS = {"hide": ("mode", "base", "hidden", "in_dim", "languages"),
               "doc-bow": ("buckets", "embed_dim", "hidden", "ngrams")}
MODES = ("dnn-pool", "pool-dnn")
#: the ``model`` section of their recipes; both are trained by the hide objective (training/objectives/hide.py),
#: on document pairs
MODEL_CONFIGS = {
    "hide": ModelConfig({"mode": Field("dnn-pool", str, MODES), "base": Field("use-m3", str),
                         "hidden": Field([320, 320, 500, 500], list)}, objective="hide", tokenizer=False),
    "doc-bow": ModelConfig({"buckets": Field(1 << 18, int, minimum=2), "embed_dim": Field(320, int, minimum=1),
                            "hidden": Field([320, 500], list), "ngrams": Field(False, bool)},
                           objective="hide", tokenizer=False),
}


def layer_plan(in_dim: int, hidden: list[int]) -> list[tuple[int, int, bool]]:
    """``(in, out, residual)`` of each dense layer: residual where the width is kept."""
    sizes = [in_dim, *hidden]
    return [(a, b, a == b) for a, b in zip(sizes[:-1], sizes[1:])]


def _ff_numpy(x: np.ndarray, layers: list[tuple[np.ndarray, np.ndarray, bool]], last_tanh: bool) -> np.ndarray:
    """The feed-forward stack on rows ``x (n, in)``: ReLU layers, the last Tanh (HiDE) or linear (BoW)."""
    for i, (w, b, res) in enumerate(layers):
        h = x @ w + b                                                          # (n, out)
        last = i == len(layers) - 1
        h = (np.tanh(h) if last_tanh else h) if last else np.maximum(h, 0.0)
        x = x + h if res else h
    return x


def _layers_from(tensors: dict[str, np.ndarray], plan) -> list:
    return [(np.ascontiguousarray(tensors[f"ff.{i}.weight"].T, dtype=np.float64),
             tensors[f"ff.{i}.bias"].astype(np.float64), res) for i, (_, _, res) in enumerate(plan)]


class HiDEEncoder(DocumentEncoder):
    """HiDE over a frozen sentence encoder, in NumPy; see the module docstring."""

    def __init__(self, hp: dict, tensors: dict[str, np.ndarray], base, *, name: str, content_hash: str,
                 chunk: int = CHUNK):
        self.hp, self.base, self.chunk = dict(hp), base, chunk
        self.mode = hp["mode"]
        self.plan = layer_plan(int(hp["in_dim"]), list(hp["hidden"]))
        self.layers = _layers_from(tensors, self.plan)
        self.means = {lang: tensors[f"lang_mean.{lang}"].astype(np.float64) for lang in hp["languages"]}
        self.dim = self.plan[-1][1]
        self.name, self.id = name, f"hide-{self.mode}/{content_hash[:20]}"

    def _mean(self, lang: str) -> np.ndarray:
        key = lang.lower().replace("_", "-")
        mu = self.means.get(key) if key in self.means else self.means.get(key.split("-")[0])
        if mu is None:
            raise BisentError(f"document model {self.name}: trained for {', '.join(self.means)}, not '{lang}'")
        return mu

    def encode_documents(self, docs, lang, *, progress=None):
        mu = self._mean(lang)
        if self.mode == "dnn-pool":
            sums, counts = sentence_sums(docs, self.base, lang, chunk=self.chunk, progress=progress,
                                         transform=lambda v: _ff_numpy(v - mu, self.layers, True))
            out = sums / np.maximum(counts, 1)[:, None]
        else:
            sums, counts = sentence_sums(docs, self.base, lang, chunk=self.chunk, progress=progress)
            out = _ff_numpy(sums / np.maximum(counts, 1)[:, None] - mu, self.layers, True)
        out[counts == 0] = 0.0
        return l2_normalise(out.astype(np.float32))


def bow_hash_config(hp: dict) -> HashConfig:
    """Unigrams only (``ngrams: false``) or the student's word bigrams + char n-grams (``ngrams: true``)."""
    if hp.get("ngrams"):
        return HashConfig(buckets=int(hp["buckets"]), max_tokens=100_000)
    return HashConfig(buckets=int(hp["buckets"]), n_min=1, n_max=0, word_ngrams=1, max_tokens=100_000)


def bow_bags(featurizer: HashFeaturizer, docs, chunk: int = CHUNK):
    """Per document its hashed feature ids: yields ``(doc index, ids (M,))``, ``chunk`` sentences featurized at a
    time."""
    for i, d in enumerate(docs):
        parts = [featurizer.bags(list(d[s:s + chunk])).ids for s in range(0, len(d), chunk)]
        yield i, np.concatenate(parts) if parts else np.zeros(0, np.int64)


class DocBoWEncoder(DocumentEncoder):
    """Document BoW (a DAN over the document's hashed unigrams), in NumPy."""

    def __init__(self, hp: dict, tensors: dict[str, np.ndarray], *, name: str, content_hash: str):
        self.hp = dict(hp)
        self.featurizer = HashFeaturizer(bow_hash_config(hp))
        self.table = tensors["embed.weight"].astype(np.float32)                    # (buckets, E)
        self.plan = layer_plan(int(hp["embed_dim"]), list(hp["hidden"]))
        self.layers = _layers_from(tensors, self.plan)
        self.dim = self.plan[-1][1]
        self.name, self.id = name, f"doc-bow/{content_hash[:20]}"

    def encode_documents(self, docs, lang, *, progress=None):
        x = np.zeros((len(docs), self.table.shape[1]), dtype=np.float64)
        empty = np.zeros(len(docs), bool)
        for i, ids in bow_bags(self.featurizer, docs):
            if len(ids):
                x[i] = self.table[ids].mean(axis=0)
            else:
                empty[i] = True
        out = _ff_numpy(x, self.layers, False)
        out[empty] = 0.0
        return l2_normalise(out.astype(np.float32))


# --- model directories -----------------------------------------------------------------------------------

def save_document_model(out_dir, architecture: str, hp: dict, tensors: dict[str, np.ndarray],
                        extra: dict | None = None) -> None:
    modeldir.save(out_dir, architecture, {k: hp[k] for k in CONFIG_KEYS[architecture]}, tensors, extra=extra)


def expected_shapes(architecture: str, hp: dict) -> dict[str, tuple[int, ...]]:
    """Every tensor of a document model and its shape."""
    in_dim = int(hp["in_dim"] if architecture == "hide" else hp["embed_dim"])
    shapes = {}
    for i, (a, b, _) in enumerate(layer_plan(in_dim, list(hp["hidden"]))):
        shapes[f"ff.{i}.weight"], shapes[f"ff.{i}.bias"] = (b, a), (b,)
    if architecture == "hide":
        shapes.update({f"lang_mean.{lang}": (in_dim,) for lang in hp["languages"]})
    else:
        shapes["embed.weight"] = (int(hp["buckets"]), in_dim)
    return shapes


def load_document_model(model_dir) -> DocumentEncoder:
    """Load a ``hide`` or ``doc-bow`` model directory; a HiDE's base encoder must be the one it was trained on."""
    from ..encoders import get_encoder
    from ..encoders.trained import read_config

    model_dir = Path(model_dir)
    config = read_config(model_dir)
    arch = config["architecture"]
    if arch not in DOC_ARCHITECTURES:
        raise BisentError(f"{model_dir / 'config.json'}: '{arch}' is not a document model "
                          f"({', '.join(DOC_ARCHITECTURES)})")
    md = modeldir.load(model_dir, CONFIG_KEYS[arch], architecture=DOC_ARCHITECTURES, config=config)
    hp, tensors, chash = md.hp, md.tensors, md.content_hash()
    modeldir.check_tensors(model_dir / modeldir.WEIGHTS_FILE, tensors, expected_shapes(arch, hp))
    if arch == "hide":
        base = get_encoder(config["base"])
        if config.get("base_id") and base.id != config["base_id"]:
            raise BisentError(f"{model_dir / 'config.json'}: trained on sentence encoder {config['base']} "
                              f"({config['base_id']}), but that name now gives {base.id}")
        return HiDEEncoder(hp, tensors, base, name=str(model_dir), content_hash=chash)
    return DocBoWEncoder(hp, tensors, name=str(model_dir), content_hash=chash)


# --- torch twins (training) ------------------------------------------------------------------------------

def build_torch(architecture: str, hp: dict):
    """The torch module of a document architecture, with the NumPy encoder's parameter names."""
    import torch
    from torch import nn

    class FF(nn.Module):
        def __init__(self, in_dim: int, hidden: list[int], last_tanh: bool):
            super().__init__()
            self.plan = layer_plan(in_dim, hidden)
            self.ff = nn.ModuleList(nn.Linear(a, b) for a, b, _ in self.plan)
            self.last_tanh = last_tanh

        def forward(self, x):                                                # (n, in) -> (n, out)
            for i, (layer, (_, _, res)) in enumerate(zip(self.ff, self.plan)):
                h = layer(x)
                last = i == len(self.ff) - 1
                h = (torch.tanh(h) if self.last_tanh else h) if last else torch.relu(h)
                x = x + h if res else h
            return x

    if architecture == "hide":
        class HiDE(FF):
            """``forward(v (S, D) sentences, owner (S,) their document, n_docs, mu (n_docs, D) each document's
            language mean) -> (n_docs, out)``."""

            def __init__(self):
                super().__init__(int(hp["in_dim"]), list(hp["hidden"]), True)
                self.mode = hp["mode"]

            def forward(self, v, owner, n_docs, mu):
                counts = v.new_zeros(n_docs).index_add_(0, owner, v.new_ones(len(owner))).clamp_min(1)[:, None]
                if self.mode == "dnn-pool":
                    h = super().forward(v - mu[owner])                                # (S, out)
                    return h.new_zeros(n_docs, h.shape[1]).index_add_(0, owner, h) / counts
                mean = v.new_zeros(n_docs, v.shape[1]).index_add_(0, owner, v) / counts   # (n_docs, D)
                return super().forward(mean - mu)

        return HiDE()

    class DocBoW(FF):
        """``forward(ids (M,), offsets (n_docs,)) -> (n_docs, out)``: mean of feature embeddings, then the DAN."""

        def __init__(self):
            super().__init__(int(hp["embed_dim"]), list(hp["hidden"]), False)
            self.embed = nn.EmbeddingBag(int(hp["buckets"]), int(hp["embed_dim"]), mode="mean", sparse=True)
            nn.init.normal_(self.embed.weight, std=0.1)

        def forward(self, ids, offsets):
            return super().forward(self.embed(ids, offsets))

        def sparse_parameters(self):
            """The hashed table: row-sparse gradients (RowAdam in training/optim.py)."""
            return [self.embed.weight]

    return DocBoW()
