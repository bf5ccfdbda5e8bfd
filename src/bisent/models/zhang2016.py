"""Zhang et al. (2016) bilingual autoencoder over global descriptors, and the BBoWAE baseline (Chandar et al. 2014).

Reference: ``zhang2016`` in references.bib.

**Zhang 2016** (architecture ``zhang2016``). A sentence is its word vectors
``M = (e(x_1) ... e(x_n))`` (d, n) looked up in its language's table ``L``;
four descriptors per row (Eq. 5): ``min``, ``max``, ``avg`` and ``std``
(population standard deviation). Two of them are the input, the other two
the target: MM2AS reads ``[min; max]`` and reconstructs ``[avg; std]``,
AS2MM the reverse (``variant``). ``descriptor_norm: standard`` first centres
each descriptor dimension on its training mean and maps its training standard
deviation to 0.5 (``norm.<lang>.shift`` / ``.scale``, fixed before training;
``none``: the raw descriptors, as in the paper). One encoder per language, ONE decoder:

    hid = tanh(W_enc,l [g_in] + b_enc,l) / ||.||            (Eq. 6, unit length)
    out = tanh(W_dec hid + b_dec)                            (Eq. 7, W_dec shared by the languages)

and the sentence embedding (Eq. 11-12) lets both views into the hidden layer,
the target descriptors through the transposed decoder:

    hid* = tanh(W_enc,l [g_in] + gamma W_dec^T [g_tgt] + b_enc,l) / ||.||

with ``gamma`` = ``target_weight`` (1 in the paper). W_dec must be large to map
a unit hidden vector onto the targets, so at gamma = 1 the target term
outweighs the encoder's several times over and the embedding becomes a
projection of the target descriptors that training never aligned across
the languages (docs/models/zhang2016.md: the dev figures).

(the paper normalises every hidden output; on unit vectors its Euclidean
similarity of Eq. 13, 1/2 ||hid_x - hid_y||^2 = 1 - cos, ranks exactly as cosine).
The paper's b_enc carries no language index in Eq. 11-12 but belongs to each
encoder in Eq. 6; here each language has its own.

**BBoWAE** (architecture ``bbowae``, §3 Eq. 1-4). A sentence is the binary bag
``v(x)`` over its language's vocabulary; ``a(x) = c + W_l^T v(x)`` (the sum of
its words' rows, bias ``c`` shared), ``phi = sigmoid(a)``; each language
decodes any hidden vector with its tied weights, ``v^(x) = sigmoid(W_x phi + b_x)``.
Its embedding is ``a(x)`` (the paper: "the *sum* of bag-of-words
embeddings"); its pair score is the paper's footnote 6, the negated sum of the
cross-entropy reconstruction errors ``l(x,y) + l(y,x) + l(x,x) + l(y,y) +
beta l([x,y],[x,y])`` (:meth:`BBoWAEEncoder.pair_scores`).

Tokens: lower-cased (``lowercase``) runs of word characters and single other
symbols (:func:`tokenize`); each language has its own vocabulary, id 0 is
``<unk>`` for every word not in it (a trained row like the others). The
vocabularies are ``vocab.json`` in the model directory. A language the
model was not trained on is read with the vocabulary and encoder of
``unseen_language`` (null: refused): only strings it shares with that
language (numbers, names, cognates) then carry meaning.

Inference is NumPy (a gather and a few small matrix products); the torch
modules here are what training optimises (``training/objectives/zhang2016.py``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from ..encoders.base import Encoder
from ..encoders.trained import register_architecture
from ..errors import BisentError
from . import modeldir
from .keys import NUM, Field, ModelConfig

VOCAB_FILE = "vocab.json"
UNK = "<unk>"
#: the ``model`` section of config.json, per architecture (the model-directory contract, models/modeldir.py)
CONFIG_KEYS = {"zhang2016": ("languages", "hidden", "word_dim", "variant", "descriptor_norm", "target_weight",
                              "lowercase", "max_len", "unseen_language"),
               "bbowae": ("languages", "hidden", "beta", "lowercase", "max_len", "unseen_language")}
#: the ``model`` section of their recipes (a word vocabulary per language; the other sections:
#: training/objectives/zhang2016.py and bbowae.py)
MODEL_CONFIGS = {
    "zhang2016": ModelConfig({
        "variant": Field("mm2as", str, ("mm2as", "as2mm")),  # input [min; max] -> target [avg; std], or the reverse
        "word_dim": Field(64, int, minimum=1),                  # d
        "hidden": Field(None, int, nullable=True, minimum=1),   # m (null: 2d, as in the paper)
        "descriptor_norm": Field("none", str, ("none", "standard")),  # standard: each dimension centred, sd -> 0.5
        "target_weight": Field(1.0, NUM, minimum=0),            # gamma on W_dec^T g_tgt in Eq. 11-12 (1: the paper)
        "finetune_words": Field(False, bool),                   # train the word tables L (Eq. 10) or keep word2vec's
        "word_vectors": Field(None, (str, dict), nullable=True),  # path, or {lang: path}; null: word2vec on the pairs
        "unseen_language": Field("auto", str)}),                # auto: read other languages as the 2nd; refuse
    "bbowae": ModelConfig({"hidden": Field(128, int, minimum=1), "unseen_language": Field("auto", str)}),
}
VARIANTS = {"mm2as": (("min", "max"), ("avg", "std")), "as2mm": (("avg", "std"), ("min", "max"))}
DESCRIPTORS = ("min", "max", "avg", "std")          #: the rows of the ``norm.<lang>.shift`` / ``.scale`` tensors (4, d)
#: ``descriptor_norm: standard``: a descriptor dimension's training standard deviation maps to this many units,
#: so that about 95 % of the standardised targets lie inside tanh's (-1, 1)
STANDARD_UNIT = 0.5
_TOKEN = re.compile(r"\w+|[^\w\s]")


def tokenize(text: str, lowercase: bool = True) -> list[str]:
    """Word-character runs and single other symbols: ``"Click OK."`` -> ``["click", "ok", "."]``."""
    return _TOKEN.findall(text.lower() if lowercase else text)


def to_ids(tokens: list[str], index: dict[str, int], max_len: int) -> list[int]:
    """Vocabulary ids of the first ``max_len`` tokens (``<unk>`` = 0); an empty sentence is one ``<unk>``."""
    return [index.get(t, 0) for t in tokens[:max_len]] or [0]


# --- descriptors (Eq. 5) ---------------------------------------------------------------------------

def pad_ids(seqs: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """``(B, T)`` int64 ids padded with 0 and the ``(B, T)`` bool mask of real tokens."""
    T = max(len(s) for s in seqs)
    ids = np.zeros((len(seqs), T), dtype=np.int64)
    mask = np.zeros((len(seqs), T), dtype=bool)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = s
        mask[i, :len(s)] = True
    return ids, mask


def descriptors_np(table: np.ndarray, ids: np.ndarray, mask: np.ndarray) -> dict[str, np.ndarray]:
    """Eq. 5 for a batch: ``{"min", "max", "avg", "std"}`` each ``(B, d)`` over the real tokens of each row."""
    E = table[ids]                                                          # (B, T, d)
    m = mask[:, :, None]                                                    # (B, T, 1)
    n = mask.sum(1, keepdims=True).astype(np.float32)                       # (B, 1)
    avg = np.where(m, E, 0).sum(1) / n                                      # (B, d)
    var = (np.where(m, E - avg[:, None, :], 0) ** 2).sum(1) / n             # (B, d) population variance
    return {"min": np.where(m, E, np.inf).min(1), "max": np.where(m, E, -np.inf).max(1),
            "avg": avg, "std": np.sqrt(var)}


def normalised(g: dict, shift, scale) -> dict:
    """``(g_k - shift_k) * scale_k`` for each descriptor ``k`` (rows of ``shift``, ``scale`` (4, d) in
    :data:`DESCRIPTORS` order); NumPy or torch. Identity rows (0, 1) for ``descriptor_norm: none``."""
    return {k: (g[k] - shift[i]) * scale[i] for i, k in enumerate(DESCRIPTORS)}


def norm_stats(g: dict, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """``(shift, scale)`` (4, d) float32 from the descriptors ``g`` (each (N, d)) of a language's training
    sentences: ``none`` the identity; ``standard`` each dimension centred on its mean and its standard
    deviation mapped to :data:`STANDARD_UNIT` (why: docs/models/zhang2016.md)."""
    d = g["min"].shape[1]
    if mode == "none":
        return np.zeros((4, d), np.float32), np.ones((4, d), np.float32)
    stack = np.stack([np.asarray(g[k], dtype=np.float64) for k in DESCRIPTORS])           # (4, N, d)
    sd = stack.std(1)
    scale = np.where(sd > 1e-8, STANDARD_UNIT / np.maximum(sd, 1e-8), 1.0)          # a constant dimension: centred only
    return stack.mean(1).astype(np.float32), scale.astype(np.float32)


def views(g: dict, variant: str) -> tuple:
    """``([g_in_1; g_in_2], [g_tgt_1; g_tgt_2])`` of a descriptor dict, concatenated on the last axis."""
    inp, tgt = VARIANTS[variant]
    cat = np.concatenate if isinstance(g[inp[0]], np.ndarray) else _torch_cat
    return cat([g[inp[0]], g[inp[1]]], -1), cat([g[tgt[0]], g[tgt[1]]], -1)


def _torch_cat(xs, dim):
    import torch
    return torch.cat(xs, dim)


# --- vocabularies ----------------------------------------------------------------------------------

def parse_vocab(data: bytes, path: Path, languages: list[str]) -> dict[str, list[str]]:
    """``vocab.json`` bytes -> ``{lang: [word, ...]}`` (index = id; 0 is ``<unk>``); one-line errors name ``path``."""
    try:
        vocab = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BisentError(f"{path}: corrupt JSON ({e})") from None
    if not isinstance(vocab, dict) or any(not isinstance(vocab.get(lang), list) or not vocab[lang]
                                          or vocab[lang][0] != UNK
                                          for lang in languages):
        raise BisentError(f"{path}: expected {{language: [\"{UNK}\", word, ...]}} for {', '.join(languages)}")
    return vocab


def vocab_bytes(vocab: dict[str, list[str]]) -> bytes:
    return json.dumps(vocab, ensure_ascii=False).encode("utf-8")


# --- inference encoders (NumPy) --------------------------------------------------------------------

class _WordEncoder(Encoder):
    """What both architectures share: vocabularies per language, tokenisation, the unseen-language rule."""

    lang_dependent = True
    batch_size = 256

    def __init__(self, architecture: str, hp: dict, vocab: dict[str, list[str]], *, name: str, digest: str):
        self.hp, self.name = dict(hp), name
        self.id = f"{architecture}/{digest[:20]}"
        self.langs = list(hp["languages"])
        self.index = {lang: {w: i for i, w in enumerate(vocab[lang])} for lang in self.langs}
        self.fallback = hp.get("unseen_language")
        self.languages = None if self.fallback else frozenset(self.langs)

    def side(self, lang: str) -> str:
        """The trained language whose vocabulary and encoder read ``lang``."""
        base = lang.split("-")[0]
        for cand in (lang, base):
            if cand in self.index:
                return cand
        return self.fallback

    def ids(self, sentences: list[str], lang: str) -> list[list[int]]:
        index = self.index[lang]
        return [to_ids(tokenize(s, self.hp["lowercase"]), index, self.hp["max_len"]) for s in sentences]


class Zhang2016Encoder(_WordEncoder):
    """Eq. 11-12: ``tanh(W_enc,l g_in + gamma W_dec^T g_tgt + b_enc,l)``, unit length (the base class normalises);
    ``gamma`` is ``target_weight`` (1: the paper), the descriptors normalised as in training."""

    def __init__(self, hp: dict, tensors: dict[str, np.ndarray], vocab: dict, *, name: str, digest: str):
        super().__init__("zhang2016", hp, vocab, name=name, digest=digest)
        self.variant = hp["variant"]
        self.dim = int(hp["hidden"])
        self.tables = {lang: tensors[f"embed.{lang}"] for lang in self.langs}                      # (V_l, d)
        self.w_in = {lang: np.ascontiguousarray(tensors[f"enc.{lang}.weight"].T) for lang in self.langs}  # (2d, m)
        self.b_in = {lang: tensors[f"enc.{lang}.bias"] for lang in self.langs}                     # (m,)
        # (2d, m): W_dec^T acts on rows
        self.w_tgt = np.ascontiguousarray(tensors["dec.weight"]) * np.float32(hp["target_weight"])
        # (4, d) each
        self.norm = {lang: (tensors[f"norm.{lang}.shift"], tensors[f"norm.{lang}.scale"]) for lang in self.langs}

    def embed_batch(self, sentences: list[str], lang: str) -> np.ndarray:
        lang = self.side(lang)
        ids, mask = pad_ids(self.ids(sentences, lang))
        g = normalised(descriptors_np(self.tables[lang], ids, mask), *self.norm[lang])
        g_in, g_tgt = views(g, self.variant)                                                     # (B, 2d) each
        return np.tanh(g_in @ self.w_in[lang] + g_tgt @ self.w_tgt + self.b_in[lang])          # (B, m)


class BBoWAEEncoder(_WordEncoder):
    """``a(x) = c + sum of the rows of x's distinct words``; :meth:`pair_scores` is footnote 6's entropy score."""

    def __init__(self, hp: dict, tensors: dict[str, np.ndarray], vocab: dict, *, name: str, digest: str):
        super().__init__("bbowae", hp, vocab, name=name, digest=digest)
        self.dim = int(hp["hidden"])
        self.W = {lang: tensors[f"W.{lang}"] for lang in self.langs}                              # (V_l, k)
        self.b = {lang: tensors[f"b.{lang}"] for lang in self.langs}                              # (V_l,)
        self.c = tensors["c"]                                                                     # (k,)

    def bags(self, sentences: list[str], lang: str) -> list[np.ndarray]:
        return [np.unique(s) for s in self.ids(sentences, lang)]

    def pre_activation(self, bags: list[np.ndarray], lang: str) -> np.ndarray:
        W = self.W[lang]
        return np.stack([W[b].sum(0) for b in bags]) + self.c                                    # (B, k)

    def embed_batch(self, sentences: list[str], lang: str) -> np.ndarray:
        lang = self.side(lang)
        return self.pre_activation(self.bags(sentences, lang), lang)

    def _xent(self, phi: np.ndarray, bags: list[np.ndarray], lang: str) -> np.ndarray:
        """Cross-entropy of each binary bag under ``sigmoid(W_l phi + b_l)``, summed over the vocabulary: (B,)."""
        logits = phi @ self.W[lang].T + self.b[lang]                                              # (B, V)
        # -[v log s(z) + (1-v) log(1-s(z))] = softplus(z) - v z
        total = np.logaddexp(0, logits).sum(1)
        return total - np.array([logits[i, b].sum() for i, b in enumerate(bags)])

    def pair_scores(self, src: list[str], tgt: list[str], src_lang: str, tgt_lang: str) -> np.ndarray:
        """Footnote 6: ``-(l(x,y) + l(y,x) + l(x,x) + l(y,y) + beta l([x,y],[x,y]))`` per pair, higher = closer."""
        sx, sy = self.side(self.check_lang(src_lang)), self.side(self.check_lang(tgt_lang))
        bx, by = self.bags(src, sx), self.bags(tgt, sy)
        ax, ay = self.pre_activation(bx, sx), self.pre_activation(by, sy)                         # (B, k)
        px, py = _sigmoid(ax), _sigmoid(ay)
        pxy = _sigmoid(ax + ay - self.c)                                                          # joint input [x, y]
        err = (self._xent(px, by, sy) + self._xent(py, bx, sx) + self._xent(px, bx, sx) + self._xent(py, by, sy)
               + self.hp["beta"] * (self._xent(pxy, bx, sx) + self._xent(pxy, by, sy)))
        return -err


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


# --- shapes, save, load ----------------------------------------------------------------------------

def expected_shapes(architecture: str, hp: dict, vocab_sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """Every tensor of a model directory and its shape, from ``config.json`` and the vocabularies."""
    m = int(hp["hidden"])
    if architecture == "zhang2016":
        d = int(hp["word_dim"])
        shapes = {"dec.weight": (2 * d, m), "dec.bias": (2 * d,)}
        for lang, v in vocab_sizes.items():
            shapes.update({f"embed.{lang}": (v, d), f"enc.{lang}.weight": (m, 2 * d), f"enc.{lang}.bias": (m,),
                           f"norm.{lang}.shift": (4, d), f"norm.{lang}.scale": (4, d)})
        return shapes
    shapes = {"c": (m,)}
    for lang, v in vocab_sizes.items():
        shapes.update({f"W.{lang}": (v, m), f"b.{lang}": (v,)})
    return shapes


def save_model_dir(out_dir, architecture: str, hp: dict, tensors: dict, vocab: dict[str, list[str]],
                   extra: dict | None = None) -> None:
    """``vocab.json``, ``model.safetensors``, then ``config.json`` (:func:`bisent.models.modeldir.save`)."""
    modeldir.save(out_dir, architecture, hp, tensors, extra=extra, files={VOCAB_FILE: vocab_bytes(vocab)})


def _load(model_dir: Path, config: dict, cls):
    arch = config.get("architecture")
    md = modeldir.load(model_dir, CONFIG_KEYS[arch], architecture=arch, config=config)
    langs = md.hp["languages"]
    if not (isinstance(langs, list) and langs and all(isinstance(x, str) for x in langs)):
        raise md.error(f"'languages' must be a list of language codes, got {langs!r}")
    data = md.read_file(VOCAB_FILE, "vocabularies")
    vocab = parse_vocab(data, md.path / VOCAB_FILE, langs)
    try:
        shapes = expected_shapes(arch, md.hp, {lang: len(vocab[lang]) for lang in langs})
    except (TypeError, ValueError) as e:
        raise md.error(f"incomplete {arch} config ({e})") from None
    modeldir.check_tensors(md.path / modeldir.WEIGHTS_FILE, md.tensors, shapes)
    return cls(md.hp, md.tensors, vocab, name=str(model_dir), digest=md.content_hash(data))


@register_architecture("zhang2016")
def load_zhang2016(model_dir: Path, config: dict) -> Zhang2016Encoder:
    return _load(model_dir, config, Zhang2016Encoder)


@register_architecture("bbowae")
def load_bbowae(model_dir: Path, config: dict) -> BBoWAEEncoder:
    return _load(model_dir, config, BBoWAEEncoder)


# --- the torch modules that training optimises (same tensor names as the model directory) ----------

try:
    import torch
    from torch import nn
except ModuleNotFoundError as e:  # inference-only install: the NumPy encoders above still load
    if e.name != "torch":
        raise
    torch = None

if torch is not None:
    def descriptors_torch(E: "torch.Tensor", mask: "torch.Tensor") -> dict[str, "torch.Tensor"]:
        """Eq. 5 on ``E`` (B, T, d) word vectors with ``mask`` (B, T) bool: each descriptor ``(B, d)``."""
        m = mask.unsqueeze(-1)                                                  # (B, T, 1)
        n = mask.sum(1, keepdim=True).to(E.dtype)                               # (B, 1)
        avg = E.masked_fill(~m, 0).sum(1) / n                                   # (B, d)
        var = (E - avg.unsqueeze(1)).masked_fill(~m, 0).pow(2).sum(1) / n       # (B, d)
        return {"min": E.masked_fill(~m, float("inf")).amin(1), "max": E.masked_fill(~m, float("-inf")).amax(1),
                "avg": avg, "std": (var + 1e-12).sqrt()}                        # +1e-12: finite gradient at std 0

    class _Norm(nn.Module):
        """The fixed descriptor normalisation of one language: buffers ``shift``, ``scale`` (4, d), not trained."""

        def __init__(self, d: int):
            super().__init__()
            self.register_buffer("shift", torch.zeros(4, d))
            self.register_buffer("scale", torch.ones(4, d))

    class Zhang2016(nn.Module):
        """Word tables ``embed.<lang>`` (V_l, d), encoders ``enc.<lang>`` (2d -> m), ONE decoder ``dec`` (m -> 2d),
        the descriptor normalisation ``norm.<lang>`` (fixed before training; the identity until set)."""

        def __init__(self, languages: list[str], vocab_sizes: dict[str, int], word_dim: int, hidden: int,
                     variant: str = "mm2as", target_weight: float = 1.0):
            super().__init__()
            d, m = word_dim, hidden
            self.variant, self.target_weight = variant, target_weight
            self.norm = nn.ModuleDict({lang: _Norm(d) for lang in languages})
            self.embed = nn.ParameterDict({lang: nn.Parameter(torch.zeros(vocab_sizes[lang], d)) for lang in languages})
            self.enc = nn.ModuleDict({lang: nn.Linear(2 * d, m) for lang in languages})
            self.dec = nn.Linear(m, 2 * d)
            for p in [*self.enc.parameters(), *self.dec.parameters()]:            # the paper: N(0, 0.01)
                nn.init.normal_(p, 0.0, 0.01)

        def views(self, ids: "torch.Tensor", mask: "torch.Tensor", lang: str):
            """``(g_in, g_tgt)`` each ``(B, 2d)`` from padded ids ``(B, T)``, normalised (``norm.<lang>``)."""
            g = descriptors_torch(self.embed[lang][ids], mask)
            return views(normalised(g, self.norm[lang].shift, self.norm[lang].scale), self.variant)

        def hidden(self, g_in: "torch.Tensor", lang: str) -> "torch.Tensor":
            """Eq. 6: ``(B, 2d) -> (B, m)``, unit rows."""
            return nn.functional.normalize(torch.tanh(self.enc[lang](g_in)), dim=-1)

        def reconstruct(self, hid: "torch.Tensor") -> "torch.Tensor":
            """Eq. 7: ``(B, m) -> (B, 2d)`` with the shared decoder."""
            return torch.tanh(self.dec(hid))

        def final(self, g_in: "torch.Tensor", g_tgt: "torch.Tensor", lang: str) -> "torch.Tensor":
            """Eq. 11-12: ``tanh(W_enc g_in + gamma W_dec^T g_tgt + b_enc)``, unit rows ``(B, m)``."""
            pre = self.enc[lang](g_in) + self.target_weight * (g_tgt @ self.dec.weight)
            return nn.functional.normalize(torch.tanh(pre), dim=-1)

    class BBoWAE(nn.Module):
        """Word rows ``W.<lang>`` (V_l, k) used to encode and (tied) to decode, biases ``b.<lang>``, shared ``c``."""

        def __init__(self, languages: list[str], vocab_sizes: dict[str, int], hidden: int):
            super().__init__()
            self.W = nn.ParameterDict({lang: nn.Parameter(torch.randn(vocab_sizes[lang], hidden) * 0.01)
                                       for lang in languages})
            self.b = nn.ParameterDict({lang: nn.Parameter(torch.zeros(vocab_sizes[lang])) for lang in languages})
            self.c = nn.Parameter(torch.zeros(hidden))

        def pre_activation(self, bag: "torch.Tensor", lang: str) -> "torch.Tensor":
            """Eq. 1: ``a = c + W^T v``, ``bag`` the binary ``(B, V_l)`` bags -> ``(B, k)``."""
            return bag @ self.W[lang] + self.c

        def xent(self, phi: "torch.Tensor", bag: "torch.Tensor", lang: str) -> "torch.Tensor":
            """Eq. 2-3 and the loss l: cross-entropy of ``bag`` (B, V) under ``sigmoid(W phi + b)``, summed: (B,)."""
            logits = phi @ self.W[lang].T + self.b[lang]                                          # (B, V)
            return nn.functional.binary_cross_entropy_with_logits(logits, bag, reduction="none").sum(1)
