"""Guo et al. (2019), section 3.1: a dual encoder trained to rank true translations (additive margin softmax).

ONE encoder maps the source x_i and the target y_i of every pair in a batch
of K pairs to x'_i, y'_i (unit vectors here). All K x K scores come from one
matrix product, ``S = X' Y'^T``; the true pairs are on the diagonal, and every
other target of the batch is a negative for x_i. Eq. 1, forward ranking
(``p(y_i | x_i)``), with the margin m subtracted from the true pair only:

    J_fwd = -1/K sum_i log  e^{s (S_ii - m)} / ( e^{s (S_ii - m)} + sum_{k != i} e^{s S_ik} )

(the printed Eq. 1 writes the negatives as x'_k y'_k; the ranking the text
describes, and Yang et al. 2019 whom it follows, score x'_i y'_k). Eq. 2 adds
the backward ranking ``p(x_i | y_i)``, the same over the columns of S:

    J = J_fwd + J_bwd,   J_bwd = -1/K sum_i log e^{s (S_ii - m)} / ( e^{s (S_ii - m)} + sum_{k != i} e^{s S_ki} )

``s`` (``objectives.scale``) is the usual additive-margin-softmax scale for
cosine scores (AM-softmax, Wang et al. 2018); ``s = 1`` with unnormalised
vectors is the paper's plain dot product. Paper: m = 0.3, K = 100.

Hard negatives (``objectives.hard_negatives``; Guo et al. 2018, Yang et al.
2019): every ``hard_every`` steps the current model embeds all training
sentences of a language pair and each source gets its most similar wrong
target (and each target its most similar wrong source). A batch appends the
H = K mined targets as extra columns of the forward softmax and the mined
sources as extra columns of the backward one, for every row of the batch.

Scores of a wrong candidate with the very same text as the true one
(duplicates in the data) are masked out: they are not negatives.

This module also sets up every dual-encoder run (:func:`setup`): language
pairs as :class:`PairSpec` streams, the model (:mod:`bisent.models.dual`), the
teacher embeddings when ``objectives.distill > 0``
(:mod:`bisent.training.objectives.distill`), the mined negatives, the loss.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from ...errors import BisentError
from ..data import Bitext, DualSubBatch, Monotext, PairBatches, PairSpec, fingerprint

#: default output size of hashed students when no teacher fixes it
DEFAULT_DIM = 384


# --- the loss (Eq. 1-2) -------------------------------------------------------------------------------

def ranking_loss(x: torch.Tensor, y: torch.Tensor, *, scale: float = 1.0, margin: float = 0.3,
                 x_hard: torch.Tensor | None = None, y_hard: torch.Tensor | None = None,
                 fwd_mask: torch.Tensor | None = None, bwd_mask: torch.Tensor | None = None
                 ) -> tuple[torch.Tensor, dict[str, float]]:
    """Bidirectional additive-margin softmax over in-batch (+ hard) negatives: ``J_fwd + J_bwd`` (Eq. 2).

    ``x``, ``y``: ``(K, D)`` source / target embeddings, row i a true pair
    (normalise them first for cosine scores). ``x_hard``, ``y_hard``:
    ``(H, D)`` extra negative sources / targets, shared by every row.
    ``fwd_mask`` / ``bwd_mask``: ``(K, K + H)`` True where a candidate is not a
    negative for that row (the same text as its true partner); never the diagonal.
    Returns the scalar loss and ``{"loss_fwd", "loss_bwd", "acc_fwd", "acc_bwd"}``
    (acc: share of rows whose true partner scores highest, margin included).
    """
    K = x.shape[0]
    eye = torch.eye(K, dtype=x.dtype, device=x.device)
    s = x @ y.T                                                          # (K, K) all pairwise scores
    fwd = s - margin * eye                                               # margin on the true pairs only
    bwd = s.T - margin * eye                                             # (K, K) rows: targets, columns: sources
    if y_hard is not None and len(y_hard):
        fwd = torch.cat([fwd, x @ y_hard.T], dim=1)                      # (K, K + H)
    if x_hard is not None and len(x_hard):
        bwd = torch.cat([bwd, y @ x_hard.T], dim=1)                      # (K, K + H)
    fwd, bwd = scale * fwd, scale * bwd
    if fwd_mask is not None:
        fwd = fwd.masked_fill(fwd_mask[:, : fwd.shape[1]], float("-inf"))
    if bwd_mask is not None:
        bwd = bwd.masked_fill(bwd_mask[:, : bwd.shape[1]], float("-inf"))
    gold = torch.arange(K, device=x.device)
    j_fwd = F.cross_entropy(fwd, gold)                                   # -1/K sum_i log p(y_i | x_i), Eq. 1
    j_bwd = F.cross_entropy(bwd, gold)                                   # -1/K sum_i log p(x_i | y_i)
    parts = {"loss_fwd": float(j_fwd.detach()), "loss_bwd": float(j_bwd.detach()),
             "acc_fwd": float((fwd.detach().argmax(1) == gold).float().mean()),
             "acc_bwd": float((bwd.detach().argmax(1) == gold).float().mean())}
    return j_fwd + j_bwd, parts


def duplicate_mask(ids: torch.Tensor, k: int) -> torch.Tensor:
    """``(K, K + H)`` True where candidate j has the same text id as row i's true partner, j != i."""
    same = ids[:k, None] == ids[None, :]                                 # (K, K + H)
    same[:, :k].fill_diagonal_(False)
    return same


