"""Recurrent sequence-to-sequence sentence encoders, and their model directories.

- :class:`Kim2019` (Kim et al. 2019): one bidirectional GRU/LSTM encoder per
  language; sentence embedding = element-wise max over time of its states
  (Eq. 3, 6); ONE decoder shared by both encoders, no attention, whose initial
  state is the embedding (Eq. 2-4).
- :class:`Artetxe2019` (Artetxe & Schwenk 2019): ONE BiLSTM encoder for all
  languages, max-pooled, no language id; an LSTM decoder whose hidden and cell
  state come from the embedding through a linear layer, fed the embedding and
  a target-language embedding at every step.

Both expose ``embed(src, src_len, lang) -> (B, dim)`` and
``decode(emb, tgt_in, dec_lang) -> logits (B, T, V)``. A model directory
holds ``config.json`` (architecture + everything :func:`build_model` needs),
``model.safetensors`` and ``tokenizer.model`` (:mod:`bisent.models.modeldir`:
:func:`save_seq2seq`, :func:`load_seq2seq`), and :class:`Seq2SeqEncoder`
is the :class:`bisent.encoders.base.Encoder` over it.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ..encoders.base import Encoder
from ..encoders.trained import register_architecture
from ..errors import BisentError
from . import modeldir
from .keys import NUM, Field, ModelConfig
from .tokenizer import FILENAME as TOKENIZER_FILE
from .tokenizer import PAD, UNK, Tokenizer

#: the ``model`` section of the seq2seq recipes (their objectives: training/objectives/kim2019.py, artetxe2019.py)
MODEL_CONFIGS = {
    "kim2019": ModelConfig({
        "rnn": Field("gru", str, ("gru", "lstm")),
        "embed_dim": Field(256, int, minimum=1),
        "hidden_dim": Field(256, int, minimum=1),    # per direction; sentence embedding = 2 * hidden_dim
        "layers": Field(1, int, minimum=1),
        "dropout": Field(0.1, NUM, minimum=0),
        "word_vectors": Field(None, (str, dict), nullable=True),  # path, or {lang: path}
    }),
    "artetxe2019": ModelConfig({
        "embed_dim": Field(256, int, minimum=1),
        "hidden_dim": Field(256, int, minimum=1),    # encoder, per direction; embedding = 2 * hidden_dim
        "decoder_dim": Field(512, int, minimum=1),
        "lang_dim": Field(32, int, minimum=1),
        "layers": Field(1, int, minimum=1),
        "dropout": Field(0.1, NUM, minimum=0),
    }),
}


def pad(seqs: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad id lists with ``PAD``: ids ``(B, max_len)`` int64 and lengths ``(B,)`` int64."""
    lens = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    out = torch.full((len(seqs), int(lens.max())), PAD, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return out, lens


def _rnn(kind: str, input_size: int, hidden: int, layers: int, dropout: float, bidirectional: bool) -> nn.RNNBase:
    cls = {"gru": nn.GRU, "lstm": nn.LSTM}[kind]
    return cls(input_size, hidden, num_layers=layers, batch_first=True, bidirectional=bidirectional,
               dropout=dropout if layers > 1 else 0.0)


def lang_key(lang: str) -> str:
    """A language code as a module name (``pt-br`` -> ``pt_br``)."""
    return re.sub(r"[^0-9A-Za-z_]", "_", lang)


class BiRNNEncoder(nn.Module):
    """Embedding -> bidirectional RNN -> max over time: ``(B, S)`` ids -> ``(B, 2 * hidden_dim)``."""

    def __init__(self, vocab_size: int, embed_dim: int, hidden_dim: int, layers: int, rnn: str, dropout: float):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD)
        self.rnn = _rnn(rnn, embed_dim, hidden_dim, layers, dropout, bidirectional=True)
        self.drop = nn.Dropout(dropout)

    def forward(self, src: torch.Tensor, src_len: torch.Tensor) -> torch.Tensor:
        x = self.drop(self.embed(src))                                   # (B, S, E)
        packed = pack_padded_sequence(x, src_len.cpu(), batch_first=True, enforce_sorted=False)
        h, _ = self.rnn(packed)
        h, _ = pad_packed_sequence(h, batch_first=True, padding_value=float("-inf"))  # (B, S', 2H), pads -inf
        return h.max(dim=1).values                                       # (B, 2H) Eq. 3: max over positions


