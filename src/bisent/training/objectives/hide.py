"""Guo et al. (2019) document level: HiDE and Document BoW trained to rank true document translations.

The loss is the sentence level's (:func:`bisent.training.objectives.guo2019.ranking_loss`):
the bidirectional additive-margin softmax over in-batch negatives, here over a
batch of K DOCUMENT pairs, ``J = J_fwd + J_bwd`` (Eq. 1-2) on unit document
embeddings ``x_i = unit(HiDE(src doc i))``, ``y_i = unit(HiDE(tgt doc i))``.

HiDE trains on top of a FROZEN sentence encoder (§4.2: "sentence embeddings
are fixed"): every training sentence is embedded once, in :func:`setup`, through
the persistent embedding cache, then only the small feed-forward part learns, on
a CPU in minutes. Document BoW learns its hashed unigram table and DAN from scratch.

Robustness to segmentation: ``data.segmentations`` lists the views of each
training document (``given`` paragraphs, ``sentencex`` sentences); each side
of each pair in a batch takes one, drawn from ``(seed, epoch, batch position)``
so a resumed run sees the very same views (the paper trains on one
segmentation and tests on another).

Training data: document sets as written by ``bisent data docs`` (folders with
``src.jsonl``, ``tgt.jsonl``, ``gold.tsv``), passed to
:func:`bisent.training.loop.train` in place of bitexts: pairs of the ``train``
split train; pairs of the ``dev`` split give the dev P@1 (``dev_p1_<view>_src_tgt``
and ``_tgt_src``) that :func:`setup`'s ``on_step`` logs every ``train.eval_every``
steps and at ``train.max_steps`` (not after a ``--max-minutes`` stop; the loop's own dev
figures are sentence-level, so ``--dev`` is refused).
The loop does steps, checkpoints and ``--resume``. Recipes:
the ``hide-dnn-pool``, ``hide-pool-dnn`` and ``doc-bow`` recipes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ...errors import BisentError
from ...evaluate import retrieval_p_at
from ...models.keys import NUM, Field
from ..data import Batches
from . import Setup
from .guo2019 import ranking_loss

#: the sections of the document recipes (hide, doc-bow) besides the model's (models/hide.py)
RECIPE_SECTIONS: dict[str, dict[str, Field]] = {
    "data": {"segmentations": Field(["given", "sentencex"], list),   # views of each document, one drawn per side
             "max_units": Field(16, int, minimum=1),                  # units (paragraphs / sentences) kept per document
             "batch_size": Field(64, int, minimum=2)},                # K document pairs per step
    "optim": {"clip": Field(None, NUM, nullable=True, minimum=0)},
    "objectives": {"scale": Field(20.0, NUM, minimum=0), "margin": Field(0.3, NUM, minimum=0)},
    "train": {"max_steps": Field(1500, int, minimum=0), "eval_every": Field(250, int, minimum=1)},
}


def check_recipe(recipe: dict, raw: dict, src: str) -> None:
    """The document recipes' list fields: views from ``given`` / ``sentencex``, positive layer sizes."""
    segs = recipe["data"]["segmentations"]
    if not segs or any(s not in ("given", "sentencex") for s in segs):
        raise BisentError(f"{src}: data.segmentations: choose from given, sentencex (got {segs!r})")
    hidden = recipe["model"]["hidden"]
    if not hidden or not all(isinstance(h, int) and not isinstance(h, bool) and h > 0 for h in hidden):
        raise BisentError(f"{src}: model.hidden: expected a list of positive integers, got {hidden!r}")

# --- data ---------------------------------------------------------------------------------------------------

class DocPairs:
    """Document pairs of one split in every view: ``units[view][side][i]`` the units of pair i's side."""

    def __init__(self, folders, split: str, views: list[str], max_units: int):
        from ...datasets.docsets import load_docset
        from ...documents import make_document

        self.units: dict[str, dict[str, list[list[str]]]] = {v: {"src": [], "tgt": []} for v in views}
        self.langs: tuple[str, str] | None = None
        for folder in folders:
            ds = load_docset(folder, splits=(split,))
            langs = (ds["stats"].get("src"), ds["stats"].get("tgt"))
            if None in langs:
                raise BisentError(f"{folder}/stats.json: names no src/tgt languages")
            if self.langs is not None and langs != self.langs:
                raise BisentError(f"{folder}: languages {'-'.join(langs)} differ from {'-'.join(self.langs)}")
            self.langs = langs
            text = {side: {d["id"]: d["text"] for d in ds[side]} for side in ("src", "tgt")}
            for s_id, t_id, _ in ds["gold"]:
                if s_id not in text["src"] or t_id not in text["tgt"]:
                    raise BisentError(f"{folder}/gold.tsv: pair {s_id} -> {t_id} names a document not in the set")
                for view in views:
                    seg = "given" if view == "given" else "sentencex"
                    for side, did, lang in (("src", s_id, langs[0]), ("tgt", t_id, langs[1])):
                        doc = make_document(did, text[side][did], did, lang, seg)
                        self.units[view][side].append(doc.sentences[:max_units])
        self.views = views
        self.n = len(self.units[views[0]]["src"])


