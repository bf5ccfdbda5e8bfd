"""bisent: bilingual sentence and document embeddings for mining, filtering, aligning and repairing parallel corpora.

Python API in brief. The jobs, one function per command with its options and defaults, writing the same files
(:mod:`bisent.jobs`)::

    from bisent import jobs
    summary = jobs.mine("en.txt", "de.txt", src_lang="en", tgt_lang="de", output="mined.tsv")   # = bisent mine

The building blocks below them, at the package root: the vector-level search ``bisent.mine`` (not the job: it
takes vectors and a scorer and returns pairs; the job of that name is ``bisent.jobs.mine``)::

    from bisent import get_encoder, MarginScorer, mine
    enc = get_encoder("use-m3")
    x = enc.encode(src_sentences, "en")          # (n, 512) float32, unit rows
    y = enc.encode(tgt_sentences, "de")          # (m, 512)
    pairs = mine(x, y, MarginScorer(k=4, kind="ratio"), retrieval="max")

The jobs stay under ``bisent.jobs`` and are not exported at the root: ``bisent.mine`` keeps its meaning, and
``from bisent import *`` does not shadow the built-in ``filter``.
"""

__version__ = "0.1.0"

from .encoders import get_encoder  # noqa: E402
from .errors import BisentError  # noqa: E402


def __getattr__(name):
    # Lazy so that `import bisent` stays cheap (faiss is only loaded when needed).
    if name in ("CosineScorer", "EuclideanScorer", "CSLSScorer", "MarginScorer"):
        from .mining import scoring
        return getattr(scoring, name)
    if name in ("mine", "MinedPair"):
        from .mining import retrieval
        return getattr(retrieval, name)
    if name == "jobs":
        import importlib
        return importlib.import_module(".jobs", __name__)
    raise AttributeError(name)


__all__ = ["BisentError", "get_encoder", "CosineScorer", "EuclideanScorer", "CSLSScorer",
           "MarginScorer", "mine", "MinedPair", "jobs", "__version__"]
