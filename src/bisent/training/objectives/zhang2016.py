"""Training of the Zhang et al. (2016) bilingual autoencoder (Eq. 8-10) and of the BBoWAE baseline (Eq. 4).

Paper: Zhang et al. (2016), "Bilingual Autoencoders with Global Descriptors for Modeling Parallel
Sentences" (COLING 2016); models in :mod:`bisent.models.zhang2016`. ``bisent train -c zhang2016`` (or
``bbowae``) runs in the common loop (:func:`bisent.training.loop.train`) through :func:`setup`, whose step
hook (``Setup.step``) replaces the loop's batch step: the paper optimises the WHOLE corpus objective with
L-BFGS (a closure over every pair), not one batch at a time.

**Zhang 2016**, on N pairs in corpus order cut into blocks of B (Eq. 9, ``objectives.block``)::

    E_ae(x)  = 1/2 || g_tgt(x) - tanh(W_dec hid(x) + b_dec) ||^2                     (Eq. 8)
    E_sem    = sum_k 1/2 || mean_{i in block k} hid(x_i) - mean_{i in block k} hid(y_i) ||^2   (Eq. 9)
    J        = alpha/N sum_i (E_ae(x_i) + E_ae(y_i)) + (1 - alpha) E_sem
               + lambda_L/2 ||L||^2 + lambda_W/2 ||W_enc, W_dec||^2                      (Eq. 10)

``optim.optimizer: lbfgs`` (the paper): one training step is one L-BFGS iteration (strong-Wolfe line
search) on the exact J, computed block-aligned chunk by chunk with gradients accumulated;
``adam``: one step is a random set of whole blocks, with the unbiased estimate of J
(``alpha/n sum E_ae + (1-alpha) (N_blocks/n_blocks) sum E_sem + R``). Word vectors are word2vec
(gensim skip-gram with negative sampling) trained on each side of the training pairs, or read from
``--word-vectors`` files; ``model.finetune_words`` decides whether L is trained or frozen (frozen: the
descriptors are computed once and a step costs almost nothing).

**BBoWAE** (Chandar et al. 2014 as described in §3)::

    loss = mean_pairs [ l(x->y) + l(y->x) + l(x->x) + l(y->y) + beta l([x,y]->[x,y]) ] - lambda cor(a(x), a(y))

``cor`` the sum over hidden units of the Pearson correlation of ``a(x)`` and ``a(y)`` across the batch.

Checkpoints are the framework's (:mod:`bisent.training.checkpoint`, one atomic file) with the optimiser's
state (L-BFGS's direction, step, curvature pairs and last gradient; Adam's moments) as the objective's
tensors; the batch order is a function of (seed, epoch), so ``--resume`` continues the same loss curve.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from pathlib import Path

import numpy as np
import torch

from ...errors import BisentError
from ...io import atomic_write
from ...models.keys import NUM, Field
from ...models.zhang2016 import (
    UNK,
    VOCAB_FILE,
    BBoWAE,
    BBoWAEEncoder,
    Zhang2016,
    Zhang2016Encoder,
    descriptors_np,
    norm_stats,
    pad_ids,
    parse_vocab,
    save_model_dir,
    to_ids,
    tokenize,
    vocab_bytes,
)
from ..data import Bitext
from . import Setup

#: the sections a word-vocabulary autoencoder (zhang2016, bbowae) reads besides its model's and objectives'
WORD_AE_SECTIONS: dict[str, dict[str, Field]] = {
    "tokenizer": {"min_count": Field(2, int, minimum=1),           # rarer words read as <unk>
                  "vocab_size": Field(50_000, int, minimum=2)},    # per language, <unk> included
    "data": {"max_len": Field(100, int, minimum=1),                # words kept per sentence
             "batch_size": Field(1000, int, minimum=1),            # pairs per Adam step (whole blocks)
             "chunk": Field(2000, int, minimum=1)},                # pairs per forward pass of the full-corpus objective
    "optim": {"optimizer": Field("lbfgs", str, ("lbfgs", "adam")), "lr": Field(1.0, NUM, minimum=0),
              "history": Field(10, int, minimum=1)},               # L-BFGS curvature pairs
}
#: the sections of its recipes besides the model's (models/zhang2016.py)
RECIPE_SECTIONS = {**WORD_AE_SECTIONS, "objectives": {
    "alpha": Field(0.1, NUM, minimum=0), "block": Field(100, int, minimum=1),
    "lambda_l": Field(1e-6, NUM, minimum=0), "lambda_w": Field(1e-3, NUM, minimum=0),
    "w2v_epochs": Field(5, int, minimum=1), "w2v_window": Field(5, int, minimum=1),
    "w2v_negative": Field(5, int, minimum=1),
    "w2v_bilingual": Field(False, bool)}}       # one skip-gram on pseudo-bilingual pairs (not the paper)

#: the objective steps itself (``Setup.step``) and makes its own word vectors, vocabularies and descriptor
#: statistics from the corpus: a run cannot start from a model directory (``--init``) or be prepared apart
OWN_STEP = True


# --- data ------------------------------------------------------------------------------------------

def languages(bitexts: list[Bitext], recipe: dict) -> list[str]:
    """The two languages: the recipe's, else those of the training files (which must all be one pair)."""
    pairs = {bt.langs for bt in bitexts}
    langs = recipe.get("languages") or (list(next(iter(pairs))) if len(pairs) == 1 else None)
    if langs is None or len(langs) != 2 or any(set(p) != set(langs) for p in pairs):
        raise BisentError(f"{recipe['architecture']}: one language pair per model (its encoders are per language); "
                          f"got {', '.join(sorted('-'.join(p) for p in pairs))}")
    return list(langs)