def _hide_features(pairs: DocPairs, encoder, progress) -> dict:
    """Sentence embeddings of every unit (cached): ``{(view, side): (V (S, D) float32, offsets (n + 1,))}``."""
    feats = {}
    for view in pairs.views:
        for side, lang in zip(("src", "tgt"), pairs.langs):
            docs = pairs.units[view][side]
            flat = [s for d in docs for s in d]
            v = encoder.encode(flat, lang, progress=progress)                       # (S, D)
            feats[view, side] = (v, np.concatenate([[0], np.cumsum([len(d) for d in docs])]))
    return feats


def _bow_features(pairs: DocPairs, featurizer) -> dict:
    """Hashed feature ids of every document: ``{(view, side): (ids (M,), offsets (n + 1,))}``."""
    from ...models.hide import bow_bags

    feats = {}
    for view in pairs.views:
        for side in ("src", "tgt"):
            bags = [ids for _, ids in bow_bags(featurizer, pairs.units[view][side])]
            ids = np.concatenate(bags) if bags else np.zeros(0, np.int64)
            feats[view, side] = (ids, np.concatenate([[0], np.cumsum([len(b) for b in bags])]))
    return feats


# --- set-up -----------------------------------------------------------------------------------------------

@dataclass
class DocSubBatch:
    """K document pairs: the model's inputs of the K source and the K target documents."""

    src: tuple            # hide: (v (S, D), owner (S,), K, mu (K, D)); doc-bow: (ids (M,), offsets (K,))
    tgt: tuple

    def to(self, device) -> "DocSubBatch":
        return DocSubBatch(_to(self.src, device), _to(self.tgt, device))


def _to(inputs: tuple, device) -> tuple:
    return tuple(x.to(device) if torch.is_tensor(x) else x for x in inputs)


def _fingerprint(pairs: DocPairs) -> str:
    """A hash of every unit of every view, to refuse resuming on other documents."""
    h = hashlib.blake2b(digest_size=16)
    for view in pairs.views:
        for side in ("src", "tgt"):
            for doc in pairs.units[view][side]:
                h.update("\x00".join(doc).encode() + b"\x01")
    return h.hexdigest()


