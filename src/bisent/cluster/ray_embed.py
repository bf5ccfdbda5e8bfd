"""Embedding on Ray: one encoder actor per worker, shards of the input sent to them in turn (``bisent embed --ray``).

:func:`bisent.encoders.shards.embed_file` reads the input and cuts it into shards as
always; :meth:`EncoderPool.encode_in_order` encodes each shard's sentences on an
actor (the encoder is loaded once per actor) and hands the vectors back in input
order, and the driver writes the shards, their checksums and the progress file.
Each shard is one ``encode`` call as on one machine, so the folder holds the same
bytes, and a killed run resumes from its finished shards as before. An actor
whose process dies is restarted and its calls retried.
"""

from __future__ import annotations

from collections import deque
from typing import Iterator

import numpy as np

from .ray_session import import_ray, ray_result


class _EncoderActor:
    """Holds one loaded encoder; the body of a Ray actor."""

    def __init__(self, encoder: str, settings: dict | None = None):
        from ..encoders import get_encoder
        from ..encoders.settings import configure

        configure(**(settings or {}))                   # the driver's --device / --batch-size / --pooling
        self.encoder = get_encoder(encoder)

    def encode(self, texts: list[str], lang: str) -> np.ndarray:
        from ..encoders.shards import encode_texts

        return encode_texts(self.encoder, texts, lang)


class EncoderPool:
    """``workers`` encoder actors of ``threads`` CPUs each, for the encoder ``encoder`` (a name or a model folder
    every node sees at the same path), built with this process's encoder settings (``--device``,
    ``--batch-size``, ``--pooling``: :func:`bisent.encoders.settings.current`)."""

    def __init__(self, encoder: str, *, workers: int | None = None, threads: int = 1, max_restarts: int = 3):
        ray = import_ray()
        workers = workers or max(1, int(ray.cluster_resources().get("CPU", 1)) // threads)
        actor = ray.remote(num_cpus=threads, max_restarts=max_restarts, max_task_retries=max_restarts)(_EncoderActor)
        from dataclasses import asdict

        from ..encoders.settings import current

        settings = asdict(current())                     # a worker is a fresh process: it gets the driver's
        self.actors = [actor.remote(encoder, settings) for _ in range(workers)]
        self.retries = max_restarts

    def encode_in_order(self, lang: str, items) -> Iterator[tuple[object, np.ndarray]]:
        """``(item, vectors)`` for each ``(item, texts)``, in order, at most two shards per actor in flight."""
        ray = import_ray()
        pending: deque = deque()
        for n, (item, texts) in enumerate(items):
            pending.append((item, self.actors[n % len(self.actors)].encode.remote(texts, lang)))
            if len(pending) >= 2 * len(self.actors):
                item, ref = pending.popleft()
                yield item, np.array(ray_result(ray, ref, "embedding a shard", self.retries))
        while pending:
            item, ref = pending.popleft()
            yield item, np.array(ray_result(ray, ref, "embedding a shard", self.retries))
