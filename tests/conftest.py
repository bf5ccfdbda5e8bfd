"""Shared fixtures: every test run gets its own embedding cache so nothing leaks between runs."""

import hashlib
import os
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

# The benchmark and analysis scripts (benchmarks/*.py, not installed with the package) import as top-level modules
# in tests, as they import each other when run from their folder.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))


@pytest.fixture(autouse=True, scope="session")
def _isolated_embedding_cache(tmp_path_factory):
    """Point the embedding cache at a temp folder; keep downloaded data in the user's cache.

    Datasets fetched from Debian (slow, large) stay in $BISENT_CACHE or the default
    cache; only the embeddings folder is isolated, through BISENT_EMBED_CACHE.
    """
    old = os.environ.get("BISENT_EMBED_CACHE")
    os.environ["BISENT_EMBED_CACHE"] = str(tmp_path_factory.mktemp("embeddings"))
    yield
    if old is None:
        os.environ.pop("BISENT_EMBED_CACHE", None)
    else:
        os.environ["BISENT_EMBED_CACHE"] = old


def snapshot(root: Path) -> dict[str, str]:
    """SHA-256 of every regular file under ``root``, links not followed: what a refused command must leave as it was."""
    out = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            p = Path(dirpath) / name
            if stat.S_ISREG(os.lstat(p).st_mode):
                out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def unit_rows(rng, n, d, dtype=np.float32):
    x = rng.standard_normal((n, d)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(dtype)


@pytest.fixture(scope="session")
def toy_model(tmp_path_factory):
    """A divergence model trained for seconds on the toy task of divergence_toys: (model, its folder).

    Trained once for the whole run (six modules use it); a test that changes the folder works on its own copy. On one
    thread, as the training tests' tiny models: two threads on a loaded 2-core machine took 59 s instead of 8 s.
    """
    torch = pytest.importorskip("torch")
    from divergence_toys import train_toy_model

    out = tmp_path_factory.mktemp("div") / "model"
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return train_toy_model(out), out
    finally:
        torch.set_num_threads(before)
