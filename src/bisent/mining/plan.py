"""The compressed search as checkpointed stages in one state folder (:class:`bisent.state.StateDir`).

Stages, each written atomically into the folder once finished, so a run killed at any point and given the same
folder redoes only the stage it was in (with the same result: every stage is seeded):

``projection.npz`` (P, d × dim) → ``lists.npz`` (the centroids of both sides' lists) → ``index-tgt.faiss`` (the
targets' IVF index, ``faiss.write_index`` to a temporary file, then renamed) → ``fwd.npz`` (nprobe calibrated,
then the sources' lists among the targets) → ``index-src.faiss`` → ``bwd.npz``. The margin, retrieval and
threshold that follow take seconds and are redone.

The folder's fingerprint is both sides' vectors (shard checksums and rows, or the array bytes), ``k``, the
parameters, the score and the threshold the probes were calibrated for: a folder of other inputs or settings is
refused with a one-line error (the one rule of :mod:`bisent.state`). A saved index is also checked against the
vectors it is used with (rows and dimension).
"""

from __future__ import annotations

import time

import numpy as np

from .compressed import (
    PAIR_TARGET,
    Params,
    Rows,
    Timer,
    build_side,
    calibrate_pair_probes,
    read_index,
    search_side,
    train_lists,
    write_index,
)
from .index import KNN

#: version of the stages' layout (in the fingerprint)
FORMAT = "bisent-compressed/1"


class CompressedPlan:
    """One run of :func:`bisent.mining.compressed.knn_compressed` over X (n, d) and Y (m, d)."""

    def __init__(self, x, y, k: int, params: Params, *, kind: str = "ratio", threshold: float | None = None,
                 seed: int = 0, state=None, stats: dict | None = None, executor=None):
        self.x, self.y, self.k, self.params = x, y, k, params
        self.executor = executor                # searches the query shards (default: here; or Ray tasks)
        self.kind, self.threshold, self.seed = kind, threshold, seed
        self.stats = stats
        self.timer = Timer(stats)
        self.store = None
        if state is not None:
            self.store = self._open(state)

    def _open(self, state):
        from ..state import StateDir
        from .blocks import BlockSide

        store = StateDir(state, "compressed", what="a compressed kNN search")
        store.open(inputs={"source vectors": BlockSide(self.x, 65536).fingerprint(),
                           "target vectors": BlockSide(self.y, 65536).fingerprint()},
                   settings={"format": FORMAT, "k": self.k, "params": self.params.__dict__, "kind": self.kind,
                             "threshold": self.threshold, "seed": self.seed, "target": PAIR_TARGET,
                             "rows": [len(self.x), len(self.y)], "dim": int(self.x.shape[1])})
        return store

    # --- stages ---------------------------------------------------------------------------------------------

    def projection(self) -> np.ndarray:
        from .twostage import fit_projection

        saved = self.store.load_arrays("projection.npz") if self.store else None
        if saved is not None:
            return saved["p"]
        t0 = time.perf_counter()
        p = fit_projection(self.x, self.y, self.params.dim, seed=self.seed)
        if self.store:
            self.store.save_arrays("projection.npz", p=p)
        self.timer("projection", t0)
        return p

    def centroids(self, p: np.ndarray) -> np.ndarray:
        saved = self.store.load_arrays("lists.npz") if self.store else None
        if saved is not None:
            return saved["centroids"]
        t0 = time.perf_counter()
        c = train_lists(self.x, self.y, p, self.params, seed=self.seed)
        if self.store:
            self.store.save_arrays("lists.npz", centroids=c)
        self.timer("train_lists", t0)
        return c

    def index(self, side: str, db, p: np.ndarray):
        name = f"index-{side}.faiss"
        if self.store and self.store.has(name):
            return read_index(self.store.part(name), len(db), self.params.dim)
        t0 = time.perf_counter()
        index = build_side(db, p, self.params, self.centroids(p), seed=self.seed)
        if self.store:
            write_index(index, self.store.part(name))
        self.timer(f"index_{side}", t0)
        return index

    def lists(self, direction: str, index, queries, db, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        name = f"{direction}.npz"
        saved = self.store.load_arrays(name) if self.store else None
        if saved is not None:
            self._record(direction, int(saved["nprobe"]), float(saved["agreement"]))
            return saved["sim"], saved["idx"]
        t0 = time.perf_counter()
        rows = Rows(db)
        if self.params.nprobe is None:
            nprobe, agreement = calibrate_pair_probes(index, queries, db, p, self.k, self.params.extra,
                                                      kind=self.kind, threshold=self.threshold, seed=self.seed,
                                                      db_rows=rows)
            if agreement < PAIR_TARGET:
                from .compressed import _note
                _note(f"compressed index: a sample's mined pairs agree with exact search's on {agreement:.1%} even "
                      f"with every list probed (target {PAIR_TARGET:.1%}): codes at {self.params.dim} dimensions "
                      f"lose too much of these vectors; --index twostage or exact keeps them")
        else:
            nprobe, agreement = self.params.nprobe, float("nan")
        self.timer(f"calibrate_{direction}", t0)
        t0 = time.perf_counter()
        if self.executor is None:
            sim, idx = search_side(index, queries, p, rows, self.k, self.params.extra, nprobe)
        else:
            sim, idx = self.executor(index, queries, p, db, self.k, self.params.extra, nprobe)
        if self.store:
            self.store.save_arrays(name, sim=sim, idx=idx, nprobe=np.array(nprobe),
                                   agreement=np.array(agreement))
        self.timer(f"search_{direction}", t0)
        self._record(direction, nprobe, agreement)
        return sim, idx

    def _record(self, direction: str, nprobe: int, agreement: float) -> None:
        if self.stats is not None:
            self.stats.setdefault("params", dict(self.params.__dict__))
            self.stats[f"nprobe_{direction}"] = nprobe
            self.stats[f"sample_pair_agreement_{direction}"] = None if np.isnan(agreement) else round(agreement, 4)

    def run(self) -> KNN:
        p = self.projection()
        fwd = self.lists("fwd", None if self._has("fwd") else self.index("tgt", self.y, p), self.x, self.y, p)
        bwd = self.lists("bwd", None if self._has("bwd") else self.index("src", self.x, p), self.y, self.x, p)
        return KNN(fwd[0], fwd[1], bwd[0], bwd[1])

    def _has(self, direction: str) -> bool:
        return bool(self.store and self.store.has(f"{direction}.npz"))
