"""Where bisent keeps downloaded data and embeddings: ``$BISENT_CACHE`` (default ``~/.cache/bisent``)."""

import os
from pathlib import Path


def cache_dir(*parts: str) -> Path:
    """Return (and create) a folder under the bisent cache."""
    root = Path(os.environ.get("BISENT_CACHE") or Path.home() / ".cache" / "bisent")
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path