def corpus(bitexts: list[Bitext], langs: list[str]) -> list[tuple[str, str]]:
    """All pairs in file order, oriented as ``langs``."""
    out = []
    for bt in bitexts:
        out += bt.pairs if bt.langs == tuple(langs) else [(b, a) for a, b in bt.pairs]
    return out


def build_vocab(token_lists: list[list[str]], min_count: int, size: int) -> list[str]:
    """``[<unk>, most frequent words ...]``: words seen ``min_count`` times, at most ``size`` entries, ties by word."""
    counts = Counter(t for toks in token_lists for t in toks)
    words = sorted((w for w, c in counts.items() if c >= min_count and w != UNK), key=lambda w: (-counts[w], w))
    return [UNK] + words[:size - 1]


def word2vec(sentences: list[list[str]], recipe: dict, threads: int):
    """Skip-gram with negative sampling (gensim) over token lists: the trained ``KeyedVectors``."""
    from gensim.models import Word2Vec

    o, d = recipe["objectives"], recipe["model"]["word_dim"]
    return Word2Vec(sentences=sentences, vector_size=d, window=o["w2v_window"],
                    min_count=recipe["tokenizer"]["min_count"],
                    sg=1, negative=o["w2v_negative"], epochs=o["w2v_epochs"], workers=threads, seed=recipe["seed"]).wv


def pseudo_bilingual(toks: dict[str, list[list[str]]], langs: list[str], seed: int) -> list[list[str]]:
    """Each pair's two sides as ONE shuffled list of ``lang:word`` tokens (Vulic & Moens 2015's pseudo-bilingual
    documents): words of a sentence and of its translation share contexts, so one skip-gram model puts
    translations near each other, and the descriptors of both languages live in one space."""
    rng = np.random.default_rng(seed)
    out = []
    for sides in zip(*(toks[lang] for lang in langs)):
        merged = [f"{lang}:{w}" for lang, ws in zip(langs, sides) for w in ws]
        out.append([merged[i] for i in rng.permutation(len(merged))])
    return out


def word_tables(prep: "Prepared", recipe: dict, threads: int) -> dict[str, np.ndarray]:
    """Initial ``L`` per language ``(V_l, d)``: word2vec on each side (the paper), or on the pseudo-bilingual
    pairs (``objectives.w2v_bilingual``); ``<unk>`` and words word2vec dropped are zero rows."""
    d = recipe["model"]["word_dim"]
    if recipe["objectives"]["w2v_bilingual"]:
        wv = word2vec(pseudo_bilingual(prep.toks, prep.langs, recipe["seed"]), recipe, threads)
        keyed = {lang: (wv, f"{lang}:") for lang in prep.langs}
    else:
        keyed = {lang: (word2vec(prep.toks[lang], recipe, threads), "") for lang in prep.langs}
    out = {}
    for lang, (wv, prefix) in keyed.items():
        table = np.zeros((len(prep.vocab[lang]), d), dtype=np.float32)
        for i, w in enumerate(prep.vocab[lang]):
            if prefix + w in wv.key_to_index:
                table[i] = wv[prefix + w]
        out[lang] = table
    return out


