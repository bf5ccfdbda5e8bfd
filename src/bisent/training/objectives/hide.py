"""Guo et al. (2019) document level: HiDE and Document BoW trained to rank true document translations.

The loss is the sentence level's (:func:`bisent.training.objectives.guo2019.ranking_loss`):
the bidirectional additive-margin softmax over in-batch negatives, here over a
batch of K DOCUMENT pairs, ``J = J_fwd + J_bwd`` (Eq. 1-2) on unit document
embeddings ``x_i = unit(HiDE(src doc i))``, ``y_i = unit(HiDE(tgt doc i))``.

HiDE trains on top of a FROZEN sentence encoder (§4.2: "sentence embeddings
are fixed"): every training sentence is embedded once through the persistent
embedding cache, then only the small feed-forward part learns, on a CPU in
minutes. Document BoW learns its hashed unigram table and DAN from scratch.

Robustness to segmentation: ``data.segmentations`` lists the views of each
training document (``given`` paragraphs, ``sentencex`` sentences); each side
of each pair in a batch takes one at random, so the model sees both kinds of
units (the paper trains on one segmentation and tests on another).

Training data: document sets as written by ``bisent data docs`` (folders with
``src.jsonl``, ``tgt.jsonl``, ``gold.tsv``): pairs of the ``train`` split
train, pairs of the ``dev`` split give the dev P@1 logged every ``eval_every``
steps. Recipes: ``recipes/hide-dnn-pool.yaml``, ``recipes/hide-pool-dnn.yaml``,
``recipes/doc-bow.yaml``. A run is short; the model directory is rewritten at
every evaluation, and a rerun starts over (the embedding cache makes its set-up free).
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path

import numpy as np
import yaml

from ...errors import BisentError
from ...io import atomic_write

#: the recipe of each document architecture: section -> key -> default (None: required or derived)
DEFAULTS: dict[str, dict] = {
    "hide": {
        "model": {"mode": "dnn-pool", "base": "use-m3", "hidden": [320, 320, 500, 500]},
    },
    "doc-bow": {
        "model": {"buckets": 1 << 18, "embed_dim": 320, "hidden": [320, 500], "ngrams": False},
    },
}
COMMON = {
    "data": {"segmentations": ["given", "sentencex"], "max_units": 16, "batch_size": 64},
    "objectives": {"margin": 0.3, "scale": 20.0},
    "optim": {"lr": 1e-3},
    "train": {"max_steps": 1500, "eval_every": 250, "threads": 1, "log_every": 50},
}
LOG_FILE = "train_log.jsonl"


def is_document_recipe(path) -> bool:
    """True when the YAML recipe at ``path`` names a document architecture (``hide`` or ``doc-bow``)."""
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False                                   # the sentence-level loader reports the problem
    return isinstance(raw, dict) and raw.get("architecture") in DEFAULTS


def load_document_recipe(path, overrides: dict | None = None) -> dict:
    """The recipe with defaults filled in; unknown sections or keys are one-line errors."""
    from ..recipe import apply_overrides

    raw = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    raw = apply_overrides(raw, overrides or {})
    arch = raw.get("architecture")
    if arch not in DEFAULTS:
        raise BisentError(f"{path}: architecture must be one of {', '.join(DEFAULTS)}")
    out = {"architecture": arch, "seed": int(raw.get("seed", 1)), **copy.deepcopy({**COMMON, **DEFAULTS[arch]})}
    for key, value in raw.items():
        if key in ("architecture", "seed"):
            continue
        if key not in out or not isinstance(out[key], dict):
            raise BisentError(f"{path}: unknown key '{key}' for architecture {arch}")
        for k, v in (value or {}).items():
            if k not in out[key]:
                raise BisentError(f"{path}: unknown key '{key}.{k}' (known: {', '.join(out[key])})")
            out[key][k] = v
    if arch == "hide" and out["model"]["mode"] not in ("dnn-pool", "pool-dnn"):
        raise BisentError(f"{path}: model.mode must be dnn-pool or pool-dnn")
    bad = [s for s in out["data"]["segmentations"] if s not in ("given", "sentencex")]
    if bad or not out["data"]["segmentations"]:
        raise BisentError(f"{path}: data.segmentations: choose from given, sentencex (got {bad or 'none'})")
    if int(out["data"]["batch_size"]) < 2:
        raise BisentError(f"{path}: data.batch_size must be at least 2 (in-batch negatives)")
    return out


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


# --- training -------------------------------------------------------------------------------------------------

def train_documents(recipe: dict, train_dirs: list, out_dir, *, max_steps: int | None = None,
                    max_minutes: float | None = None, progress: bool | None = None) -> dict:
    """Train the recipe's document encoder on the ``train`` pairs of ``train_dirs``; write ``out_dir``.

    Returns a summary (steps, last loss, dev P@1 both ways).
    """
    import torch
    import torch.nn.functional as F

    from ...encoders import get_encoder
    from ...models.hide import bow_hash_config, build_torch, save_document_model
    from ...models.hashing import HashFeaturizer
    from .guo2019 import ranking_loss

    arch, dc, tc, oc = recipe["architecture"], recipe["data"], recipe["train"], recipe["objectives"]
    torch.set_num_threads(int(tc["threads"]))
    views = list(dc["segmentations"])
    train = DocPairs(train_dirs, "train", views, int(dc["max_units"]))
    dev = DocPairs(train_dirs, "dev", views, int(dc["max_units"]))
    if train.n < 2:
        raise BisentError(f"{', '.join(map(str, train_dirs))}: {train.n} training document pair(s); need at least 2")
    langs = train.langs
    hp = dict(recipe["model"])
    extra: dict = {}
    if arch == "hide":
        base = get_encoder(hp["base"])
        hp.update(in_dim=base.dim, languages=list(langs))
        extra = {"base": hp["base"], "base_id": base.id}
        feats, dev_feats = _hide_features(train, base, progress), _hide_features(dev, base, progress)
        means = {lang: np.concatenate([feats[v, side][0] for v in views]).mean(axis=0)
                 for side, lang in zip(("src", "tgt"), langs)}                     # (D,) per language
    else:
        featurizer = HashFeaturizer(bow_hash_config(hp))
        feats, dev_feats = _bow_features(train, featurizer), _bow_features(dev, featurizer)
    torch.manual_seed(recipe["seed"])
    rng = np.random.default_rng(recipe["seed"])
    model = build_torch(arch, hp)
    lr = float(recipe["optim"]["lr"])
    dense = [p for n, p in model.named_parameters() if not n.startswith("embed.")]
    opts = [torch.optim.Adam(dense, lr=lr)]
    if arch == "doc-bow":                                            # the hashed table: only the rows a batch touches
        opts.append(torch.optim.SparseAdam(list(model.embed.parameters()), lr=lr))

    def embed(fts: dict, side: str, rows: np.ndarray, view_of: np.ndarray):
        """Document embeddings ``(len(rows), out)`` of pair rows, each in its view."""
        if arch == "hide":
            v, owner = [], []
            for j, (r, vw) in enumerate(zip(rows, view_of)):
                vecs, off = fts[views[vw], side]
                v.append(vecs[off[r]:off[r + 1]])
                owner.append(np.full(off[r + 1] - off[r], j))
            lang = langs[0] if side == "src" else langs[1]
            mu = torch.from_numpy(np.tile(means[lang], (len(rows), 1)).astype(np.float32))
            return model(torch.from_numpy(np.concatenate(v)), torch.from_numpy(np.concatenate(owner)), len(rows), mu)
        ids, offs = [], []
        for r, vw in zip(rows, view_of):
            all_ids, off = fts[views[vw], side]
            offs.append(sum(len(i) for i in ids))
            ids.append(all_ids[off[r]:off[r + 1]])
        return model(torch.from_numpy(np.concatenate(ids)), torch.tensor(offs))

    def dev_p1() -> dict:
        if dev.n < 2:
            return {}
        model.eval()
        out = {}
        with torch.no_grad():
            for k, view in enumerate(views):
                rows, vw = np.arange(dev.n), np.full(dev.n, k)
                a = F.normalize(embed(dev_feats, "src", rows, vw), dim=-1)
                b = F.normalize(embed(dev_feats, "tgt", rows, vw), dim=-1)
                s = a @ b.T
                gold = torch.arange(dev.n)
                out[f"dev_p1_{view}_src_tgt"] = round(100 * float((s.argmax(1) == gold).float().mean()), 2)
                out[f"dev_p1_{view}_tgt_src"] = round(100 * float((s.argmax(0) == gold).float().mean()), 2)
        model.train()
        return out

    def save(step: int) -> None:
        tensors = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}
        if arch == "hide":
            tensors.update({f"lang_mean.{lang}": mu.astype(np.float32) for lang, mu in means.items()})
        save_document_model(out_dir, arch, hp, tensors,
                            {**extra, "training": {"step": step, "languages": list(langs), "recipe": recipe,
                                                   "train_pairs": train.n, "dev_pairs": dev.n}})

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    steps = int(max_steps if max_steps is not None else tc["max_steps"])
    K = min(int(dc["batch_size"]), train.n)
    log: list[dict] = [{"event": "start", "architecture": arch, "train_pairs": train.n, "dev_pairs": dev.n,
                        "languages": list(langs), **dev_p1()}]
    started = time.perf_counter()
    order, pos, step, last = rng.permutation(train.n), 0, 0, {}
    from tqdm.auto import tqdm

    with tqdm(total=steps, desc=f"train {arch}", unit="step", disable=(not progress) if progress is not None else None,
              leave=False) as bar:
        while step < steps:
            if max_minutes is not None and time.perf_counter() - started > 60 * max_minutes:
                log.append({"event": "time limit", "step": step})
                break
            if pos + K > train.n:
                order, pos = rng.permutation(train.n), 0
            rows = order[pos:pos + K]
            pos += K
            x = F.normalize(embed(feats, "src", rows, rng.integers(len(views), size=K)), dim=-1)   # (K, out)
            y = F.normalize(embed(feats, "tgt", rows, rng.integers(len(views), size=K)), dim=-1)   # (K, out)
            loss, parts = ranking_loss(x, y, scale=float(oc["scale"]), margin=float(oc["margin"]))
            for opt in opts:
                opt.zero_grad()
            loss.backward()
            for opt in opts:
                opt.step()
            step += 1
            bar.update(1)
            last = {"step": step, "loss": round(float(loss.detach()), 5), **{k: round(v, 4) for k, v in parts.items()}}
            if step % int(tc["log_every"]) == 0:
                log.append(last)
            if step % int(tc["eval_every"]) == 0 or step == steps:
                log.append({"step": step, **dev_p1()})
                save(step)
    if not log or log[-1].get("step") != step or "dev_p1_given_src_tgt" not in log[-1]:
        log.append({"step": step, **dev_p1()})
    save(step)
    with atomic_write(out_dir / LOG_FILE) as f:
        f.writelines(json.dumps(r) + "\n" for r in log)
    dev_last = next((r for r in reversed(log) if any(k.startswith("dev_p1") for k in r)), {})
    return {"model_dir": str(out_dir), "step": step, "loss": last.get("loss"),
            "minutes": round((time.perf_counter() - started) / 60, 2),
            **{k: v for k, v in dev_last.items() if k.startswith("dev_p1")}}
