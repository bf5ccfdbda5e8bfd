"""The compressed search both ways (:func:`knn_compressed`) as checkpointed stages in one state folder
(:class:`bisent.state.StateDir`).

Stages, each written atomically into the folder once finished, so a run killed at any point and given the same
folder redoes only the stage it was in (with the same result: every stage is seeded):

``projection.npz`` (P, d × dim) → ``lists-tgt.npz`` (the centroids of the targets' lists) → ``index-tgt.faiss``
(the targets' IVF index, ``faiss.write_index`` to a temporary file, then renamed) → ``fwd.npz`` (nprobe
calibrated, then the sources' lists among the targets) → ``lists-src.npz`` → ``index-src.faiss`` →
``bwd.npz``. The margin, retrieval and threshold that follow take seconds and are redone.

The folder's fingerprint is both sides' vectors (shard checksums and rows, or the array bytes), ``k``, the
parameters, the score and the threshold the probes were calibrated for: a folder of other inputs or settings is
refused with a one-line error (the one rule of :mod:`bisent.state`). A saved index is also checked against the
vectors it is used with (rows and dimension).
"""

from __future__ import annotations

import time

import faiss
import numpy as np

from ..errors import BisentError
from .compressed import (
    MIN_TRAIN_PER_LIST,
    PAIR_TARGET,
    Params,
    Rows,
    Timer,
    _note,
    build_side,
    calibrate_pair_probes,
    compressed_params,
    read_index,
    search_side,
    train_lists,
    write_index,
)
from .index import KNN

#: a calibration needing more than 1 / MANY_PROBES of the lists is said on standard error (at 1M a side, a distilled
#: student's 139-language targets among English sources needed 1,309 of 8,000)
MANY_PROBES = 8
#: version of the stages' layout (in the fingerprint)
FORMAT = "bisent-compressed/2"