def setup(recipe: dict, bitexts: list, monos: list, dev: list, out_dir: Path, *, state: dict | None,
          device: torch.device) -> Setup:
    """A document run (:class:`bisent.training.objectives.Setup`); ``bitexts`` are document-set folders."""
    from ...encoders import get_encoder
    from ...models.hashing import HashFeaturizer
    from ...models.hide import bow_hash_config, build_torch, save_document_model

    arch, dc, oc = recipe["architecture"], recipe["data"], recipe["objectives"]
    if monos or dev:
        raise BisentError(f"{arch}: trains on document sets only (their dev split gives the dev P@1); "
                          "drop --mono / --dev")
    folders = [Path(getattr(b, "source", b)) for b in bitexts]
    for f in folders:
        if not f.is_dir():
            raise BisentError(f"{f}: a document recipe trains on document sets: folders from 'bisent data docs'")
    views = list(dc["segmentations"])
    train = DocPairs(folders, "train", views, int(dc["max_units"]))
    dev_pairs = DocPairs(folders, "dev", views, int(dc["max_units"]))
    if train.n < 2:
        raise BisentError(f"{', '.join(map(str, folders))}: {train.n} training document pair(s); need at least 2")
    langs = train.langs
    hp, extra = dict(recipe["model"]), {}
    if arch == "hide":
        base = get_encoder(hp["base"])
        hp.update(in_dim=base.dim, languages=list(langs))
        extra = {"base": hp["base"], "base_id": base.id}
        feats, dev_feats = _hide_features(train, base, None), _hide_features(dev_pairs, base, None)
        means = {lang: np.concatenate([feats[v, side][0] for v in views]).mean(axis=0).astype(np.float32)
                 for side, lang in zip(("src", "tgt"), langs)}                      # (D,) per language
    else:
        featurizer = HashFeaturizer(bow_hash_config(hp))
        feats, dev_feats = _bow_features(train, featurizer), _bow_features(dev_pairs, featurizer)
    torch.manual_seed(recipe["seed"])
    model = build_torch(arch, hp).to(device)

    def inputs(fts: dict, side: str, rows: np.ndarray, view_of: np.ndarray) -> tuple:
        """The model's inputs for the documents ``rows`` of ``side``, each in its view."""
        if arch == "hide":
            v, owner = [], []
            for j, (r, vw) in enumerate(zip(rows, view_of)):
                vecs, off = fts[views[vw], side]
                v.append(vecs[off[r]:off[r + 1]])
                owner.append(np.full(off[r + 1] - off[r], j))
            mu = np.tile(means[langs[0] if side == "src" else langs[1]], (len(rows), 1))      # (K, D)
            return (torch.from_numpy(np.concatenate(v)), torch.from_numpy(np.concatenate(owner)), len(rows),
                    torch.from_numpy(mu))
        ids, offs, at = [], [], 0
        for r, vw in zip(rows, view_of):
            all_ids, off = fts[views[vw], side]
            offs.append(at)
            ids.append(all_ids[off[r]:off[r + 1]])
            at += len(ids[-1])
        return torch.from_numpy(np.concatenate(ids)), torch.tensor(offs)

    holder: dict = {}

    def collate(i: int, idx: np.ndarray) -> DocSubBatch:
        s = holder["batches"].samplers[i]                   # already advanced: (epoch, pos) names this batch
        rng = np.random.default_rng([recipe["seed"], s.epoch, s.pos, 7])
        vw_src, vw_tgt = rng.integers(len(views), size=len(idx)), rng.integers(len(views), size=len(idx))
        return DocSubBatch(inputs(feats, "src", idx, vw_src), inputs(feats, "tgt", idx, vw_tgt))

    keys = np.array([len(a) * 10_000 + len(b) for a, b in zip(train.units[views[0]]["src"],
                                                               train.units[views[0]]["tgt"])], dtype=np.int64)
    batches = Batches([("docs", keys, 1.0)], collate, batch_size=min(int(dc["batch_size"]), train.n),
                      seed=recipe["seed"], bucket_batches=dc["bucket_batches"], full_only=True)
    holder["batches"] = batches

    def loss(model, batch: list[DocSubBatch]) -> tuple[torch.Tensor, dict[str, float]]:
        sb = batch[0]
        x = F.normalize(model(*sb.src), dim=-1)                                          # (K, out)
        y = F.normalize(model(*sb.tgt), dim=-1)                                          # (K, out)
        return ranking_loss(x, y, scale=float(oc["scale"]), margin=float(oc["margin"]))

    def dev_p1() -> dict:
        """P@1 (%) of the dev pairs both ways, per view, with the current weights."""
        if dev_pairs.n < 2:
            return {}
        out = {}
        model.eval()
        with torch.no_grad():
            for k, view in enumerate(views):
                rows, vw = np.arange(dev_pairs.n), np.full(dev_pairs.n, k)
                a = F.normalize(model(*_to(inputs(dev_feats, "src", rows, vw), device)), dim=-1)    # (n, out)
                b = F.normalize(model(*_to(inputs(dev_feats, "tgt", rows, vw), device)), dim=-1)    # (n, out)
                p_ab, p_ba = retrieval_p_at(a.float().cpu().numpy(), b.float().cpu().numpy(), 1)
                out[f"dev_p1_{view}_src_tgt"] = round(100 * p_ab, 2)
                out[f"dev_p1_{view}_tgt_src"] = round(100 * p_ba, 2)
        model.train()
        return out

    def on_step(step: int) -> dict | None:                 # the dev figure, also at the recipe's last step
        tr = recipe["train"]
        return dev_p1() if step % tr["eval_every"] == 0 or step == tr["max_steps"] else None

    def save(at_dir: Path, step: int) -> None:
        tensors = {k: v.detach().cpu().numpy().astype(np.float32) for k, v in model.state_dict().items()}
        if arch == "hide":
            tensors.update({f"lang_mean.{lang}": mu for lang, mu in means.items()})
        save_document_model(at_dir, arch, hp, tensors,
                            {**extra, "training": {"step": step, "languages": list(langs), "recipe": recipe,
                                                   "train_pairs": train.n, "dev_pairs": dev_pairs.n}})

    return Setup(model=model, batches=batches, loss=loss, encoder=None, save_model=save,
                 data_hash=_fingerprint(train), dev=[], on_step=on_step,
                 info={"languages": list(langs), "train_pairs": train.n, "dev_pairs": dev_pairs.n, **dev_p1()})