def read_word_vectors(path: str, vocab: list[str], dim: int) -> tuple[np.ndarray, int]:
    """Rows of a ``word v1 ... vd`` text file (a word2vec header line is skipped) for ``vocab``; the count found."""
    index = {w: i for i, w in enumerate(vocab)}
    out = np.zeros((len(vocab), dim), dtype=np.float32)
    found = 0
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                parts = line.rstrip("\n").split(" ")
                if n == 1 and len(parts) == 2:
                    continue
                if len(parts) != dim + 1:
                    raise BisentError(f"{path}:{n}: expected a word and {dim} numbers (model.word_dim), got "
                                      f"{len(parts) - 1}")
                i = index.get(parts[0])
                if i is not None:
                    try:
                        out[i] = np.array(parts[1:], dtype=np.float32)
                    except ValueError:
                        raise BisentError(f"{path}:{n}: not a number in the vector of '{parts[0]}'") from None
                    found += 1
    except OSError as e:
        raise BisentError(f"{path}: cannot read word vectors ({e.strerror})") from None
    return out, found


class Prepared:
    """The tokenised corpus: vocabularies, id lists per side, initial word tables (Zhang)."""

    def __init__(self, recipe: dict, bitexts: list[Bitext], out_dir: Path, resume: bool):
        tc, arch = recipe["tokenizer"], recipe["architecture"]
        self.langs = languages(bitexts, recipe)
        self.pairs = corpus(bitexts, self.langs)
        if len(self.pairs) < 2:
            raise BisentError(f"{arch}: need at least 2 training pairs, got {len(self.pairs)}")
        toks = {lang: [tokenize(p[j], tc["lowercase"]) for p in self.pairs] for j, lang in enumerate(self.langs)}
        if resume:
            path = out_dir / VOCAB_FILE
            if not path.is_file():
                raise BisentError(f"{path}: missing (a resumed run reads its vocabularies)")
            self.vocab = parse_vocab(path.read_bytes(), path, self.langs)
        else:
            self.vocab = {lang: build_vocab(toks[lang], tc["min_count"], tc["vocab_size"]) for lang in self.langs}
        index = {lang: {w: i for i, w in enumerate(v)} for lang, v in self.vocab.items()}
        max_len = recipe["data"]["max_len"]
        self.ids = {lang: [to_ids(t, index[lang], max_len) for t in toks[lang]] for lang in self.langs}
        self.toks = toks
        self.data_hash = hashlib.sha256(json.dumps([self.langs, self.pairs]).encode()).hexdigest()


# --- Zhang 2016: Eq. 8-10 --------------------------------------------------------------------------

def ae_error(model: "Zhang2016", ids, mask, lang: str, g: tuple | None = None):
    """Sum over the rows of Eq. 8 and the hidden rows (Eq. 6): ``(scalar, (B, m))``; ``g``: precomputed views."""
    g_in, g_tgt = g if g is not None else model.views(ids, mask, lang)                   # (B, 2d) each
    hid = model.hidden(g_in, lang)                                                       # (B, m)
    out = model.reconstruct(hid)                                                         # (B, 2d)
    return 0.5 * (g_tgt - out).pow(2).sum(), hid


def sem_error(hx: torch.Tensor, hy: torch.Tensor, block: int) -> torch.Tensor:
    """Eq. 9 over the whole blocks of ``hx``, ``hy`` (n, m) in order (a trailing partial block is left out)."""
    k = hx.shape[0] // block
    if k == 0:
        return hx.new_zeros(())
    cx = hx[:k * block].reshape(k, block, -1).mean(1)                                    # (k, m) block centres
    cy = hy[:k * block].reshape(k, block, -1).mean(1)
    return 0.5 * (cx - cy).pow(2).sum()