class CompressedPlan:
    """One run of :func:`knn_compressed` over X (n, d) and Y (m, d)."""

    def __init__(self, x, y, k: int, params: Params, *, kind: str = "ratio", threshold: float | None = None,
                 retrieval: str | None = None, seed: int = 0, state=None, stats: dict | None = None, executor=None,
                 progress: bool | None = None):
        self.x, self.y, self.k, self.params = x, y, k, params
        self.progress = progress
        self.executor = executor                # searches the query shards (default: here; or Ray tasks)
        self.kind, self.threshold, self.seed = kind, threshold, seed
        self.retrieval = retrieval
        self.stats = stats
        self.timer = Timer(stats)
        self.store = None
        if state is not None:
            self.store = self._open(state)

    def _open(self, state):
        from ..encoders.shards import vectors_sha256
        from ..state import StateDir

        store = StateDir(state, "compressed", what="a compressed kNN search")
        store.open(inputs={"source vectors": vectors_sha256(self.x), "target vectors": vectors_sha256(self.y)},
                   settings={"format": FORMAT, "k": self.k, "params": self.params.__dict__, "kind": self.kind,
                             "threshold": self.threshold, "retrieval": self.retrieval, "seed": self.seed,
                             "target": PAIR_TARGET,
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

    def centroids(self, side: str, db, p: np.ndarray) -> np.ndarray:
        name = f"lists-{side}.npz"
        saved = self.store.load_arrays(name) if self.store else None
        if saved is not None:
            return saved["centroids"]
        t0 = time.perf_counter()
        with self._phase(f"compressed index: {self.params.nlist} lists of the {self._name(side)}"):
            c = train_lists(db, p, self.params, seed=self.seed)
        if self.store:
            self.store.save_arrays(name, centroids=c)
        self.timer(f"train_lists_{side}", t0)
        return c

    def index(self, side: str, db, p: np.ndarray):
        name = f"index-{side}.faiss"
        if self.store and self.store.has(name):
            return read_index(self.store.part(name), len(db), self.params.dim)
        centroids = self.centroids(side, db, p)
        t0 = time.perf_counter()
        with self._phase(f"compressed index: coding the {self._name(side)}"):
            index = build_side(db, p, self.params, centroids, seed=self.seed)
        if self.store:
            write_index(index, self.store.part(name))
        self.timer(f"index_{side}", t0)
        return index

    def lists(self, direction: str, index, queries, db, p: np.ndarray,
              reverse: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
        name = f"{direction}.npz"
        saved = self.store.load_arrays(name) if self.store else None
        if saved is not None:
            self._record(direction, int(saved["nprobe"]), float(saved["agreement"]))
            return saved["sim"], saved["idx"]
        t0 = time.perf_counter()
        rows = Rows(db)
        if self.params.nprobe is None:
            with self._phase(f"compressed index: calibrating the probes ({direction})"):
                nprobe, agreement = calibrate_pair_probes(index, queries, db, p, self.k, self.params.extra,
                                                          kind=self.kind, threshold=self.threshold,
                                                          seed=self.seed, db_rows=rows, reverse=reverse)
            if self.progress is not False:
                _note(f"compressed index: {nprobe} of {self.params.nlist} lists probed ({direction}): a sample's "
                      f"mined pairs {agreement:.1%} the exact search's")
            if agreement >= PAIR_TARGET and nprobe * MANY_PROBES > self.params.nlist:
                _note(f"compressed index: {nprobe} of {self.params.nlist} lists are needed ({direction}): these "
                      f"vectors cluster poorly (each query's neighbours spread over many lists), so the search "
                      f"scans a large share of the codes; --index twostage may be as fast")
            if agreement < PAIR_TARGET:
                _note(f"compressed index: a sample's mined pairs agree with exact search's on {agreement:.1%} even "
                      f"with every list probed (target {PAIR_TARGET:.1%}): the {self.params.dim}-dimension codes and "
                      f"{self.params.extra} extra candidates lose too much of these vectors; --index twostage or "
                      f"exact keeps them")
        else:
            nprobe, agreement = self.params.nprobe, float("nan")
        self.timer(f"calibrate_{direction}", t0)
        t0 = time.perf_counter()
        if self.executor is None:
            sim, idx = search_side(index, queries, p, rows, self.k, self.params.extra, nprobe,
                                   progress=self.progress, desc=f"compressed search ({direction}, {nprobe} probes)")
        else:
            sim, idx = self.executor(index, queries, p, db, self.k, self.params.extra, nprobe)
        if self.store:
            self.store.save_arrays(name, sim=sim, idx=idx, nprobe=np.array(nprobe),
                                   agreement=np.array(agreement))
        self.timer(f"search_{direction}", t0)
        self._record(direction, nprobe, agreement)
        return sim, idx

    def _name(self, side: str) -> str:
        return {"tgt": "targets", "src": "sources"}[side]

    def _phase(self, desc: str):
        """Start and end lines of a phase with no count to show, and a line every few seconds off a terminal."""
        import contextlib

        from ..progress import heartbeat

        return contextlib.nullcontext() if self.progress is False else heartbeat(desc)

    def _record(self, direction: str, nprobe: int, agreement: float) -> None:
        if self.stats is not None:
            self.stats.setdefault("params", dict(self.params.__dict__))
            self.stats[f"nprobe_{direction}"] = nprobe
            self.stats[f"sample_pair_agreement_{direction}"] = None if np.isnan(agreement) else round(agreement, 4)

    def run(self) -> KNN:
        p = self.projection()
        fwd = self.lists("fwd", None if self._has("fwd") else self.index("tgt", self.y, p), self.x, self.y, p)
        # under max retrieval a pair the forward lists mine needs no finding backward: the backward probes are
        # calibrated on the rest (targets of many languages among English sources need many more probes)
        reverse = fwd if self.retrieval == "max" else None
        bwd = self.lists("bwd", None if self._has("bwd") else self.index("src", self.x, p), self.y, self.x, p,
                         reverse)
        return KNN(fwd[0], fwd[1], bwd[0], bwd[1])

    def _has(self, direction: str) -> bool:
        return bool(self.store and self.store.has(f"{direction}.npz"))


def knn_compressed(x, y, k: int = 4, *, dim: int | None = None, nlist: int | None = None, codes: str | None = None,
                   coarse: str | None = None, extra: int | None = None, nprobe: int | None = None,
                   kind: str = "ratio", threshold: float | None = None, retrieval: str | None = None, seed: int = 0,
                   threads: int | None = None, stats: dict | None = None, state=None, executor=None,
                   progress: bool | None = None):
    """Top-``k`` neighbours both ways (a :class:`~bisent.mining.index.KNN`) by the compressed index, exact scores.

    ``x`` (n, d), ``y`` (m, d): arrays, Shards or RowViews. Parameters not given:
    :func:`~bisent.mining.compressed.compressed_params` of the larger side; ``nprobe`` not given:
    :func:`~bisent.mining.compressed.calibrate_pair_probes` each direction for the score ``kind`` and
    ``threshold`` (None: the best-scoring share of a sample counts); ``retrieval`` the mining's (``max``: the
    backward probes need find only the pairs the forward lists do not mine; None: each direction on its own).
    ``stats`` receives each stage's seconds and the parameters used. ``state``: a folder (this module's stages)
    where each stage is saved, so a killed run resumes. ``executor``: where the query shards are searched (default:
    here; :class:`bisent.cluster.ray_compressed.RaySearch`: Ray tasks, the same lists). Too few rows to train an
    index: the exact search (said on standard error).
    """
    from .index import knn_both

    n, m = len(x), len(y)
    if x.shape[1] != y.shape[1]:
        raise BisentError(f"dimension mismatch: source vectors have {x.shape[1]} dimensions, target {y.shape[1]}")
    params = compressed_params(max(n, m), int(x.shape[1]), dim=dim, nlist=nlist, codes=codes, coarse=coarse,
                               extra=extra, nprobe=nprobe)
    if n == 0 or m == 0 or k < 1 or params is None or min(n, m) < MIN_TRAIN_PER_LIST * params.nlist:
        if n and m and k >= 1:
            _note(f"compressed index: {min(n, m)} vectors on a side are too few to train "
                  f"{'an index' if params is None else f'{params.nlist} lists'} "
                  f"(at least {MIN_TRAIN_PER_LIST} a list); searching exactly")
        if stats is not None:
            stats["fallback"] = "exact"
        return knn_both(x, y, k, progress=progress)
    if threads:
        faiss.omp_set_num_threads(int(threads))
    plan = CompressedPlan(x, y, k, params, kind=kind, threshold=threshold, retrieval=retrieval, seed=seed,
                          state=state, stats=stats, executor=executor, progress=progress)
    return plan.run()