class Kim2019(nn.Module):
    """Per-language BiRNN encoders + one shared attention-free decoder initialised with the embedding."""

    architecture = "kim2019"
    config_keys = ("vocab_size", "languages", "rnn", "embed_dim", "hidden_dim", "layers", "dropout")

    def __init__(self, vocab_size: int, languages: list[str], rnn: str = "gru", embed_dim: int = 256,
                 hidden_dim: int = 256, layers: int = 1, dropout: float = 0.1, **_ignored):
        super().__init__()
        self.hp = dict(vocab_size=vocab_size, languages=list(languages), rnn=rnn, embed_dim=embed_dim,
                       hidden_dim=hidden_dim, layers=layers, dropout=dropout)
        self.languages, self.rnn_kind, self.layers = list(languages), rnn, layers
        self.dim = 2 * hidden_dim                                        # D: sentence embedding size
        self.encoders = nn.ModuleDict({lang_key(l): BiRNNEncoder(vocab_size, embed_dim, hidden_dim, layers, rnn,
                                                                 dropout) for l in self.languages})
        self.dec_embed = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD)
        self.decoder = _rnn(rnn, embed_dim, self.dim, layers, dropout, bidirectional=False)
        self.out = nn.Linear(self.dim, vocab_size)
        self.drop = nn.Dropout(dropout)

    def embed(self, src: torch.Tensor, src_len: torch.Tensor, lang: str) -> torch.Tensor:
        """Eq. 11-12: ``(B, S)`` ids in ``lang`` -> ``(B, D)`` max-pooled states of that language's encoder."""
        return self.encoders[lang_key(lang)](src, src_len)

    def decode(self, emb: torch.Tensor, tgt_in: torch.Tensor, dec_lang: str | None = None) -> torch.Tensor:
        """Eq. 2, 4: ``s_0 = emb`` (B, D); teacher-forced ``tgt_in`` (B, T) -> logits (B, T, V)."""
        s0 = emb.unsqueeze(0).expand(self.layers, -1, -1).contiguous()   # (L, B, D) same s_0 for every layer
        state = (s0, torch.zeros_like(s0)) if self.rnn_kind == "lstm" else s0
        s, _ = self.decoder(self.drop(self.dec_embed(tgt_in)), state)    # (B, T, D)
        return self.out(self.drop(s))                                    # (B, T, V)


