"""The word-alignment BiLSTM of the divergence paper (section 3, Figure 1) and its semb baseline (Figure 2).

Two BiLSTMs, one per language (``net_s``, ``net_t``), over word embeddings
(``LT_s``, ``LT_t``; a vocabulary per language, OOV -> UNK, initialised from
cross-lingual vectors when given). For a pair (s, t):

- word vectors ``h_i = [fwd_i; bwd_i]`` (2H), alignment scores
  ``S(i, j) = h_i^src . h_j^tgt`` (:meth:`DivergenceNet.forward`; one pair: :meth:`DivergenceNet.pair_scores`);
- Eq. 2, ``aggr_s(i) = 1/r log sum_j exp(r S(i, j))`` and ``aggr_t(j)``
  likewise over i (:func:`batch_aggregates`; padding masked);
- Eq. 1, the sentence embedding ``[fwd_last; bwd_first]`` compared by cosine
  (:meth:`DivergenceNet.sentence`; the ``-e DIR`` encoder, :class:`DivergenceEncoder`);
- Eq. 4, semb: ``h_sim = w . tanh(W [h_s * h_t; |h_s - h_t|] + b) + b_sim``
  (:meth:`DivergenceNet.semb`; only when ``semb: true``).

The losses (Eq. 3 and Eq. 5) are in :mod:`bisent.training.objectives.divergence`.
Model directory: ``config.json`` (hyper-parameters, both vocabularies,
languages) + ``model.safetensors``; :func:`save_divergence` / :func:`load_divergence`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ..encoders.base import Encoder
from ..encoders.trained import register_architecture
from ..errors import BisentError
from .keys import NUM, Field, ModelConfig
from .modeldir import load_module, save

ARCHITECTURE = "divergence"
PAD, UNK = 0, 1
#: the ``model`` section of its recipes (the other sections: training/objectives/divergence.py)
MODEL_CONFIGS = {ARCHITECTURE: ModelConfig({
    "embed_dim": Field(128, int, minimum=1), "hidden_dim": Field(128, int, minimum=1),
    "r": Field(1.0, NUM, minimum=0), "dropout": Field(0.0, NUM, minimum=0),
    "semb_hidden": Field(128, int, minimum=1), "vocab_size": Field(30000, int, minimum=1),
    "min_count": Field(2, int, minimum=1), "lowercase": Field(True, bool),
    "max_words": Field(200, int, minimum=1),                     # longer sides are not scored
    "word_vectors": Field(None, (str, dict), nullable=True),    # path, or {lang or src/tgt: path}
    "word_vectors_from": Field(None, str, nullable=True)})}     # an encoder: its vectors of each word, PCA'd


def batch_aggregates(S: torch.Tensor, src_mask: torch.Tensor, tgt_mask: torch.Tensor, r: float
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 2 over a padded batch: ``S`` (B, I, J), masks (B, I) / (B, J) bool -> aggr_s (B, I), aggr_t (B, J)."""
    neg = torch.finfo(S.dtype).min / 4
    a_s = torch.logsumexp((r * S).masked_fill(~tgt_mask[:, None, :], neg), dim=2) / r   # (B, I)
    a_t = torch.logsumexp((r * S).masked_fill(~src_mask[:, :, None], neg), dim=1) / r   # (B, J)
    return a_s, a_t


