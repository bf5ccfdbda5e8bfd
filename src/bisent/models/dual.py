"""Dual encoders (Guo et al. 2019, Figure 1): ONE encoder maps sentences of every language to vectors.

Four torch modules, each ``featurize(texts, lang) -> inputs`` (CPU tensors)
and ``forward(**inputs) -> (B, D)`` (not normalised; the objectives and
:class:`bisent.encoders.base.Encoder` normalise):

- :class:`DAN`: mean of hashed word / bigram / character n-gram embeddings,
  ReLU layers, linear output (Iyyer et al. 2015; the paper's "Document BoW").
  Inference runs in NumPy (:mod:`bisent.models.dan`).
- :class:`HashTransformer`: the paper's sentence encoder, scaled down: token
  input = word embedding + mean of the token's hashed character n-gram
  embeddings (section 4.2; both hashed into one table, no vocabulary),
  learned positions, pre-norm Transformer blocks, pooling = [min; max;
  attention] over the last block (footnote 3), linear output.
- :class:`BiLSTM`: the training framework's max-pooled BiLSTM over joint
  SentencePiece pieces (:class:`bisent.models.rnn.BiRNNEncoder`), optional
  linear output.
- :class:`Adapter`: a frozen registered encoder's unit vectors through a
  trained linear map or small (residual) MLP. Inference runs in NumPy
  (:mod:`bisent.models.adapter`); only the projection is stored.

Large hashed tables get sparse gradients (``sparse_parameters()``), which
the training loop gives to RowAdam (training/optim.py): a step touches only the rows of the
features in the batch. Each class declares its ``config_keys`` (the
``model`` section of ``config.json``, :mod:`bisent.models.modeldir`). Model
directories: :func:`save_dual` / :func:`load_dual`; ``hash-transformer`` and
``bilstm`` directories load as :class:`TorchDualEncoder` (``dan`` and
``adapter`` load as NumPy encoders, :mod:`.dan`, :mod:`.adapter`).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..encoders.base import Encoder
from ..encoders.trained import register_architecture
from ..errors import BisentError
from . import adapter as np_adapter
from . import dan as np_dan
from . import modeldir
from .hashing import HASH_FIELDS, HashConfigError, HashFeaturizer
from .keys import NUM, Field, ModelConfig
from .rnn import BiRNNEncoder, pad
from .tokenizer import FILENAME as TOKENIZER_FILE
from .tokenizer import UNK, Tokenizer

#: hashing keys every hashed model's hyper-parameters carry (see :class:`bisent.models.hashing.HashConfig`)
HASH_DEFAULTS = {"buckets": 1 << 18, "n_min": 3, "n_max": 5, "word_ngrams": 2, "lowercase": True, "max_tokens": 128,
                 "cjk_n_min": 0, "translit": False, "hash_seed": 0}


def _mlp(sizes: list[int]) -> nn.ModuleList:
    return nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))


def _run_mlp(layers: nn.ModuleList, h: torch.Tensor, drop: nn.Module | None = None) -> torch.Tensor:
    for i, layer in enumerate(layers):
        h = layer(h)
        if i < len(layers) - 1:
            h = F.relu(h)
            if drop is not None:
                h = drop(h)
    return h


def _unique(ids: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """The distinct ids of a batch ``(U,)`` and each id's position among them ``(M,)``.

    Looking the U rows up once and pooling over those (instead of M rows of
    the big table) keeps the sparse gradient of the table at U rows with no
    duplicates: the optimiser step costs O(U x E), several times less.
    """
    uniq, inv = np.unique(ids, return_inverse=True)
    return torch.from_numpy(uniq), torch.from_numpy(inv.reshape(-1))


def _bag_weights(counts: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """Row of every feature ``(M,)`` and the weight ``1 / count`` that makes a sum a mean ``(M,)``."""
    rows = np.repeat(np.arange(len(counts)), counts)
    w = (1.0 / np.maximum(counts, 1)).astype(np.float32)[rows]
    return torch.from_numpy(rows), torch.from_numpy(w)


class DAN(nn.Module):
    """Deep averaging network over hashed features: ``(B texts) -> (B, dim)``."""

    architecture = "dan"
    config_keys = np_dan.CONFIG_KEYS

    def __init__(self, dim: int = 384, embed_dim: int = 256, hidden: list[int] | None = None,
                 feature_dropout: float = 0.0, dropout: float = 0.0, **hashing):
        super().__init__()
        hs = {**HASH_DEFAULTS, **hashing}
        unknown = set(hs) - set(HASH_DEFAULTS)
        if unknown:
            raise TypeError(f"unknown DAN keys {sorted(unknown)}")
        hidden = [512] if hidden is None else list(hidden)
        self.hp = dict(dim=dim, embed_dim=embed_dim, hidden=hidden, feature_dropout=feature_dropout,
                       dropout=dropout, **hs)
        self.dim = dim
        self.featurizer = HashFeaturizer(np_dan.hash_config(hs))
        self.embed = nn.Embedding(hs["buckets"], embed_dim, sparse=True)
        nn.init.normal_(self.embed.weight, std=0.1)
        self.layers = _mlp(np_dan.layer_sizes(self.hp))
        self.feature_dropout = feature_dropout
        self.drop = nn.Dropout(dropout)

    def sparse_parameters(self) -> list[nn.Parameter]:
        return [self.embed.weight]

    def featurize(self, texts: list[str], lang: str | None = None) -> dict[str, torch.Tensor]:
        f = self.featurizer.bags(texts)
        rows, w = _bag_weights(f.counts)
        uniq, inv = _unique(f.ids)
        return {"uniq": uniq, "inv": inv, "offsets": torch.from_numpy(f.offsets), "rows": rows, "weights": w}

    def forward(self, uniq: torch.Tensor, inv: torch.Tensor, offsets: torch.Tensor, rows: torch.Tensor,
                weights: torch.Tensor) -> torch.Tensor:
        if self.training and self.feature_dropout > 0 and len(inv):
            keep = (torch.rand(len(inv), device=inv.device) >= self.feature_dropout).float()   # (M,)
            kept = torch.zeros(len(offsets), device=inv.device).index_add_(0, rows, keep)       # (B,)
            weights = keep / kept.clamp_min(1.0)[rows]
        local = self.embed(uniq)                                                                # (U, E) distinct rows
        h = F.embedding_bag(inv, local, offsets, mode="sum", per_sample_weights=weights)        # (B, E) means
        return _run_mlp(self.layers, h, self.drop)                                              # (B, D)

    def forward_many(self, feats: list[dict[str, torch.Tensor]]) -> list[torch.Tensor]:
        """``forward`` of several featurized batches in one pass: ``[(B_i, D)]``.

        Why: each lookup of the table adds a row-sparse gradient to it, and
        autograd sums those by copying the sum so far, so a step of many small
        lookups (a distillation step has one per stream and side, 50-100) costs
        time quadratic in their number (measured: 64 lookups of 3,000 rows,
        3.3 s a step against 0.2 s for one). Here the bags are concatenated and
        the table is read once."""
        if len(feats) == 1:
            return [self.forward(**feats[0])]
        u_off = m_off = b_off = 0
        uniq, inv, offsets, rows, weights, sizes = [], [], [], [], [], []
        for f in feats:
            uniq.append(f["uniq"])
            inv.append(f["inv"] + u_off)
            offsets.append(f["offsets"] + m_off)
            rows.append(f["rows"] + b_off)
            weights.append(f["weights"])
            sizes.append(len(f["offsets"]))
            u_off, m_off, b_off = u_off + len(f["uniq"]), m_off + len(f["inv"]), b_off + len(f["offsets"])
        distinct, where = torch.unique(torch.cat(uniq), return_inverse=True)   # (U,), (sum U_i,): one row each
        out = self.forward(distinct, where[torch.cat(inv)], torch.cat(offsets), torch.cat(rows), torch.cat(weights))
        return list(out.split(sizes))                                                           # [(B_i, D)]


class HashTransformer(nn.Module):
    """Transformer over tokens whose input is word + character n-gram embeddings (hashed): ``(B texts) -> (B, dim)``."""

    architecture = "hash-transformer"
    config_keys = ("dim", "embed_dim", "d_model", "layers", "heads", "ff_dim", "dropout", *np_dan.HASH_KEYS)

    def __init__(self, dim: int = 384, embed_dim: int = 128, d_model: int = 256, layers: int = 2, heads: int = 4,
                 ff_dim: int = 512, dropout: float = 0.1, **hashing):
        super().__init__()
        hs = {**HASH_DEFAULTS, "max_tokens": 64, **hashing}
        unknown = set(hs) - set(HASH_DEFAULTS)
        if unknown:
            raise TypeError(f"unknown hash-transformer keys {sorted(unknown)}")
        self.hp = dict(dim=dim, embed_dim=embed_dim, d_model=d_model, layers=layers, heads=heads, ff_dim=ff_dim,
                       dropout=dropout, **hs)
        self.dim, self.d_model = dim, d_model
        self.featurizer = HashFeaturizer(np_dan.hash_config(hs))
        self.embed = nn.Embedding(hs["buckets"], embed_dim, sparse=True)                  # words and n-grams
        nn.init.normal_(self.embed.weight, std=0.1)
        self.inp = nn.Linear(embed_dim, d_model)
        self.pos = nn.Embedding(hs["max_tokens"], d_model)
        block = nn.TransformerEncoderLayer(d_model, heads, ff_dim, dropout, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(block, layers, norm=nn.LayerNorm(d_model), enable_nested_tensor=False)
        self.att = nn.Linear(d_model, 1)
        self.out = nn.Linear(3 * d_model, dim)

    def sparse_parameters(self) -> list[nn.Parameter]:
        return [self.embed.weight]

    def featurize(self, texts: list[str], lang: str | None = None) -> dict[str, torch.Tensor]:
        grams, words, n_tok = self.featurizer.tokens(texts)
        _, w = _bag_weights(grams.counts)
        uniq, inv = _unique(np.concatenate([words, grams.ids]))
        T = len(words)
        return {"uniq": uniq, "words": inv[:T], "grams": inv[T:], "gram_offsets": torch.from_numpy(grams.offsets),
                "gram_weights": w, "n_tok": torch.from_numpy(n_tok)}

    def forward(self, uniq: torch.Tensor, words: torch.Tensor, grams: torch.Tensor, gram_offsets: torch.Tensor,
                gram_weights: torch.Tensor, n_tok: torch.Tensor) -> torch.Tensor:
        B, T = len(n_tok), len(words)
        L = max(1, int(n_tok.max()) if B else 1)
        local = self.embed(uniq)                                                                # (U, E) distinct rows
        tok = local[words]                                                                      # (T, E) word
        if T:
            tok = tok + F.embedding_bag(grams, local, gram_offsets, mode="sum",
                                        per_sample_weights=gram_weights)                        # + mean of n-grams
        tok = self.inp(tok)                                                                     # (T, H)
        first = torch.cumsum(n_tok, 0) - n_tok                                                  # (B,)
        pos_in_sent = torch.arange(T, device=words.device) - torch.repeat_interleave(first, n_tok)  # (T,)
        flat = torch.repeat_interleave(torch.arange(B, device=words.device) * L, n_tok) + pos_in_sent
        x = torch.zeros(B * L, self.d_model, device=words.device, dtype=tok.dtype).index_copy(0, flat, tok)
        x = x.view(B, L, self.d_model) + self.pos.weight[:L]                                    # (B, L, H)
        pad_mask = torch.arange(L, device=words.device)[None, :] >= n_tok[:, None]              # (B, L) True = pad
        pad_mask[:, 0] = False                                                                  # empty text: one slot
        h = self.blocks(x, src_key_padding_mask=pad_mask)                                       # (B, L, H)
        m = pad_mask[:, :, None]
        h_max = h.masked_fill(m, -math.inf).max(dim=1).values                                   # (B, H)
        h_min = h.masked_fill(m, math.inf).min(dim=1).values                                    # (B, H)
        a = self.att(h).squeeze(-1).masked_fill(pad_mask, -math.inf).softmax(dim=1)             # (B, L)
        h_att = torch.einsum("bl,blh->bh", a, h)                                                # (B, H)
        return self.out(torch.cat([h_min, h_max, h_att], dim=-1))                               # (B, D)


class BiLSTM(nn.Module):
    """Max-pooled BiLSTM over SentencePiece pieces (the training framework's encoder), optional linear output."""

    architecture = "bilstm"
    config_keys = ("vocab_size", "max_len", "embed_dim", "hidden_dim", "layers", "dropout", "dim")

    def __init__(self, vocab_size: int, max_len: int = 60, embed_dim: int = 256, hidden_dim: int = 256,
                 layers: int = 1, dropout: float = 0.1, dim: int | None = None):
        super().__init__()
        self.hp = dict(vocab_size=vocab_size, max_len=max_len, embed_dim=embed_dim, hidden_dim=hidden_dim,
                       layers=layers, dropout=dropout, dim=dim)
        self.encoder = BiRNNEncoder(vocab_size, embed_dim, hidden_dim, layers, "lstm", dropout)
        self.proj = nn.Linear(2 * hidden_dim, dim) if dim else None
        self.dim = dim or 2 * hidden_dim
        self.tokenizer = None                                                                   # set by the caller

    def sparse_parameters(self) -> list[nn.Parameter]:
        return []

    def featurize(self, texts: list[str], lang: str | None = None) -> dict[str, torch.Tensor]:
        ids, lens = pad([t or [UNK] for t in self.tokenizer.encode(texts)])                     # (B, S), (B,)
        return {"ids": ids, "lens": lens}

    def forward(self, ids: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
        h = self.encoder(ids, lens)                                                             # (B, 2H)
        return self.proj(h) if self.proj is not None else h                                    # (B, D)


class Adapter(nn.Module):
    """A frozen registered encoder's unit vectors -> linear map or MLP (``x + MLP(x)`` when residual)."""

    architecture = "adapter"
    config_keys = np_adapter.CONFIG_KEYS

    def __init__(self, base: str, base_dim: int, dim: int | None = None, hidden: list[int] | None = None,
                 residual: bool = False):
        super().__init__()
        dim = dim or base_dim
        hidden = list(hidden or [])
        if residual and dim != base_dim:
            raise ValueError("a residual adapter keeps the base encoder's dimension: leave model.dim unset")
        self.hp = dict(base=base, base_dim=base_dim, dim=dim, hidden=hidden, residual=residual)
        self.dim, self.residual = dim, residual
        self.layers = _mlp(np_adapter.layer_sizes(self.hp))
        with torch.no_grad():                              # start as the base encoder (or as close as the shape allows)
            last = self.layers[-1]
            if residual:
                last.weight.zero_()
                last.bias.zero_()
            elif not hidden:
                last.weight.copy_(torch.eye(dim, base_dim))
                last.bias.zero_()
        self._base: Encoder | None = None
        self.base_cache: bool | None = None                   # passed to the base encoder's encode

    @property
    def base(self) -> Encoder:
        if self._base is None:
            from ..encoders import get_encoder

            self._base = get_encoder(self.hp["base"])
        return self._base

    def sparse_parameters(self) -> list[nn.Parameter]:
        return []

    def featurize(self, texts: list[str], lang: str | None = None) -> dict[str, torch.Tensor]:
        x = self.base.encode(texts, lang, progress=False, cache=self.base_cache)               # (B, base_dim) unit rows
        return {"x": torch.from_numpy(x)}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = _run_mlp(self.layers, x)
        return x + h if self.residual else h                                                    # (B, D)


DUAL_MODELS: dict[str, type[nn.Module]] = {"dan": DAN, "hash-transformer": HashTransformer, "bilstm": BiLSTM,
                                           "adapter": Adapter}


def check_config(recipe: dict, src: str) -> None:
    """Cross-key rules of a dual model section: layer sizes, the hashed features (the rules of
    :class:`~bisent.models.hashing.HashConfig`, now, not at train start), attention heads, a residual adapter's
    dimension."""
    arch, model = recipe["architecture"], recipe["model"]
    if "hidden" in model and not all(isinstance(h, int) and not isinstance(h, bool) and h > 0 for h in model["hidden"]):
        raise BisentError(f"{src}: model.hidden: expected a list of positive integers, got {model['hidden']!r}")
    if "buckets" in model:
        try:
            np_dan.hash_config(model).check()
        except HashConfigError as e:
            raise BisentError(f"{src}: model.{e.key}: {e.problem}") from None
    if arch == "hash-transformer" and model["d_model"] % model["heads"]:
        raise BisentError(f"{src}: model.d_model: {model['d_model']} is not a multiple of model.heads "
                          f"({model['heads']})")
    if arch == "adapter" and model["residual"] and model["dim"] is not None:
        raise BisentError(f"{src}: model.dim: a residual adapter keeps its base's dimension; leave it null")


def _dual(model: dict[str, Field], *, tokenizer: bool = False) -> ModelConfig:
    """A dual encoder's recipe: trained by guo2019 (ranking) or distill (a teacher); the shared sections are
    :mod:`bisent.training.objectives.dual`'s. ``dim: null`` = the teacher's dimension, else a default."""
    return ModelConfig(model, objective="guo2019", choices=("guo2019", "distill"), tokenizer=tokenizer,
                       check=check_config)


#: the ``model`` section of the dual-encoder recipes
MODEL_CONFIGS = {
    "dan": _dual({
        "dim": Field(None, int, nullable=True, minimum=1),
        "embed_dim": Field(256, int, minimum=1),
        "hidden": Field([512], list),                # ReLU layers between the mean and the output
        "feature_dropout": Field(0.0, NUM, minimum=0),  # drop whole features before averaging (training only)
        "dropout": Field(0.0, NUM, minimum=0),
        **HASH_FIELDS,
        "word_ngrams": Field(2, int, minimum=1),     # 1: words, 2: words and bigrams
    }),
    "hash-transformer": _dual({
        "dim": Field(None, int, nullable=True, minimum=1),
        "embed_dim": Field(128, int, minimum=1),     # word / n-gram embedding size, projected to d_model
        "d_model": Field(256, int, minimum=8),
        "layers": Field(2, int, minimum=1),
        "heads": Field(4, int, minimum=1),
        "ff_dim": Field(512, int, minimum=1),
        "dropout": Field(0.1, NUM, minimum=0),
        **HASH_FIELDS,
        "max_tokens": Field(64, int, minimum=1),
    }),
    "bilstm": _dual({
        "dim": Field(None, int, nullable=True, minimum=1),  # null: 2 * hidden_dim (no output layer), or the teacher's
        "embed_dim": Field(256, int, minimum=1),
        "hidden_dim": Field(256, int, minimum=1),
        "layers": Field(1, int, minimum=1),
        "dropout": Field(0.1, NUM, minimum=0),
    }, tokenizer=True),
    "adapter": _dual({
        "base": Field("use-m3", str),                # the frozen encoder: registered name or model directory
        "dim": Field(None, int, nullable=True, minimum=1),  # null: the base's dimension (or the teacher's)
        "hidden": Field([], list),                   # [] = one linear map (starts as the identity)
        "residual": Field(False, bool),              # x + MLP(x), the last layer starting at zero
    }),
}


def build_dual(architecture: str, hp: dict) -> nn.Module:
    """``cls(**hyper-parameters)``: the same call at training time and at load time."""
    return DUAL_MODELS[architecture](**hp)


class TorchDualEncoder(Encoder):
    """The :class:`Encoder` over a dual torch module (CPU, eval, no grad); also used for dev evaluation in training.

    An adapter's frozen base always reads and fills its own embedding cache
    here, even under ``encode(..., cache=False)``: during training the base's
    vectors never change, and re-embedding the dev set with a slow base at
    every evaluation would cost minutes. (The NumPy
    :class:`bisent.models.adapter.AdapterEncoder` passes ``cache`` on, for honest speed figures.)
    """

    batch_size = 256

    def __init__(self, model: nn.Module, *, name: str, content_hash: str):
        self.model, self.name = model, name
        self.id = f"{model.architecture}/{content_hash[:20]}"
        self.dim = model.dim
        if isinstance(model, Adapter):
            self.languages, self.lang_dependent = model.base.languages, model.base.lang_dependent
            self.batch_size = model.base.batch_size

    def embed_batch(self, sentences: list[str], lang: str) -> np.ndarray:
        was_training = self.model.training
        self.model.eval()
        device = next(self.model.parameters()).device
        with torch.inference_mode():
            inputs = {k: v.to(device) for k, v in self.model.featurize(sentences, lang).items()}
            out = self.model(**inputs)                                                          # (B, D)
        self.model.train(was_training)
        return out.float().cpu().numpy()


# --- model directories -------------------------------------------------------------------------------

def save_dual(model: nn.Module, out_dir, extra: dict | None = None, half: bool = False, int8: bool = False) -> None:
    """Write the model directory: weights (float16 if ``half``, int8 tables if ``int8``), ``config.json`` (+
    ``tokenizer.model``; the adapter names its base)."""
    extra, files = dict(extra or {}), {}
    if isinstance(model, BiLSTM):
        files[TOKENIZER_FILE] = model.tokenizer.proto
        extra["tokenizer"] = {"file": TOKENIZER_FILE, "max_len": model.hp["max_len"]}
    if isinstance(model, Adapter):
        extra["base"] = {"name": model.hp["base"], "id": model.base.id}
    tensors = {k: v.detach().float() for k, v in model.state_dict().items()}
    modeldir.save(out_dir, model.architecture, model.hp, tensors, extra=extra, files=files, half=half, int8=int8)


def load_dual(model_dir, config: dict | None = None) -> tuple[nn.Module, str]:
    """Rebuild ``(torch module in eval mode, content hash)`` from any dual model directory."""
    model, md = modeldir.load_module(model_dir, None, config, classes=DUAL_MODELS)
    if isinstance(model, BiLSTM):
        model.tokenizer = Tokenizer.from_model_dir(md)
        return model, md.content_hash(model.tokenizer.proto)
    return model, md.content_hash()


def _torch_loader(model_dir: Path, config: dict) -> TorchDualEncoder:
    model, digest = load_dual(model_dir, config)
    return TorchDualEncoder(model, name=str(model_dir), content_hash=digest)


register_architecture("hash-transformer")(_torch_loader)
register_architecture("bilstm")(_torch_loader)