# --- data ---------------------------------------------------------------------------------------------

def languages(bitexts: list[Bitext], recipe: dict) -> list[str]:
    """Every language in the data (in order of appearance), checked against the recipe's ``languages``."""
    if not bitexts:
        raise BisentError(f"{recipe.get('objective')}: needs parallel training data (--train)")
    seen = list(dict.fromkeys(l for b in bitexts for l in b.langs))
    if recipe["languages"]:
        missing = [l for l in seen if l not in recipe["languages"]]
        if missing:
            raise BisentError(f"recipe languages {recipe['languages']} miss {missing}, found in the training data")
        return list(recipe["languages"])
    return seen


def pair_specs(bitexts: list[Bitext], recipe: dict) -> list[PairSpec]:
    """One stream per language pair (files of the same pair merged, first file's orientation kept)."""
    by_pair: dict[tuple[str, str], list[tuple[str, str]]] = {}
    orient: dict[frozenset, tuple[str, str]] = {}
    for b in bitexts:
        if b.src_lang == b.tgt_lang:
            raise BisentError(f"{b.source}: both columns are {b.src_lang}")
        key = orient.setdefault(frozenset(b.langs), b.langs)
        by_pair.setdefault(key, []).extend(p if b.langs == key else (p[1], p[0]) for p in b.pairs)
    cap = recipe["data"].get("max_pairs")
    specs = []
    for (a, b), pairs in by_pair.items():
        pairs = pairs[:cap] if cap else pairs
        if len(pairs) < 2:
            raise BisentError(f"{a}-{b}: {len(pairs)} training pair(s); in-batch ranking needs at least 2")
        specs.append(PairSpec(f"{a}-{b}", a, b, [p[0] for p in pairs], [p[1] for p in pairs]))
    return specs


def _text_ids(texts: list[str]) -> np.ndarray:
    """``(n,)`` int64: equal ids for identical texts."""
    index: dict[str, int] = {}
    return np.fromiter((index.setdefault(t, len(index)) for t in texts), dtype=np.int64, count=len(texts))


# --- hard negatives -----------------------------------------------------------------------------------

class HardNegatives:
    """Per language pair, each source's most similar wrong target and each target's most similar wrong source.

    Mined with the current model every ``every`` steps (none before the first
    mining); the index arrays go into checkpoints, so a resumed run uses the same ones.
    """

    def __init__(self, specs: list[PairSpec], every: int, block: int = 1024):
        self.every, self.block = every, block
        self.src_ids = [_text_ids(s.src) for s in specs]
        self.tgt_ids = [_text_ids(s.tgt) for s in specs]
        self.hard_tgt = [np.full(len(s.src), -1, dtype=np.int64) for s in specs]   # (N,) per stream
        self.hard_src = [np.full(len(s.src), -1, dtype=np.int64) for s in specs]

    @property
    def mined(self) -> bool:
        return bool(self.hard_tgt) and bool((self.hard_tgt[0] >= 0).any())

    def _best_wrong(self, a: np.ndarray, b: np.ndarray, b_ids: np.ndarray) -> np.ndarray:
        """For each row i of ``a`` (N, D) the row j of ``b`` (N, D) with the highest score and ``b_ids[j] != b_ids[i]``."""
        out = np.empty(len(a), dtype=np.int64)
        for s in range(0, len(a), self.block):
            sim = a[s:s + self.block] @ b.T                                          # (blk, N)
            sim[b_ids[s:s + self.block, None] == b_ids[None, :]] = -np.inf           # the true partner and its copies
            out[s:s + self.block] = sim.argmax(axis=1)
        return out

    def mine(self, encoder, specs: list[PairSpec]) -> dict[str, float]:
        """Embed every training sentence with ``encoder`` and refresh the negatives; returns log fields."""
        report = {}
        for i, spec in enumerate(specs):
            xs = encoder.encode(spec.src, spec.src_lang, cache=False, progress=False)   # (N, D)
            ys = encoder.encode(spec.tgt, spec.tgt_lang, cache=False, progress=False)   # (N, D)
            self.hard_tgt[i] = self._best_wrong(xs, ys, self.tgt_ids[i])
            self.hard_src[i] = self._best_wrong(ys, xs, self.src_ids[i])
            n = len(xs)
            report[f"hard_cos_{spec.name}"] = float(np.mean(np.sum(xs * ys[self.hard_tgt[i]], axis=1)))
            report[f"gold_cos_{spec.name}"] = float(np.mean(np.sum(xs * ys, axis=1)))
            report[f"train_err_{spec.name}"] = float(np.mean(
                np.sum(xs * ys[self.hard_tgt[i]], axis=1) > np.sum(xs * ys, axis=1))) if n else 0.0
        return report

    def state(self) -> dict[str, torch.Tensor]:
        out = {}
        for i, (t, s) in enumerate(zip(self.hard_tgt, self.hard_src)):
            out[f"hard_tgt.{i}"], out[f"hard_src.{i}"] = torch.from_numpy(t), torch.from_numpy(s)
        return out

    def load_state(self, tensors: dict[str, torch.Tensor]) -> None:
        for i in range(len(self.hard_tgt)):
            if f"hard_tgt.{i}" in tensors:
                self.hard_tgt[i] = tensors[f"hard_tgt.{i}"].numpy().copy()
                self.hard_src[i] = tensors[f"hard_src.{i}"].numpy().copy()