class DivergenceNet(nn.Module):
    """``net_s`` and ``net_t``: embeddings + one BiLSTM per language; the semb head when ``semb``."""

    architecture = ARCHITECTURE
    config_keys = ("src_vocab", "tgt_vocab", "embed_dim", "hidden_dim", "r", "semb", "semb_hidden", "dropout",
                   "src_lang", "tgt_lang", "lowercase", "max_words")

    def __init__(self, src_vocab: list[str], tgt_vocab: list[str], *, embed_dim: int = 128, hidden_dim: int = 128,
                 r: float = 1.0, semb: bool = False, semb_hidden: int = 128, dropout: float = 0.0,
                 src_lang: str = "src", tgt_lang: str = "tgt", lowercase: bool = True, max_words: int = 200):
        super().__init__()
        self.hp = {"src_vocab": list(src_vocab), "tgt_vocab": list(tgt_vocab), "embed_dim": embed_dim,
                   "hidden_dim": hidden_dim, "r": float(r), "semb": bool(semb),
                   "semb_hidden": semb_hidden, "dropout": float(dropout), "src_lang": src_lang, "tgt_lang": tgt_lang,
                   "lowercase": bool(lowercase), "max_words": max_words}
        self.vocab = {"src": list(src_vocab), "tgt": list(tgt_vocab)}
        self.ids = {side: {w: i for i, w in enumerate(v)} for side, v in self.vocab.items()}
        self.r, self.lowercase, self.max_words = float(r), bool(lowercase), max_words
        self.langs = {"src": src_lang, "tgt": tgt_lang}
        self.emb = nn.ModuleDict({side: nn.Embedding(len(v), embed_dim, padding_idx=PAD)
                                  for side, v in self.vocab.items()})
        self.rnn = nn.ModuleDict({side: nn.LSTM(embed_dim, hidden_dim, batch_first=True, bidirectional=True)
                                  for side in ("src", "tgt")})
        self.drop = nn.Dropout(dropout)
        if semb:                                                           # Eq. 4
            self.semb_hidden = nn.Linear(4 * hidden_dim, semb_hidden)
            self.semb_out = nn.Linear(semb_hidden, 1)

    # --- inputs ---
    def side_of(self, lang: str) -> str:
        for side, code in self.langs.items():
            if lang == code or lang.split("-")[0] == code:
                return side
        raise BisentError(f"divergence model for {self.langs['src']}-{self.langs['tgt']}: no encoder for language "
                          f"'{lang}'")

    def featurize(self, sents: list[list[str]], side: str) -> tuple[torch.Tensor, torch.Tensor]:
        """Word lists -> ids (B, L) padded with 0, lengths (B,) (at least 1: an empty side is one UNK)."""
        ids = self.ids[side]
        rows = [[ids.get(w.lower() if self.lowercase else w, UNK) for w in s[:self.max_words]] or [UNK] for s in sents]
        lens = torch.tensor([len(r) for r in rows])
        out = torch.zeros(len(rows), int(lens.max()) if rows else 1, dtype=torch.long)
        for k, r in enumerate(rows):
            out[k, :len(r)] = torch.tensor(r)
        return out, lens

    # --- the network ---
    def encode_side(self, ids: torch.Tensor, lens: torch.Tensor, side: str) -> tuple[torch.Tensor, torch.Tensor]:
        """Word vectors ``h_i = [fwd_i; bwd_i]`` (B, L, 2H) and Eq. 1's ``[fwd_last; bwd_first]`` (B, 2H)."""
        x = self.drop(self.emb[side](ids))                                 # (B, L, E)
        packed = pack_padded_sequence(x, lens.cpu(), batch_first=True, enforce_sorted=False)
        out, (h_n, _) = self.rnn[side](packed)
        h, _ = pad_packed_sequence(out, batch_first=True, total_length=ids.shape[1])   # (B, L, 2H)
        sent = torch.cat([h_n[0], h_n[1]], dim=-1)                         # fwd at the last word, bwd at the first
        return self.drop(h), sent

    def forward(self, src_ids, src_lens, tgt_ids, tgt_lens) -> dict[str, torch.Tensor]:
        """Scores ``S`` (B, I, J), masks, Eq. 2 aggregates and both sentence vectors of a batch of pairs."""
        hs, s_vec = self.encode_side(src_ids, src_lens, "src")
        ht, t_vec = self.encode_side(tgt_ids, tgt_lens, "tgt")
        S = torch.bmm(hs, ht.transpose(1, 2))                               # (B, I, J)
        sm, tm = src_ids != PAD, tgt_ids != PAD
        a_s, a_t = batch_aggregates(S, sm, tm, self.r)
        return {"S": S, "src_mask": sm, "tgt_mask": tm, "aggr_src": a_s, "aggr_tgt": a_t,
                "src_vec": s_vec, "tgt_vec": t_vec}

    def semb(self, s_vec: torch.Tensor, t_vec: torch.Tensor) -> torch.Tensor:
        """Eq. 4: ``h_sim`` (B,) from the two sentence vectors (B, 2H)."""
        h3 = torch.tanh(self.semb_hidden(torch.cat([s_vec * t_vec, (s_vec - t_vec).abs()], dim=-1)))
        return self.semb_out(h3).squeeze(-1)

    @torch.no_grad()
    def pair_scores(self, src: list[str], tgt: list[str]) -> np.ndarray:
        """``S`` (I, J) of one tokenised pair as NumPy (eval mode)."""
        self.eval()
        si, sl = self.featurize([src], "src")
        ti, tl = self.featurize([tgt], "tgt")
        return self(si, sl, ti, tl)["S"][0, :len(src) or 1, :len(tgt) or 1].numpy().astype(np.float64)

    @torch.no_grad()
    def sentence(self, sents: list[list[str]], side: str) -> np.ndarray:
        """Eq. 1's sentence vectors (B, 2H), not normalised."""
        self.eval()
        ids, lens = self.featurize(sents, side)
        return self.encode_side(ids, lens, side)[1].numpy()