def regulariser(model: "Zhang2016", recipe: dict) -> torch.Tensor:
    """R(theta) of Eq. 10: lambda_L/2 ||L||^2 (when L is trained) + lambda_W/2 ||W_enc, W_dec||^2 (no biases)."""
    o = recipe["objectives"]
    w = sum(m.weight.pow(2).sum() for m in [*model.enc.values(), model.dec])
    r = 0.5 * o["lambda_w"] * w
    if recipe["model"]["finetune_words"]:
        r = r + 0.5 * o["lambda_l"] * sum(p.pow(2).sum() for p in model.embed.values())
    return r


def zhang_chunk_loss(model, chunk: dict, langs: list[str], recipe: dict, n_total: int, sem_scale: float = 1.0):
    """``alpha/N sum E_ae + (1-alpha) sem_scale E_sem`` of one block-aligned chunk, and its parts."""
    o = recipe["objectives"]
    (x, y) = langs
    ex, hx = ae_error(model, chunk[x][0], chunk[x][1], x, chunk.get(f"g.{x}"))
    ey, hy = ae_error(model, chunk[y][0], chunk[y][1], y, chunk.get(f"g.{y}"))
    sem = sem_error(hx, hy, o["block"])
    loss = o["alpha"] / n_total * (ex + ey) + (1 - o["alpha"]) * sem_scale * sem
    return loss, {"ae": float((ex + ey).detach()) / n_total, "sem": float(sem.detach()) * sem_scale}


# --- BBoWAE: Eq. 4 ---------------------------------------------------------------------------------

def correlation(ax: torch.Tensor, ay: torch.Tensor) -> torch.Tensor:
    """Sum over dimensions of the Pearson correlation of ``ax``, ``ay`` (B, k) across the batch."""
    cx, cy = ax - ax.mean(0), ay - ay.mean(0)
    return ((cx * cy).sum(0) / (cx.norm(dim=0) * cy.norm(dim=0) + 1e-8)).sum()


def bbowae_chunk_loss(model, chunk: dict, langs: list[str], recipe: dict, n_total: int, sem_scale: float = 1.0):
    """Eq. 4 of one chunk, ``(sum of reconstruction errors - lambda sum_blocks cor) / n_total``.

    The correlation is taken over consecutive blocks of ``objectives.block`` pairs (Chandar et al.'s
    mini-batches), so its weight against the per-pair errors does not depend on how the corpus is chunked.
    """
    o = recipe["objectives"]
    x, y = langs
    vx, vy = chunk[x], chunk[y]                                                          # (B, V_x), (B, V_y) binary
    ax, ay = model.pre_activation(vx, x), model.pre_activation(vy, y)                    # (B, k)
    px, py = torch.sigmoid(ax), torch.sigmoid(ay)
    pxy = torch.sigmoid(ax + ay - model.c)                                               # joint input [x, y]
    rec = (model.xent(px, vy, y) + model.xent(py, vx, x) + model.xent(px, vx, x) + model.xent(py, vy, y)
           + o["beta"] * (model.xent(pxy, vx, x) + model.xent(pxy, vy, y))).sum()
    b = o["block"]
    cor = sum(correlation(ax[s:s + b], ay[s:s + b]) for s in range(0, max(1, len(ax) - b + 1), b))
    loss = (rec - o["lambda_cor"] * cor) / n_total
    return loss, {"rec": float(rec.detach()) / n_total, "cor": float(cor.detach()) / n_total}


def bags(ids: list[list[int]], vocab_size: int) -> torch.Tensor:
    """Binary bags ``(B, V)`` of id lists."""
    out = torch.zeros(len(ids), vocab_size)
    for i, s in enumerate(ids):
        out[i, s] = 1.0
    return out


# --- set-up ----------------------------------------------------------------------------------------

def build(recipe: dict, prep: Prepared):
    """The torch module of the recipe's architecture, from the seed."""
    torch.manual_seed(recipe["seed"])
    mc = recipe["model"]
    sizes = {lang: len(prep.vocab[lang]) for lang in prep.langs}
    if recipe["architecture"] == "zhang2016":
        return Zhang2016(prep.langs, sizes, mc["word_dim"], hidden_dim(recipe), mc["variant"], mc["target_weight"])
    return BBoWAE(prep.langs, sizes, mc["hidden"])