class Artetxe2019(nn.Module):
    """One language-agnostic BiLSTM encoder + an LSTM decoder told the output language."""

    architecture = "artetxe2019"
    config_keys = ("vocab_size", "languages", "embed_dim", "hidden_dim", "decoder_dim", "lang_dim", "layers", "dropout")

    def __init__(self, vocab_size: int, languages: list[str], embed_dim: int = 256, hidden_dim: int = 256,
                 decoder_dim: int = 512, lang_dim: int = 32, layers: int = 1, dropout: float = 0.1, **_ignored):
        super().__init__()
        self.hp = dict(vocab_size=vocab_size, languages=list(languages), embed_dim=embed_dim, hidden_dim=hidden_dim,
                       decoder_dim=decoder_dim, lang_dim=lang_dim, layers=layers, dropout=dropout)
        self.languages, self.layers, self.decoder_dim = list(languages), layers, decoder_dim
        self.lang_index = {l: i for i, l in enumerate(self.languages)}
        self.dim = 2 * hidden_dim                                        # D
        self.encoder = BiRNNEncoder(vocab_size, embed_dim, hidden_dim, layers, "lstm", dropout)
        self.lang_embed = nn.Embedding(len(self.languages), lang_dim)
        self.dec_embed = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD)
        self.init_state = nn.Linear(self.dim, 2 * layers * decoder_dim)  # emb -> (h_0, c_0) of every layer
        self.decoder = _rnn("lstm", embed_dim + self.dim + lang_dim, decoder_dim, layers, dropout, bidirectional=False)
        self.out = nn.Linear(decoder_dim, vocab_size)
        self.drop = nn.Dropout(dropout)

    def embed(self, src: torch.Tensor, src_len: torch.Tensor, lang: str | None = None) -> torch.Tensor:
        """``(B, S)`` ids -> ``(B, D)``; the language is not used (the encoder is language-agnostic)."""
        return self.encoder(src, src_len)

    def decode(self, emb: torch.Tensor, tgt_in: torch.Tensor, dec_lang: str) -> torch.Tensor:
        """``emb`` (B, D), ``tgt_in`` (B, T) in language ``dec_lang`` -> logits (B, T, V)."""
        B, T = tgt_in.shape
        hc = self.init_state(emb).view(B, 2, self.layers, self.decoder_dim).permute(1, 2, 0, 3)  # (2, L, B, Hd)
        h0, c0 = hc[0].contiguous(), hc[1].contiguous()                  # (L, B, Hd) each
        lang = torch.full((B, T), self.lang_index[dec_lang], dtype=torch.long, device=tgt_in.device)
        x = torch.cat([self.drop(self.dec_embed(tgt_in)),               # (B, T, E)
                       emb.unsqueeze(1).expand(B, T, self.dim),          # (B, T, D) embedding at every step
                       self.lang_embed(lang)], dim=-1)                   # (B, T, Ld) output-language id
        s, _ = self.decoder(x, (h0, c0))                                 # (B, T, Hd)
        return self.out(self.drop(s))                                    # (B, T, V)


MODELS: dict[str, type[nn.Module]] = {"kim2019": Kim2019, "artetxe2019": Artetxe2019}


def build_model(architecture: str, hp: dict) -> nn.Module:
    """``cls(**hyper-parameters)``: the same call at training time and at load time."""
    return MODELS[architecture](**hp)


# --- word-vector initialisation (Kim et al. 3.2) -------------------------------------------------

def load_word_vectors(path, dim: int, lowercase: bool) -> dict[str, np.ndarray]:
    """Read ``word v1 v2 ...`` lines (a fastText/MUSE ``N D`` header line is skipped)."""
    from ..io import iter_raw_lines

    vecs: dict[str, np.ndarray] = {}
    for n, raw in iter_raw_lines(path):
        parts = raw.decode("utf-8", errors="replace").rstrip().split(" ")
        if n == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
            continue
        if len(parts) < 2:
            continue
        if len(parts) - 1 != dim:
            raise BisentError(f"{path}:{n}: vector has {len(parts) - 1} dimensions, the recipe's model.embed_dim is "
                              f"{dim}")
        try:
            v = np.asarray(parts[1:], dtype=np.float32)
        except ValueError:
            raise BisentError(f"{path}:{n}: not a word followed by numbers") from None
        word = parts[0].lower() if lowercase else parts[0]
        vecs.setdefault(word, v)
    if not vecs:
        raise BisentError(f"{path}: no word vectors")
    return vecs


@torch.no_grad()
def init_embedding(emb: nn.Embedding, pieces: list[str], vectors: dict[str, np.ndarray]) -> int:
    """Copy the vector of every whole-word piece (``▁house`` -> ``house``) into ``emb``; return how many."""
    hits = 0
    for i, piece in enumerate(pieces):
        if i == PAD or not piece.startswith("\u2581") or len(piece) < 2:
            continue
        v = vectors.get(piece[1:])
        if v is not None:
            emb.weight[i] = torch.from_numpy(v)
            hits += 1
    return hits