def load_word_vectors(model: DivergenceNet, side: str, path) -> int:
    """Initialise ``LT_side`` rows from a text file of ``word v1 ... vE`` lines; returns how many words were found."""
    emb = model.emb[side].weight
    ids, found = model.ids[side], 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip().split(" ")
            if n == 1 and len(parts) == 2:                                 # fastText header "count dim"
                continue
            w = parts[0].lower() if model.lowercase else parts[0]
            if w not in ids:
                continue
            if len(parts) - 1 != emb.shape[1]:
                raise BisentError(f"{path}:{n}: vector of {len(parts) - 1} values, model.embed_dim is {emb.shape[1]}")
            with torch.no_grad():
                emb[ids[w]] = torch.tensor([float(v) for v in parts[1:]])
            found += 1
    return found


def save_divergence(model: DivergenceNet, out_dir, extra: dict | None = None) -> None:
    """Write ``config.json`` (hyper-parameters with both vocabularies) and ``model.safetensors``."""
    save(out_dir, ARCHITECTURE, model.hp, model.state_dict(), extra=extra)


def load_divergence(model_dir, config: dict | None = None) -> tuple[DivergenceNet, str]:
    """Rebuild ``(model in eval mode, content hash)`` from a model directory, without pickle.

    Directories written before the vocabularies moved into ``model`` (a top-level ``vocab``) load too.
    """
    from ..encoders.trained import read_config

    config = dict(config or read_config(model_dir))
    vocab = config.pop("vocab", None)
    if isinstance(vocab, dict) and isinstance(config.get("model"), dict) and "src_vocab" not in config["model"]:
        config["model"] = {**config["model"], "src_vocab": vocab.get("src"), "tgt_vocab": vocab.get("tgt")}
    model, md = load_module(model_dir, DivergenceNet, config)
    return model, md.content_hash()


def load_model(spec) -> DivergenceNet:
    """The network of a divergence model directory; another architecture is a one-line error."""
    from ..encoders.trained import read_config

    config = read_config(spec)
    if config.get("architecture") != ARCHITECTURE:
        raise BisentError(f"{spec}: a {config.get('architecture')} model; word scores need a divergence model "
                          "(bisent train -c divergence)")
    return load_divergence(spec, config)[0]


class DivergenceEncoder(Encoder):
    """Eq. 1 as a bisent encoder: the source or target BiLSTM's ``[fwd_last; bwd_first]``, unit rows."""

    lang_dependent = True
    batch_size = 64

    def __init__(self, model: DivergenceNet, name: str, content_hash: str):
        from ..divergence.tokens import tokenize

        self.model, self.name, self.id = model, name, f"divergence:{content_hash[:16]}"
        self.dim = 2 * model.hp["hidden_dim"]
        self.languages = frozenset(model.langs.values())
        self._tok = tokenize

    def embed_batch(self, sentences: list[str], lang: str) -> np.ndarray:
        side = self.model.side_of(lang)
        with torch.inference_mode():
            return self.model.sentence([self._tok(s).words for s in sentences], side).astype(np.float32)


@register_architecture(ARCHITECTURE)
def _load(model_dir: Path, config: dict) -> Encoder:
    model, chash = load_divergence(model_dir, config)
    return DivergenceEncoder(model, str(model_dir), chash)


def alignment_matrix(model_dir, src: str, tgt: str) -> tuple[np.ndarray, list[str], list[str]]:
    """``(S (I, J), source words, target words)``: the alignment scores S(i, j) = h_i . h_j of a pair
    under the divergence model in ``model_dir`` (the heat map of ``bisent explain --divergence``)."""
    from ..divergence.scores import check_pair

    model = load_model(model_dir)
    ws, wt, reason = check_pair(src, tgt, model.max_words)
    if reason:
        raise BisentError(f"cannot align this pair: {reason}")
    return np.asarray(model.pair_scores(ws.words, wt.words)), list(ws.words), list(wt.words)