# --- forward and loss ---------------------------------------------------------------------------------

def encode_subbatch(model, sb: DualSubBatch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Raw model outputs ``x (K, D), y (K, D), x_hard (H, D), y_hard (H, D)`` of one sub-batch."""
    xs = model(**sb.src)                                                 # (K + H, D)
    ys = model(**sb.tgt)                                                 # (K + H, D)
    return xs[: sb.k], ys[: sb.k], xs[sb.k:], ys[sb.k:]


def make_loss(oc: dict) -> Callable:
    """The objective's loss over a batch: ``ranking * J (Eq. 2) + distill * teacher loss``, averaged over pairs."""
    w_rank, w_dist = float(oc["ranking"]), float(oc["distill"])
    if w_dist > 0:
        from .distill import distill_loss

    def loss(model, batch: list[DualSubBatch]) -> tuple[torch.Tensor, dict[str, float]]:
        total, n, parts = 0.0, 0, {}
        for sb in batch:
            x, y, x_hard, y_hard = encode_subbatch(model, sb)
            term = 0.0
            if w_rank > 0:
                xn, yn = F.normalize(x, dim=-1), F.normalize(y, dim=-1)
                j, p = ranking_loss(xn, yn, scale=oc["scale"], margin=oc["margin"],
                                    x_hard=F.normalize(x_hard, dim=-1), y_hard=F.normalize(y_hard, dim=-1),
                                    fwd_mask=duplicate_mask(sb.tgt_text_ids, sb.k),
                                    bwd_mask=duplicate_mask(sb.src_text_ids, sb.k))
                term = term + w_rank * j
                parts[f"rank_{sb.name}"] = float(j.detach())
                parts[f"acc_{sb.name}"] = (p["acc_fwd"] + p["acc_bwd"]) / 2
            if w_dist > 0:
                d = distill_loss(x, y, sb.teacher, oc["distill_loss"])
                term = term + w_dist * d
                parts[f"distill_{sb.name}"] = float(d.detach())
            total = total + term * sb.k
            n += sb.k
        return total / n, parts

    return loss


# --- set-up -------------------------------------------------------------------------------------------

def setup(recipe: dict, bitexts: list[Bitext], monos: list[Monotext], dev: list[Bitext], out_dir: Path, *,
          state: dict | None, device: torch.device, check: Callable[[str], None]):
    """Everything a dual-encoder run needs (:class:`bisent.training.loop.Setup`), for ``guo2019`` and ``distill``."""
    from ...models.dual import TorchDualEncoder, build_dual, save_dual
    from ..loop import Setup
    from ..teacher import teacher_embeddings

    arch, seed, oc = recipe["architecture"], recipe["seed"], recipe["objectives"]
    if monos:
        raise BisentError(f"{monos[0].source}: {recipe['objective']} trains on parallel data only; drop --mono")
    langs = languages(bitexts, recipe)
    specs = pair_specs(bitexts, recipe)
    data_hash = fingerprint(specs)
    check(data_hash)
    hp = dict(recipe["model"])
    info: dict = {"languages": langs}

    # teacher rows of every source sentence (persistent cache: computed once, across runs)
    teachers: list[torch.Tensor | None] = [None] * len(specs)
    if oc["distill"] > 0:
        reports = []
        for i, spec in enumerate(specs):
            vecs, rep = teacher_embeddings(oc["teacher"], spec.src, spec.src_lang, batch_size=oc["teacher_batch"])
            teachers[i] = torch.from_numpy(vecs)                             # (N, D_teacher)
            reports.append(rep)
        info["teacher"] = reports
        t_dim = teachers[0].shape[1]
        if hp.get("dim") is None:
            hp["dim"] = t_dim
        elif hp["dim"] != t_dim:
            raise BisentError(f"model.dim {hp['dim']} differs from teacher {oc['teacher']}'s {t_dim}: leave it null")

    # the model, from a fixed seed
    tok = None
    if arch == "bilstm":
        tok = _bilstm_tokenizer(recipe, bitexts, out_dir, state)
        hp = {**hp, "vocab_size": tok.vocab_size, "max_len": recipe["data"]["max_len"]}
        info["vocab_size"] = tok.vocab_size
    elif arch == "adapter":
        from ...encoders import get_encoder

        base = get_encoder(hp["base"])
        hp["base_dim"] = base.dim
        reports = []                                                         # base features of every sentence, cached
        for spec in specs:
            for texts, lang in ((spec.src, spec.src_lang), (spec.tgt, spec.tgt_lang)):
                reports.append(teacher_embeddings(base, texts, lang, batch_size=oc["teacher_batch"])[1])
        info["base"] = reports
    elif hp.get("dim") is None:
        hp["dim"] = DEFAULT_DIM
    torch.manual_seed(seed)
    model = build_dual(arch, hp).to(device)
    if tok is not None:
        model.tokenizer = tok
    encoder = TorchDualEncoder(model, name=f"{out_dir} (training)", content_hash="training")

    hard = HardNegatives(specs, oc["hard_every"]) if oc["hard_negatives"] else None
    text_ids = [(_text_ids(s.src), _text_ids(s.tgt)) for s in specs]

    def collate(i: int, spec: PairSpec, idx: np.ndarray) -> DualSubBatch:
        rows = [idx]
        if hard is not None and hard.mined:
            rows.append(hard.hard_src[i][idx])                               # H = K mined sources / targets
        src_rows = np.concatenate(rows)
        tgt_rows = np.concatenate([idx, hard.hard_tgt[i][idx]]) if len(rows) > 1 else idx
        src = model.featurize([spec.src[j] for j in src_rows], spec.src_lang)
        tgt = model.featurize([spec.tgt[j] for j in tgt_rows], spec.tgt_lang)
        return DualSubBatch(spec.name, spec.src_lang, spec.tgt_lang, torch.from_numpy(idx), len(idx), src, tgt,
                            torch.from_numpy(text_ids[i][0][src_rows]), torch.from_numpy(text_ids[i][1][tgt_rows]),
                            None if teachers[i] is None else teachers[i][torch.from_numpy(idx)])

    batches = PairBatches(specs, collate, batch_size=recipe["data"]["batch_size"], seed=seed,
                          bucket_batches=recipe["data"]["bucket_batches"])

    def on_step(step: int) -> dict | None:
        if hard is None or step % hard.every:
            return None
        return {"event": "hard negatives mined", **hard.mine(encoder, specs)}

    def save(at_dir: Path, step: int) -> None:
        save_dual(model, at_dir, extra={"training": {"step": step, "languages": langs, "recipe": recipe}})

    fingerprints = {"tokenizer_sha256": _sha(tok.proto)} if tok is not None else {}
    return Setup(model=model, batches=batches, loss=make_loss(oc), encoder=encoder, save_model=save,
                 data_hash=data_hash, dev=list(dev), info=info, fingerprints=fingerprints, tokenizer=tok,
                 on_step=on_step if hard is not None else None,
                 state=hard.state if hard is not None else None,
                 load_state=hard.load_state if hard is not None else None)


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _bilstm_tokenizer(recipe: dict, bitexts: list[Bitext], out_dir: Path, state: dict | None):
    """The joint SentencePiece model of a BiLSTM dual encoder (trained, or reloaded when resuming)."""
    from ..data import all_text
    from ..tokenizer import FILENAME, Tokenizer, train_tokenizer

    tc, max_len = recipe["tokenizer"], recipe["data"]["max_len"]
    if state is not None:
        return Tokenizer.load(Path(out_dir) / FILENAME, max_len)
    tok = train_tokenizer(all_text(bitexts, []), vocab_size=tc["vocab_size"], model_type=tc["model_type"],
                          lowercase=tc["lowercase"], character_coverage=tc["character_coverage"],
                          input_sentence_size=tc["input_sentence_size"], seed=recipe["seed"], max_len=max_len)
    tok.save(Path(out_dir) / FILENAME)
    return tok
