"""Reference encoders with no learned parameters: the floors every real encoder must clear.

- ``char-ngram``: signed feature hashing of character 3- to 5-grams (with word
  boundaries) into ``dim`` buckets. It matches surface overlap (names, numbers,
  cognates, untranslated copies) and nothing else.
- ``random``: a fixed random unit vector per distinct text, i.e. chance level.
"""

from __future__ import annotations

import hashlib
import zlib

import numpy as np

from .base import Encoder


class CharNgramHash(Encoder):
    """Hashed bag of character n-grams; deterministic, language-agnostic, fast."""

    name = "char-ngram"
    dim = 1024
    batch_size = 512

    def __init__(self, dim: int | None = None, n_min: int = 3, n_max: int = 5):
        self.dim, self.n_min, self.n_max = dim or self.dim, n_min, n_max
        self.id = f"char-ngram/{self.dim}-{n_min}-{n_max}-v1"

    def embed_batch(self, sentences, lang):
        out = np.zeros((len(sentences), self.dim), dtype=np.float32)
        for r, s in enumerate(sentences):
            text = f" {' '.join(s.lower().split())} "
            for n in range(self.n_min, self.n_max + 1):
                for i in range(len(text) - n + 1):
                    h = zlib.crc32(text[i:i + n].encode("utf-8"))
                    out[r, h % self.dim] += 1.0 if (h >> 31) & 1 else -1.0
        return out


class RandomEncoder(Encoder):
    """A fixed pseudo-random unit vector per text: the chance-level floor."""

    name = "random"
    dim = 256
    batch_size = 1024

    def __init__(self, dim: int | None = None):
        self.dim = dim or self.dim
        self.id = f"random/{self.dim}-v1"

    def embed_batch(self, sentences, lang):
        out = np.empty((len(sentences), self.dim), dtype=np.float32)
        for r, s in enumerate(sentences):
            seed = int.from_bytes(hashlib.blake2b(s.encode("utf-8"), digest_size=8).digest(), "little")
            out[r] = np.random.default_rng(seed).standard_normal(self.dim)
        return out