def set_norm(model: "Zhang2016", prep: Prepared, mode: str, chunk: int = 2000) -> None:
    """Fix ``model.norm`` from the descriptors of every training sentence under the initial word tables
    (:func:`bisent.models.zhang2016.norm_stats`); with ``finetune_words`` they stay as set here."""
    for lang in prep.langs:
        table = model.embed[lang].detach().numpy()
        parts = [descriptors_np(table, *pad_ids(prep.ids[lang][s:s + chunk]))
                 for s in range(0, len(prep.ids[lang]), chunk)]
        g = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}                # each (N, d)
        shift, scale = norm_stats(g, mode)
        model.norm[lang].shift.copy_(torch.from_numpy(shift))
        model.norm[lang].scale.copy_(torch.from_numpy(scale))


def hidden_dim(recipe: dict) -> int:
    """m: ``model.hidden``, or 2d as in the paper."""
    return recipe["model"]["hidden"] or 2 * recipe["model"]["word_dim"]


def model_hp(recipe: dict, langs: list[str]) -> dict:
    """``config.json``'s ``model``: what the NumPy encoder needs."""
    mc, tc = recipe["model"], recipe["tokenizer"]
    unseen = mc["unseen_language"]
    unseen = langs[-1] if unseen == "auto" else (None if unseen == "refuse" else unseen)
    if unseen is not None and unseen not in langs:
        raise BisentError(f"model.unseen_language: '{unseen}' is not one of the model's languages {langs}")
    hp = {"languages": langs, "hidden": hidden_dim(recipe) if recipe["architecture"] == "zhang2016" else mc["hidden"],
          "lowercase": tc["lowercase"], "max_len": recipe["data"]["max_len"], "unseen_language": unseen}
    if recipe["architecture"] == "zhang2016":
        hp.update({"word_dim": mc["word_dim"], "variant": mc["variant"], "descriptor_norm": mc["descriptor_norm"],
                   "target_weight": mc["target_weight"]})
    else:
        hp["beta"] = recipe["objectives"]["beta"]
    return hp


def as_encoder(model, recipe: dict, prep: Prepared, name: str, digest: str = "training"):
    """The NumPy encoder over the module's current weights (what ``-e DIR`` will load)."""
    tensors = {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}
    cls = Zhang2016Encoder if recipe["architecture"] == "zhang2016" else BBoWAEEncoder
    return cls(model_hp(recipe, prep.langs), tensors, prep.vocab, name=name, digest=digest)


