"""The score formulas on arrays: cosine, Euclidean similarity, CSLS and the three margins (Artetxe & Schwenk 2019).

:mod:`bisent.mining.scoring` wraps them in scorers (and re-exports them); they live here, apart, so that the searches
that calibrate themselves on mined pairs (:mod:`bisent.mining.compressed`) score pairs exactly as mining does
without importing the scorers that call them.
"""

from __future__ import annotations

import numpy as np


def margin(cos: np.ndarray, r_x: np.ndarray, r_y: np.ndarray, kind: str = "ratio") -> np.ndarray:
    """The margin of Artetxe & Schwenk 2019: ``cos`` compared with m = (r_x + r_y) / 2."""
    if kind == "absolute":
        return np.asarray(cos, dtype=np.float32)
    m = (np.asarray(r_x) + np.asarray(r_y)) / 2
    if kind == "distance":
        return (cos - m).astype(np.float32)
    if kind == "ratio":
        return (cos / np.maximum(m, 1e-6)).astype(np.float32)
    raise ValueError(f"unknown margin '{kind}' (absolute, distance, ratio)")


def csls(cos: np.ndarray, r_x: np.ndarray, r_y: np.ndarray) -> np.ndarray:
    """Cross-domain similarity local scaling: 2 cos(x, y) - r_x - r_y."""
    return (2 * np.asarray(cos) - r_x - r_y).astype(np.float32)


def euclidean_similarity(cos: np.ndarray) -> np.ndarray:
    """-‖x - y‖ for unit vectors, from their cosine."""
    return (-np.sqrt(np.maximum(0.0, 2.0 - 2.0 * np.asarray(cos)))).astype(np.float32)


def combine(kind: str, cos, r_x, r_y) -> np.ndarray:
    """Score ``kind`` from cosines and the neighbourhood means of each side (broadcasting)."""
    if kind == "cosine":
        return np.asarray(cos, dtype=np.float32)
    if kind == "euclidean":
        return euclidean_similarity(cos)
    if kind == "csls":
        return csls(cos, r_x, r_y)
    return margin(cos, r_x, r_y, kind)