def init_from_word_vectors(model: Kim2019, spec: str | dict, pieces: list[str], lowercase: bool,
                           output_langs: list[str]) -> dict[str, int]:
    """Initialise Kim et al.'s word embeddings from cross-lingual word vectors.

    ``spec`` is one file for all languages or ``{lang: file}``; each encoder
    takes its language's vectors, the shared decoder those of the languages it
    writes. Returns the number of pieces initialised per embedding table.
    """
    files = {l: spec for l in model.languages} if isinstance(spec, str) else dict(spec)
    unknown = set(files) - set(model.languages)
    if unknown:
        raise BisentError(f"model.word_vectors: languages {sorted(unknown)} are not trained (languages: "
                          f"{model.languages})")
    cache: dict[str, dict] = {}
    dim = model.dec_embed.embedding_dim
    load = lambda p: cache.setdefault(str(p), load_word_vectors(p, dim, lowercase))  # noqa: E731
    report = {}
    for lang, path in files.items():
        report[f"encoder {lang}"] = init_embedding(model.encoders[lang_key(lang)].embed, pieces, load(path))
    dec_vecs: dict[str, np.ndarray] = {}
    for lang in output_langs:
        if lang in files:
            for w, v in load(files[lang]).items():
                dec_vecs.setdefault(w, v)
    if dec_vecs:
        report["decoder"] = init_embedding(model.dec_embed, pieces, dec_vecs)
    return report


# --- model directories -------------------------------------------------------------------------

def save_seq2seq(model: nn.Module, tok: Tokenizer, out_dir, *, extra: dict | None = None) -> None:
    """Write the model directory: ``tokenizer.model``, ``model.safetensors``, ``config.json``."""
    modeldir.save(out_dir, model.architecture, model.hp, model.state_dict(),
                  extra={"tokenizer": tok.config(), **(extra or {})}, files={TOKENIZER_FILE: tok.proto})


def load_seq2seq(model_dir, config: dict | None = None) -> tuple[nn.Module, Tokenizer, str]:
    """Rebuild ``(model in eval mode, tokenizer, content hash)`` from a model directory."""
    model, md = modeldir.load_module(model_dir, None, config, classes=MODELS)
    tok = Tokenizer.from_model_dir(md)
    return model, tok, modeldir.content_hash(md.weights, tok.proto, md.hp, str(tok.max_len).encode())


class Seq2SeqEncoder(Encoder):
    """The :class:`Encoder` over a trained :class:`Kim2019` / :class:`Artetxe2019` model (CPU, eval, no grad).

    ``id`` holds a hash of the weights, tokenizer and hyper-parameters, so the
    embedding cache never mixes two models. Kim et al.'s model has one encoder
    per language, so it is ``lang_dependent`` and only knows its languages;
    Artetxe & Schwenk's encoder ignores the language.
    """

    batch_size = 64

    def __init__(self, model: nn.Module, tok: Tokenizer, *, name: str, content_hash: str):
        self.model, self.tok = model.eval(), tok
        self.name = name
        self.id = f"{model.architecture}/{content_hash[:20]}"
        self.dim = model.dim
        self.lang_dependent = model.architecture == "kim2019"
        self.languages = frozenset(model.languages) if self.lang_dependent else None
        self.device = next(model.parameters()).device

    def _model_lang(self, lang: str) -> str | None:
        if not self.lang_dependent:
            return None
        return lang if lang in self.model.languages else lang.split("-")[0]

    def embed_batch(self, sentences: list[str], lang: str) -> np.ndarray:
        src, src_len = pad([ids or [UNK] for ids in self.tok.encode(sentences)])   # (B, S), (B,)
        was_training = self.model.training
        self.model.eval()
        with torch.inference_mode():
            emb = self.model.embed(src.to(self.device), src_len, self._model_lang(lang))  # (B, D)
        self.model.train(was_training)
        return emb.float().cpu().numpy()


def _loader(model_dir: Path, config: dict) -> Seq2SeqEncoder:
    model, tok, digest = load_seq2seq(model_dir, config)
    return Seq2SeqEncoder(model, tok, name=str(model_dir), content_hash=digest)


register_architecture("kim2019")(_loader)
register_architecture("artetxe2019")(_loader)
