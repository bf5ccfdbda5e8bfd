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

A table stored as int8 rows (``train.int8_weights``) stays int8 in memory, a quarter of float32
(2^20 x 256: 264 MB instead of 1 GB, what made an ensemble of seven hold 7.4 GB): only the rows a
batch gathers are scaled. In torch it is fbgemm's 8-bit row-wise embedding bag (the layout of
quantised recommender tables: each row's uint8 values, then its float32 scale and bias; in a quick
probe, not yet a benchmark, faster than ``embedding_bag`` over the float32 table); where that
kernel is missing (no fbgemm), gathered rows are scaled and summed in ``embedding_bag``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..encoders.base import Encoder
from ..encoders.trained import register_architecture
from .hashing import Features, HashConfig, HashFeaturizer
from .modeldir import Int8Rows, dense_shapes, load_checked

ARCHITECTURE = "dan"
HASH_KEYS = ("buckets", "n_min", "n_max", "word_ngrams", "lowercase", "max_tokens", "cjk_n_min", "translit",
             "hash_seed")
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
        # rows: float32, int8 (row i is rows[i] * row_scale[i]) or, packed for torch below, uint8 = int8 ^ 0x80
        if isinstance(table, Int8Rows):
            # (buckets, E), (buckets,)
            self.rows, self.row_scale = table.q, np.ascontiguousarray(table.scale.reshape(-1))
        else:
            self.rows, self.row_scale = np.ascontiguousarray(table, dtype=np.float32), None
        self._flipped = False
        sizes = layer_sizes(hp)
        dense = {k: v.dequantize() if isinstance(v, Int8Rows) else v for k, v in tensors.items() if k != "embed.weight"}
        self.layers = [(np.ascontiguousarray(dense[f"layers.{i}.weight"].T, dtype=np.float32),  # (in, out)
                        dense[f"layers.{i}.bias"].astype(np.float32)) for i in range(len(sizes) - 1)]
        self.dim = sizes[-1]
        try:
            import torch
        except ModuleNotFoundError:
            self._torch = None
        else:
            self._torch = torch
            self._torch_layers = [(torch.from_numpy(w), torch.from_numpy(b)) for w, b in self.layers]
            self._packed = self._pack_for_fbgemm() if self.row_scale is not None else None

    def _pack_for_fbgemm(self):
        """``(buckets, E + 8)`` uint8 torch tensor of fbgemm's row-wise 8-bit layout (``q + 128`` = ``q ^ 0x80``,
        float32 scale s, float32 bias -128 s), or None where the kernel does not run. ``self.rows`` becomes a view
        of its first E columns (the NumPy path flips the bit back), so the table is held once."""
        torch = self._torch
        n, e = self.rows.shape
        packed = np.empty((n, e + 8), dtype=np.uint8)
        np.bitwise_xor(self.rows.view(np.uint8), np.uint8(0x80), out=packed[:, :e])
        packed[:, e:e + 4] = self.row_scale.reshape(-1, 1).view(np.uint8)
        packed[:, e + 4:] = (np.float32(-128) * self.row_scale).reshape(-1, 1).view(np.uint8)
        t = torch.from_numpy(packed)
        try:
            torch.ops.quantized.embedding_bag_byte_rowwise_offsets(
                t, torch.zeros(1, dtype=torch.int64), torch.zeros(1, dtype=torch.int64), False, 0, False, None, None,
                False)
        except (RuntimeError, NotImplementedError, AttributeError):
            return None
        self.rows, self._flipped = packed[:, :e], True
        return t

    def pooled(self, f: Features) -> np.ndarray:
        """Mean of the feature embeddings per sentence of the bags ``f`` (B sentences): ``(B, E)``; a sentence
        without features is zero.

        The bags are laid out as a padded ``(B, L)`` id matrix with a ``(B, L)``
        weight per slot (the row's scale; 0 for padding), and each sentence's
        rows are summed by one ``(1, L) @ (L, E)`` product (``np.add.reduceat``
        over ragged segments is an order of magnitude slower); ``encode``
        batches sentences of similar length, so little padding is wasted.
        """
        B, L = len(f.counts), max(int(f.counts.max(initial=0)), 1)
        rows = np.repeat(np.arange(B), f.counts)                                              # (M,)
        cols = np.arange(len(f.ids)) - np.repeat(f.offsets, f.counts)                         # (M,) slot in its row
        padded = np.zeros((B, L), dtype=np.int64)                                             # (B, L)
        weight = np.zeros((B, L), dtype=np.float32)                                           # (B, L)
        padded[rows, cols] = f.ids
        weight[rows, cols] = 1.0 if self.row_scale is None else self.row_scale[f.ids]
        g = self.rows.take(padded.ravel(), axis=0)                                            # (B L, E)
        if self._flipped:                                                                     # uint8 q ^ 0x80 -> int8 q
            g = np.bitwise_xor(g, np.uint8(0x80), out=g).view(np.int8)
        sums = np.matmul(weight[:, None, :], g.reshape(B, L, -1).astype(np.float32, copy=False))[:, 0]   # (B, E)
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
                h = self._torch_sums(torch.from_numpy(f.ids), torch.from_numpy(f.offsets))          # (B, E) sums
                h = h / torch.from_numpy(np.maximum(f.counts, 1).astype(np.float32))[:, None]   # (B, E) means
                for i, (w, b) in enumerate(self._torch_layers):
                    h = torch.addmm(b, h, w)                                                     # (B, out_i)
                    if i < len(self._torch_layers) - 1:
                        h = torch.relu_(h)
                return h.numpy()                                                                 # (B, D)
        finally:
            torch.set_num_threads(threads)

    def _torch_sums(self, ids, offsets):
        """``(B, E)`` sums of the rows of each bag: ``ids`` (M,), ``offsets`` (B,) int64 tensors."""
        torch = self._torch
        if self._packed is not None:                                                     # int8 rows, fbgemm
            return torch.ops.quantized.embedding_bag_byte_rowwise_offsets(
                self._packed, ids, offsets, False, 0, False, None, None, False)
        rows = torch.from_numpy(self.rows)
        if self.row_scale is None:                                                       # a float32 table
            return torch.nn.functional.embedding_bag(ids, rows, offsets, mode="sum")
        gathered = rows[ids].float()                                                     # (M, E) int8 rows, no fbgemm
        return torch.nn.functional.embedding_bag(torch.arange(len(ids)), gathered, offsets, mode="sum",
                                                 per_sample_weights=torch.from_numpy(self.row_scale)[ids])


def expected_shapes(hp: dict) -> dict[str, tuple[int, ...]]:
    sizes = layer_sizes(hp)
    return {"embed.weight": (int(hp["buckets"]), sizes[0]), **dense_shapes(sizes)}


@register_architecture(ARCHITECTURE)
def load_encoder(model_dir: Path, config: dict) -> DANEncoder:
    """Build the NumPy DAN encoder of a model directory (checks every tensor's shape against config.json)."""
    md = load_checked(model_dir, config, CONFIG_KEYS, ARCHITECTURE, expected_shapes, keep_int8=True)
    return DANEncoder(md.hp, md.tensors, name=str(model_dir), content_hash=md.content_hash())