def make_chunks(recipe: dict, prep: Prepared, model, rows: np.ndarray) -> list[dict]:
    """``rows`` (in order) cut into block-aligned chunks of about ``data.chunk`` pairs, as model inputs."""
    arch, langs = recipe["architecture"], prep.langs
    block = recipe["objectives"]["block"]
    size = max(block, recipe["data"]["chunk"] // block * block)
    chunks = []
    for s in range(0, len(rows), size):
        idx = rows[s:s + size]
        ch: dict = {"rows": idx}
        for lang in langs:
            seqs = [prep.ids[lang][i] for i in idx]
            if arch == "zhang2016":
                ids, mask = pad_ids(seqs)
                ch[lang] = (torch.from_numpy(ids), torch.from_numpy(mask))
                if not recipe["model"]["finetune_words"]:                     # frozen L: descriptors once
                    with torch.no_grad():
                        ch[f"g.{lang}"] = tuple(t.contiguous() for t in model.views(*ch[lang], lang))
            else:
                ch[lang] = bags(seqs, len(prep.vocab[lang]))
        chunks.append(ch)
    return chunks


# --- checkpoints (bisent.training.checkpoint; the optimiser's state rides as the objective's tensors) ----

def optimiser_state(opt) -> dict[str, torch.Tensor]:
    """Every entry of ``opt``'s state as tensors: ``opt.I.K`` (a tensor), ``opt.I.K.num`` (a number, 0-d),
    ``opt.I.K.n`` + ``opt.I.K.J`` (a list: L-BFGS's curvature pairs). Adam's moments and L-BFGS's direction,
    step, curvature pairs and last gradient all survive a restart exactly."""
    out = {}
    for i, st in opt.state_dict()["state"].items():
        for k, v in st.items():
            if k == "al":                                       # L-BFGS scratch buffer, rewritten before each use
                continue
            name = f"opt.{i}.{k}"
            if isinstance(v, list):
                out[f"{name}.n"] = torch.tensor(len(v))
                out.update({f"{name}.{j}": torch.as_tensor(t) for j, t in enumerate(v)})
            elif torch.is_tensor(v):
                out[name] = v
            else:
                out[f"{name}.num"] = torch.tensor(v, dtype=torch.int64 if isinstance(v, int) else torch.float64)
    return out


def load_optimiser_state(opt, tensors: dict[str, torch.Tensor]) -> None:
    """The inverse of :func:`optimiser_state`, into ``opt`` (whose hyper-parameters the recipe fixes)."""
    state: dict[int, dict] = {}
    for name, t in tensors.items():
        _, i, k, *rest = name.split(".")
        st = state.setdefault(int(i), {})
        if not rest:
            st[k] = t
        elif rest == ["num"]:
            st[k] = t.item()
        elif rest == ["n"]:
            st[k] = [tensors[f"opt.{i}.{k}.{j}"] for j in range(int(t))]
    opt.load_state_dict({"state": state, "param_groups": opt.state_dict()["param_groups"]})


class _Position:
    """The data position for :mod:`bisent.training.checkpoint`: none to keep, since a step's pairs are a
    function of (seed, step) (:func:`adam_rows`) or all of them (L-BFGS)."""

    def __init__(self, describe: str):
        self._describe = describe

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass

    def describe(self) -> str:
        return self._describe


# --- the optimisation step (the loop is bisent.training.loop's) -------------------------------------

def make_optimiser(model, recipe: dict):
    oc = recipe["optim"]
    params = [p for p in model.parameters() if p.requires_grad]
    if oc["optimizer"] == "lbfgs":                          # one iteration per step; max_eval: room for the line search
        return torch.optim.LBFGS(params, lr=oc["lr"], max_iter=1, max_eval=25, history_size=oc["history"],
                                 line_search_fn="strong_wolfe")
    return torch.optim.Adam(params, lr=oc["lr"])


def adam_rows(recipe: dict, n: int, step: int) -> np.ndarray:
    """The pair rows of Adam step ``step``: whole blocks, in a random block order fixed by (seed, epoch)."""
    block = recipe["objectives"]["block"]
    per = max(1, recipe["data"]["batch_size"] // block)                   # blocks per step
    n_blocks = max(1, n // block)
    steps_per_epoch = max(1, n_blocks // per)
    epoch, pos = divmod(step, steps_per_epoch)
    order = np.random.default_rng([recipe["seed"], epoch]).permutation(n_blocks)[pos * per:(pos + 1) * per]
    return (order[:, None] * block + np.arange(block)).ravel()


def setup(recipe: dict, bitexts: list[Bitext], monos, dev: list[Bitext], out_dir: Path, *, state: dict | None,
          device=None) -> Setup:
    """Tokens, vocabularies, word vectors (Zhang: word2vec or --word-vectors), the module and its optimiser, as
    the framework's :class:`Setup` for :func:`bisent.training.loop.train`, with a step hook (``Setup.step``):
    one L-BFGS iteration on all of J (a closure over the whole corpus), or one Adam step on a random set of
    whole blocks. The loop does the rest (log, dev figures, checkpoints). ``device`` is ignored: CPU only."""
    arch, oc = recipe["architecture"], recipe["optim"]
    threads = recipe["train"]["threads"] or 1
    torch.set_num_threads(threads)                              # the same count when resuming, for identical sums
    if monos:
        raise BisentError(f"{arch}: trains on parallel pairs only; leave out --mono")
    prep = Prepared(recipe, bitexts, out_dir, resume=state is not None)
    langs = prep.langs
    for d in dev:
        if set(d.langs) != set(langs):
            raise BisentError(f"{d.source}: dev pairs are {'-'.join(d.langs)}, the model is {'-'.join(langs)}")
    model = build(recipe, prep)
    info: dict = {"device": "cpu", "optimizer": oc["optimizer"], "languages": langs, "pairs": len(prep.pairs),
                  "vocab": {lang: len(prep.vocab[lang]) for lang in langs}}
    if arch == "zhang2016" and state is None:
        t = time.monotonic()
        wv = recipe["model"]["word_vectors"]
        if wv:
            for lang in langs:
                path = wv.get(lang) if isinstance(wv, dict) else wv
                if not path:
                    raise BisentError(f"--word-vectors: no file for '{lang}' (give one per language: {lang}=FILE)")
                table, found = read_word_vectors(path, prep.vocab[lang], recipe["model"]["word_dim"])
                model.embed[lang].data.copy_(torch.from_numpy(table))
                info[f"word_vectors_{lang}"] = {"file": str(path), "found": found}
        else:
            for lang, table in word_tables(prep, recipe, threads).items():
                model.embed[lang].data.copy_(torch.from_numpy(table))
            info["word2vec_s"] = round(time.monotonic() - t, 1)
    if arch == "zhang2016" and state is None:
        set_norm(model, prep, recipe["model"]["descriptor_norm"])
    if arch == "zhang2016":
        for p in model.embed.values():
            p.requires_grad_(recipe["model"]["finetune_words"])
    vocab = vocab_bytes(prep.vocab)
    if state is None:
        with atomic_write(out_dir / VOCAB_FILE, "wb") as f:
            f.write(vocab)
    opt = make_optimiser(model, recipe)
    loss = zhang_chunk_loss if arch == "zhang2016" else bbowae_chunk_loss
    n, block = len(prep.pairs), recipe["objectives"]["block"]
    full: list[dict] = []                    # L-BFGS: the whole corpus as chunks, made at the first step (after a
    #                                          resumed checkpoint restored the word vectors the descriptors use)

    def objective(chunks, n_total: int, sem_scale: float) -> tuple[float, dict]:
        """Zero the gradients, accumulate J's over ``chunks`` (+ R), return J and its parts."""
        opt.zero_grad(set_to_none=False)
        total, parts = 0.0, {}
        for ch in chunks:
            j, p = loss(model, ch, langs, recipe, n_total, sem_scale)
            j.backward()
            total += float(j.detach())
            parts = {k: parts.get(k, 0.0) + v for k, v in p.items()}
        if arch == "zhang2016":
            r = regulariser(model, recipe)
            r.backward()
            total += float(r.detach())
            parts["reg"] = float(r.detach())
        return total, parts

    def step(at: int) -> tuple[float, dict]:
        """Step ``at`` (0-based): J at its start and its parts."""
        if oc["optimizer"] == "lbfgs":
            if not full:
                full.extend(make_chunks(recipe, prep, model, np.arange(n)))
            seen: dict = {}

            def closure():
                j, parts = objective(full, n, 1.0)
                seen.setdefault("first", (j, parts))
                return torch.tensor(j)

            opt.step(closure)
            return seen["first"]                                     # J at the start of the iteration
        rows = adam_rows(recipe, n, at)
        j, parts = objective(make_chunks(recipe, prep, model, rows), len(rows),
                             (n // block) / max(1, len(rows) // block))
        opt.step()
        return j, parts

    def save_model(at_dir: Path, at: int) -> None:
        save_model_dir(at_dir, arch, model_hp(recipe, langs), model.state_dict(), prep.vocab,
                       extra={"training": {"step": at, "recipe": recipe}})

    return Setup(model=model, batches=_Position(f"{n} {'-'.join(langs)} pairs"), loss=loss, encoder=None,
                 save_model=save_model, data_hash=prep.data_hash, dev=dev, info=info,
                 fingerprints={"vocab_sha256": hashlib.sha256(vocab).hexdigest()},
                 state=lambda: optimiser_state(opt), load_state=lambda t: load_optimiser_state(opt, t),
                 step=step, dev_encoder=lambda: as_encoder(model, recipe, prep, f"{out_dir} (training)"))
