"""A deep averaging network (Iyyer et al. 2015) over hashed word and character n-grams, run in NumPy.

sentence -> hashed features (words, word bigrams, character n-grams of every
token; :mod:`bisent.models.hashing`) -> mean of their embeddings (E) -> ReLU
layers -> linear output (D). No vocabulary, no tokenizer model, no language
id: the same function for every language, which is what a student distilled
into a multilingual teacher's space needs. Guo et al. (2019) use the same
network over document unigrams ("Document BoW").

Why NumPy: inference is a gather, a segment sum and two small matrix
products, so the encoder loads and runs without torch (torch is only needed
to train it, :class:`bisent.models.dual.DAN`). Where torch is installed it
does the same arithmetic in torch on one thread (``embedding_bag`` fuses the
gather and the sum), several times faster. The weights are the torch module's ``state_dict`` names:
``embed.weight`` (buckets, E) and ``layers.{i}.weight`` / ``.bias``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..encoders.base import Encoder
from ..encoders.trained import register_architecture
from .hashing import Features, HashConfig, HashFeaturizer
from .modeldir import dense_shapes, load_checked

ARCHITECTURE = "dan"
HASH_KEYS = ("buckets", "n_min", "n_max", "word_ngrams", "lowercase", "max_tokens", "cjk_n_min", "translit")
#: the ``model`` section of a DAN's config.json (the torch module's constructor keywords)
CONFIG_KEYS = ("dim", "embed_dim", "hidden", "feature_dropout", "dropout", *HASH_KEYS)


def hash_config(hp: dict) -> HashConfig:
    """The hashing part of a model's hyper-parameters."""
    return HashConfig(**{k: hp[k] for k in HASH_KEYS if k in hp})


def layer_sizes(hp: dict) -> list[int]:
    """``[E, hidden..., D]``: input and output size of every dense layer."""
    return [int(hp["embed_dim"]), *map(int, hp.get("hidden") or []), int(hp["dim"])]


class DANEncoder(Encoder):
    """The :class:`Encoder` over a trained DAN's weights (NumPy, float32)."""

    batch_size = 256

    def __init__(self, hp: dict, tensors: dict[str, np.ndarray], *, name: str, content_hash: str):
        self.hp = dict(hp)
        self.name = name
        self.id = f"{ARCHITECTURE}/{content_hash[:20]}"
        self.featurizer = HashFeaturizer(hash_config(hp))
        table = tensors["embed.weight"]                                                      # (buckets, E)
        self.table = np.zeros((table.shape[0] + 1, table.shape[1]), dtype=np.float32)        # + a zero row for padding
        self.table[:-1] = table
        self.zero_row = table.shape[0]
        sizes = layer_sizes(hp)
        self.layers = [(np.ascontiguousarray(tensors[f"layers.{i}.weight"].T, dtype=np.float32),  # (in, out)
                        tensors[f"layers.{i}.bias"].astype(np.float32)) for i in range(len(sizes) - 1)]
        self.dim = sizes[-1]
        try:
            import torch
        except ModuleNotFoundError:
            self._torch = None
        else:
            self._torch, self._torch_table = torch, torch.from_numpy(self.table[:-1])
            self._torch_layers = [(torch.from_numpy(w), torch.from_numpy(b)) for w, b in self.layers]

    def pooled(self, f: Features) -> np.ndarray:
        """Mean of the feature embeddings per sentence of the bags ``f`` (B sentences): ``(B, E)``; a sentence
        without features is zero.

        The bags are laid out as a padded ``(B, L)`` id matrix whose padding
        points at an all-zero row, then summed over an axis (``np.add.reduceat``
        over ragged segments is an order of magnitude slower); ``encode``
        batches sentences of similar length, so little padding is wasted.
        """
        B, L = len(f.counts), max(int(f.counts.max(initial=0)), 1)
        rows = np.repeat(np.arange(B), f.counts)                                              # (M,)
        cols = np.arange(len(f.ids)) - np.repeat(f.offsets, f.counts)                         # (M,) slot in its row
        padded = np.full((B, L), self.zero_row, dtype=np.int64)                               # (B, L)
        padded[rows, cols] = f.ids
        sums = self.table.take(padded.ravel(), axis=0).reshape(B, L, -1).sum(axis=1)          # (B, E)
        return sums / np.maximum(f.counts, 1)[:, None].astype(np.float32)

    def embed_batch(self, sentences: list[str], lang: str) -> np.ndarray:
        return self.embed_bags(self.featurizer.bags(sentences))

    def embed_bags(self, f: Features) -> np.ndarray:
        """``(B, D)`` from the hashed bags of B sentences (``self.featurizer.bags``); an ensemble of DANs that
        hash alike computes the bags once for all of them."""
        if self._torch is not None:
            return self._embed_torch(f)
        h = self.pooled(f)                                                                   # (B, E)
        for i, (w, b) in enumerate(self.layers):
            h = h @ w + b                                                                    # (B, out_i)
            if i < len(self.layers) - 1:
                np.maximum(h, 0, out=h)
        return h                                                                             # (B, D)

    def _embed_torch(self, f: Features) -> np.ndarray:
        """The same computation in torch on ONE thread: these matrices are small (B x 256 x 512), and
        on a shared machine two BLAS threads waiting for each other were measured 5-15x slower than one."""
        torch = self._torch
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            with torch.inference_mode():
                h = torch.nn.functional.embedding_bag(torch.from_numpy(f.ids), self._torch_table,
                                                      torch.from_numpy(f.offsets), mode="sum")    # (B, E) sums
                h = h / torch.from_numpy(np.maximum(f.counts, 1).astype(np.float32))[:, None]   # (B, E) means
                for i, (w, b) in enumerate(self._torch_layers):
                    h = torch.addmm(b, h, w)                                                     # (B, out_i)
                    if i < len(self._torch_layers) - 1:
                        h = torch.relu_(h)
                return h.numpy()                                                                 # (B, D)
        finally:
            torch.set_num_threads(threads)


def expected_shapes(hp: dict) -> dict[str, tuple[int, ...]]:
    sizes = layer_sizes(hp)
    return {"embed.weight": (int(hp["buckets"]), sizes[0]), **dense_shapes(sizes)}


@register_architecture(ARCHITECTURE)
def load_encoder(model_dir: Path, config: dict) -> DANEncoder:
    """Build the NumPy DAN encoder of a model directory (checks every tensor's shape against config.json)."""
    md = load_checked(model_dir, config, CONFIG_KEYS, ARCHITECTURE, expected_shapes)
    return DANEncoder(md.hp, md.tensors, name=str(model_dir), content_hash=md.content_hash())
