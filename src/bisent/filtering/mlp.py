"""Kim et al. (2019)'s MLP similarity: a small classifier on a pair of sentence embeddings.

q(a, b) = sigmoid(MLP([a; b])): the two unit embeddings concatenated, hidden
ReLU layers (the paper: 2 × 512), one sigmoid output, trained with binary
cross-entropy on positives (a clean bitext) against negatives (Kim et al.
2019, §3.3, eq. 15, whose "(1 − log q)" for negatives stands for log(1 − q)).
``features: concat-diff-prod`` feeds [a; b; |a − b|; a ∗ b] instead (the
classifier input of the divergence paper), an option; [a; b] is the default
as in the paper.

A trained scorer is a directory like a model: ``config.json`` (architecture,
sizes, the encoder's name and id, the languages, how it was trained) and
``model.safetensors``; never pickle. The ``mlp`` filter step (:mod:`.mlp_step`) scores with it;
the negative strategies are in :mod:`.negatives`.

Training follows scikit-learn's MLPClassifier defaults, which the paper used:
Adam, learning rate 1e-3, L2 1e-4, batches of 200, at most 1,000 updates; the
classes are weighted equally, and the weights with the best loss on a held-out
tenth are kept. Training is deterministic for a seed (one torch thread unless
``threads`` says otherwise).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import BisentError
from .negatives import choose_negatives, parse_strategy
from .records import Pair

ARCHITECTURE = "mlp-similarity"
FORMAT_VERSION = 1
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
FEATURES = {"concat": 2, "concat-diff-prod": 4}  # name -> input width in units of the embedding size


def build_network(dim: int, hidden: Sequence[int], features: str):
    """``nn.Sequential``: Linear(F·dim → h1), ReLU, …, Linear(h_last → 1) (one logit per pair)."""
    from torch import nn

    layers: list = []
    width = FEATURES[features] * dim
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    layers.append(nn.Linear(width, 1))
    return nn.Sequential(*layers)


def pair_features(a, b, features: str):
    """Input rows for the network: a (n, d), b (n, d) -> (n, F·d): [a; b] or [a; b; |a−b|; a∗b]."""
    import torch

    if features == "concat":
        return torch.cat([a, b], dim=1)
    return torch.cat([a, b, (a - b).abs(), a * b], dim=1)


class _Threads:
    """Run torch with ``n`` threads inside the block, then restore the previous setting."""

    def __init__(self, n: int | None):
        self.n = n

    def __enter__(self):
        import torch

        self.old = torch.get_num_threads()
        if self.n:
            torch.set_num_threads(self.n)

    def __exit__(self, *exc):
        import torch

        torch.set_num_threads(self.old)


def _default_threads() -> int:
    from ..threads import default_threads

    return default_threads(fallback=1)


@dataclass
class TrainLog:
    """What training did: updates made, epochs, the kept epoch, held-out loss and accuracy."""

    updates: int
    epochs: int
    best_epoch: int
    val_loss: float
    val_accuracy: float
    seconds: float


class MLPScorer:
    """The MLP similarity, scikit-learn style: ``MLPScorer().fit(pos_x, pos_y, neg_x, neg_y).score(x, y)``.

    Learned state ends in ``_``: ``net_`` (the torch module), ``dim_``, ``log_``.
    ``meta`` holds what a saved scorer records beside the weights (encoder, languages, training).
    """

    def __init__(self, *, hidden: Sequence[int] = (512, 512), features: str = "concat", lr: float = 1e-3,
                 weight_decay: float = 1e-4, batch_size: int = 200, max_updates: int = 1000,
                 max_epochs: int = 200, val_share: float = 0.1, seed: int = 0, threads: int | None = None):
        if features not in FEATURES:
            raise BisentError(f"unknown MLP features '{features}' (one of {', '.join(FEATURES)})")
        if not hidden or any(int(h) < 1 for h in hidden):
            raise BisentError(f"hidden layer sizes must be positive integers, got {list(hidden)}")
        self.hidden = [int(h) for h in hidden]
        self.features = features
        self.lr, self.weight_decay = float(lr), float(weight_decay)
        self.batch_size, self.max_updates, self.max_epochs = int(batch_size), int(max_updates), int(max_epochs)
        self.val_share, self.seed = float(val_share), int(seed)
        self.threads = threads
        self.meta: dict[str, Any] = {}

    # --- training ---

    def fit(self, pos_x: np.ndarray, pos_y: np.ndarray, neg_x: np.ndarray, neg_y: np.ndarray) -> "MLPScorer":
        """Train on positives (pos_x[i], pos_y[i]) and negatives (neg_x[j], neg_y[j]); rows (·, d) float32."""
        import torch

        if len(pos_x) < 2 or len(neg_x) < 2:
            raise BisentError(f"MLP training needs at least 2 positives and 2 negatives, got {len(pos_x)} and "
                              f"{len(neg_x)}")
        t0 = time.perf_counter()
        a = np.concatenate([pos_x, neg_x]).astype(np.float32)            # (N, d)
        b = np.concatenate([pos_y, neg_y]).astype(np.float32)            # (N, d)
        label = np.concatenate([np.ones(len(pos_x)), np.zeros(len(neg_x))]).astype(np.float32)  # (N,)
        # each class weighs as much as the other, whatever their sizes
        weight = np.where(label == 1, len(label) / (2 * len(pos_x)), len(label) / (2 * len(neg_x))).astype(np.float32)
        train_idx, val_idx = _split(label, self.val_share, self.seed)
        self.dim_ = a.shape[1]
        # one thread unless told otherwise: threaded reductions can differ in the last bits from run to run
        with _Threads(self.threads or 1), torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            net = build_network(self.dim_, self.hidden, self.features)
            opt = torch.optim.Adam(net.parameters(), lr=self.lr, weight_decay=self.weight_decay)
            A, B = torch.from_numpy(a), torch.from_numpy(b)
            Y, W = torch.from_numpy(label), torch.from_numpy(weight)
            tr = torch.from_numpy(train_idx)
            gen = torch.Generator().manual_seed(self.seed)
            best = (float("inf"), -1, None, 0.0)  # (val loss, epoch, weights, val accuracy)
            updates = epoch = 0
            while updates < self.max_updates and epoch < self.max_epochs:
                net.train()
                for batch in tr[torch.randperm(len(tr), generator=gen)].split(self.batch_size):
                    logits = net(pair_features(A[batch], B[batch], self.features)).squeeze(1)   # (bs,)
                    loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, Y[batch], weight=W[batch])
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
                    updates += 1
                    if updates >= self.max_updates:
                        break
                epoch += 1
                val_loss, val_acc = self._evaluate(net, A, B, Y, W, val_idx if len(val_idx) else train_idx)
                if val_loss < best[0]:
                    best = (val_loss, epoch, {k: v.detach().clone() for k, v in net.state_dict().items()}, val_acc)
            net.load_state_dict(best[2])
        net.eval()
        self.net_ = net
        self.log_ = TrainLog(updates=updates, epochs=epoch, best_epoch=best[1], val_loss=round(best[0], 5),
                             val_accuracy=round(best[3], 4), seconds=round(time.perf_counter() - t0, 2))
        return self

    def _evaluate(self, net, A, B, Y, W, idx: np.ndarray) -> tuple[float, float]:
        """Weighted BCE and accuracy (threshold 0.5) of ``net`` on rows ``idx``."""
        import torch

        net.eval()
        with torch.no_grad():
            i = torch.from_numpy(idx)
            logits = net(pair_features(A[i], B[i], self.features)).squeeze(1)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, Y[i], weight=W[i])
            acc = ((logits > 0).float() == Y[i]).float().mean()
        return float(loss), float(acc)

    # --- scoring ---

    def logits(self, x: np.ndarray, y: np.ndarray, block: int = 65536) -> np.ndarray:
        """Logits (n,) float32 of aligned rows x (n, d), y (n, d)."""
        import torch

        if x.shape[1] != self.dim_ or y.shape[1] != self.dim_:
            raise BisentError(f"MLP scorer expects {self.dim_}-d embeddings, got {x.shape[1]} and {y.shape[1]}")
        out = np.empty(len(x), dtype=np.float32)
        with _Threads(self.threads or _default_threads()), torch.no_grad():
            for s in range(0, len(x), block):
                a = torch.from_numpy(np.ascontiguousarray(x[s:s + block], dtype=np.float32))
                b = torch.from_numpy(np.ascontiguousarray(y[s:s + block], dtype=np.float32))
                out[s:s + block] = self.net_(pair_features(a, b, self.features)).squeeze(1).numpy()
        return out

    def score(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """q(a, b): the probability (n,) float64 that each pair is parallel (computed in float64 from
        the logits, so saturated scores keep their order up to |logit| ≈ 36)."""
        return 1.0 / (1.0 + np.exp(-self.logits(x, y).astype(np.float64)))

    # --- a directory like a model ---

    def config(self) -> dict:
        return {"architecture": ARCHITECTURE, "format_version": FORMAT_VERSION,
                "model": {"dim": self.dim_, "hidden": self.hidden, "features": self.features}, **self.meta}

    def save(self, out_dir) -> Path:
        """Write the scorer's directory (:func:`bisent.models.modeldir.save`)."""
        from ..models import modeldir

        config = self.config()
        return modeldir.save(out_dir, ARCHITECTURE, config["model"], self.net_.state_dict(),
                             extra={k: v for k, v in config.items() if k not in ("architecture", "format_version",
                                                                                 "model")})

    @classmethod
    def load(cls, model_dir) -> "MLPScorer":
        """Rebuild a saved scorer; a missing or corrupt file is a one-line :class:`BisentError`."""
        from ..encoders.trained import read_config
        from ..models import modeldir

        model_dir = Path(model_dir)
        if not model_dir.is_dir():
            raise BisentError(f"{model_dir}: no such scorer directory (train one with bisent train-scorer)")
        config = read_config(model_dir)
        if config.get("architecture") != ARCHITECTURE:
            raise BisentError(f"{model_dir / CONFIG_FILE}: not an MLP scorer (architecture "
                              f"{config.get('architecture')!r}, expected '{ARCHITECTURE}')")
        md = modeldir.load(model_dir, ("dim", "hidden", "features"), config=config, framework="torch")
        hp, enc, w_path, tensors = md.hp, config.get("encoder"), md.path / WEIGHTS_FILE, md.tensors
        try:
            dim, hidden, features = int(hp["dim"]), [int(h) for h in hp["hidden"]], str(hp["features"])
            enc_name, enc_id = str(enc["name"]), str(enc["id"])
        except (TypeError, KeyError, ValueError):
            raise md.error("incomplete scorer config (needs model.dim, model.hidden, "
                           "model.features, encoder.name, encoder.id)") from None
        scorer = cls(hidden=hidden, features=features)
        scorer.meta = {k: v for k, v in config.items() if k not in ("architecture", "format_version", "model")}
        scorer.dim_ = dim
        net = build_network(dim, hidden, features)
        try:
            net.load_state_dict(tensors, strict=True)
        except RuntimeError as e:
            raise BisentError(f"{w_path}: weights do not match {CONFIG_FILE} ({' '.join(str(e).split())[:160]})") \
                from None
        net.eval()
        scorer.net_ = net
        scorer.encoder_name, scorer.encoder_id = enc_name, enc_id
        return scorer


