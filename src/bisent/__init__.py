"""bisent: bilingual sentence and document embeddings for mining, filtering, aligning and repairing parallel corpora.

Python API in brief::

    from bisent import get_encoder, MarginScorer, mine
    enc = get_encoder("use-m3")
    x = enc.encode(src_sentences, "en")          # (n, 512) float32, unit rows
    y = enc.encode(tgt_sentences, "de")          # (m, 512)
    pairs = mine(x, y, MarginScorer(k=4, kind="ratio"), retrieval="max")
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
    raise AttributeError(name)


__all__ = ["BisentError", "get_encoder", "CosineScorer", "EuclideanScorer", "CSLSScorer",
           "MarginScorer", "mine", "MinedPair", "__version__"]