def _split(label: np.ndarray, share: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Train and held-out row indices, the held-out share taken from each class alike."""
    rng = np.random.default_rng(seed)
    train, val = [], []
    for cls in (1.0, 0.0):
        idx = rng.permutation(np.flatnonzero(label == cls))
        n_val = int(round(share * len(idx))) if len(idx) >= 10 else 0
        val.append(idx[:n_val])
        train.append(idx[n_val:])
    return np.sort(np.concatenate(train)).astype(np.int64), np.sort(np.concatenate(val)).astype(np.int64)


class Embedder:
    """Embeds texts once per language for one training run (the persistent cache does it across runs)."""

    def __init__(self, encoder):
        self.encoder = encoder
        self.rows: dict[tuple[str, str], np.ndarray] = {}

    def __call__(self, texts: Sequence[str], lang: str, progress: bool | None = None) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if (lang, t) not in self.rows]
        if todo:
            vecs = self.encoder.encode(todo, lang, progress=progress)
            self.rows.update(zip(((lang, t) for t in todo), vecs))
        if not texts:
            return np.zeros((0, self.encoder.dim), dtype=np.float32)
        return np.stack([self.rows[(lang, t)] for t in texts])

    def pairs(self, pairs: Sequence[Pair], src_lang: str, tgt_lang: str, progress=None):
        return self([s for s, _ in pairs], src_lang, progress), self([t for _, t in pairs], tgt_lang, progress)


def train_scorer(clean: Sequence[Pair], src_lang: str, tgt_lang: str, *, encoder: str, negatives: str = "random",
                 noisy: Sequence[Pair] | None = None, n_negatives: int | None = None, docs=None, third=None,
                 out_dir=None, progress: bool | None = None, embedder: "Embedder | None" = None,
                 **hp) -> MLPScorer:
    """Embed, choose negatives by strategy, train an :class:`MLPScorer` (``hp``: its keyword arguments),
    record the encoder, languages and training in ``meta``, and save it to ``out_dir`` when given.

    ``embedder``: an :class:`Embedder` of the same encoder shared by several trainings (texts embedded once).
    """
    from ..encoders import get_encoder

    enc = get_encoder(encoder)
    for lang in (src_lang, tgt_lang):
        enc.check_lang(lang)
    name, _ = parse_strategy(negatives)
    embed = embedder if embedder is not None else Embedder(enc)
    seed = int(hp.get("seed", 0))
    noisy_cos = None
    if name == "worst" and noisy:
        nx, ny = embed.pairs(noisy, src_lang, tgt_lang, progress)
        noisy_cos = np.einsum("ij,ij->i", nx, ny)
    neg = choose_negatives(negatives, clean, noisy=noisy, noisy_cos=noisy_cos, n=n_negatives, docs=docs,
                           third=third, seed=seed)
    pos_x, pos_y = embed.pairs(clean, src_lang, tgt_lang, progress)
    neg_x, neg_y = embed.pairs(neg, src_lang, tgt_lang, progress)
    scorer = MLPScorer(**hp).fit(pos_x, pos_y, neg_x, neg_y)
    scorer.meta = {
        "encoder": {"name": str(encoder), "id": enc.id, "dim": enc.dim},
        "languages": {"src": src_lang, "tgt": tgt_lang},
        "training": {"negatives": negatives, "positives": len(clean), "negative_pairs": len(neg),
                     "noisy_pairs": len(noisy) if noisy else 0, "seed": seed,
                     "hp": {"lr": scorer.lr, "weight_decay": scorer.weight_decay, "batch_size": scorer.batch_size,
                            "max_updates": scorer.max_updates, "max_epochs": scorer.max_epochs,
                            "val_share": scorer.val_share},
                     **vars(scorer.log_)},
    }
    scorer.encoder_name, scorer.encoder_id = str(encoder), enc.id
    scorer.negative_pairs_ = neg
    if out_dir is not None:
        scorer.save(out_dir)
    return scorer


def read_pairs(path) -> tuple[list[Pair], int]:
    """The well-formed pairs of a bitext (a ``src<TAB>tgt`` file, plain or compressed, or any format of
    :mod:`bisent.io.bitext` by suffix) and how many units were skipped (wrong column count, undecodable, NUL,
    an empty side)."""
    from ..io.bitext import iter_units, open_bitext

    bt = open_bitext([path])
    pairs, empty = [], 0
    for u in iter_units(bt, on_bad="skip"):
        if u.src and u.tgt:
            pairs.append((u.src, u.tgt))
        else:
            empty += 1
    return pairs, empty + sum(bt.skipped.values())


__all__ = ["MLPScorer", "train_scorer", "read_pairs", "Embedder", "build_network", "pair_features", "FEATURES"]
