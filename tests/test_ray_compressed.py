"""The compressed search on a local Ray of 2 workers: the same mined pairs as one machine, bytes for bytes, with the
query shards as tasks both ways; a worker killed in its first task is rerun and changes nothing. Real text (gettext
UI messages, English and German), vectors folders of the char-ngram encoder (read by the workers themselves)."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile

import pytest

from bisent.cli import main

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.ray

from bisent.cluster.ray_compressed import RaySearch, search_shard  # noqa: E402
from bisent.cluster.ray_session import thread_env  # noqa: E402
from bisent.mining.retrieval import mine_files  # noqa: E402
from bisent.mining.scoring import Scorer  # noqa: E402


@pytest.fixture(scope="module")
def ray_local():
    tmp = tempfile.mkdtemp(prefix="bisent-ray-test-")
    ray.init(address="local", num_cpus=2, include_dashboard=False, _temp_dir=tmp,
             runtime_env={"env_vars": thread_env(1)}, logging_level="WARNING")
    yield ray
    ray.shutdown()
    subprocess.run(["rm", "-rf", tmp], check=False)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    from bisent.datasets.gettext import load_pairs
    from bisent.encoders import get_encoder
    from bisent.encoders.shards import embed_file

    pairs = load_pairs("en", "de")
    d = tmp_path_factory.mktemp("raycompressed")
    (d / "en.txt").write_text("".join(p.src + "\n" for p in pairs[:5000]), encoding="utf-8")
    (d / "de.txt").write_text("".join(p.tgt + "\n" for p in pairs[1500:6500][::-1]), encoding="utf-8")
    enc = get_encoder("char-ngram")
    for name, lang in (("en", "en"), ("de", "de")):
        embed_file(d / f"{name}.txt", lang, enc, d / f"{name}.vec", shard_rows=1700, progress=False)
    args = [str(d / "en.txt"), str(d / "de.txt"), "-l", "en", "-L", "de", "--src-vectors", str(d / "en.vec"),
            "--tgt-vectors", str(d / "de.vec"), "--index", "compressed", "--threshold", "none"]
    one = d / "one.tsv"
    assert main(["mine", *args, "-o", str(one)]) == 0
    return d, args, one.read_bytes()


def test_ray_compressed_equals_one_machine(ray_local, corpus, tmp_path):
    d, args, want = corpus
    out = tmp_path / "ray.tsv"
    assert main(["mine", *args, "-o", str(out), "--ray", "local"]) == 0
    assert out.read_bytes() == want
    assert not (tmp_path / "ray.tsv.knn").exists()
    # several shards a direction, finishing in any order: placed by their rows, the same pairs
    many = tmp_path / "many.tsv"
    scorer = Scorer("ratio", 4, knn_method="compressed", executor=RaySearch(shard_rows=700))
    mine_files(d / "en.txt", d / "de.txt", "en", "de", None, many, scorer=scorer, src_vectors=d / "en.vec",
               tgt_vectors=d / "de.vec")
    assert many.read_bytes() == want


def _dies_once(marker: str):
    """A search task that kills its own worker process (SIGKILL) the first time any task runs."""
    def task(*args):
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return search_shard(*args)
        os.kill(os.getpid(), signal.SIGKILL)
    return task


def test_killed_worker_is_rerun(ray_local, corpus, tmp_path):
    d, _, want = corpus
    marker = tmp_path / "killed"
    out = tmp_path / "ray.tsv"
    scorer = Scorer("ratio", 4, knn_method="compressed",
                    executor=RaySearch(shard_rows=1200, max_retries=2, shard_fn=_dies_once(str(marker))))
    mine_files(d / "en.txt", d / "de.txt", "en", "de", None, out, scorer=scorer, src_vectors=d / "en.vec",
               tgt_vectors=d / "de.vec")
    assert marker.exists()
    assert out.read_bytes() == want


@pytest.mark.slow
def test_running_cluster_by_address(corpus, tmp_path):
    """`bisent mine --ray ADDRESS` joins a cluster started outside it (a head node in its own processes) and mines
    the one-machine pairs."""
    import sys

    from ray.cluster_utils import Cluster

    d, args, want = corpus
    cluster = Cluster(initialize_head=True, connect=False, head_node_args={"num_cpus": 2, "include_dashboard": False})
    try:
        out = tmp_path / "cluster.tsv"
        r = subprocess.run([sys.executable, "-m", "bisent", "mine", *args, "-o", str(out), "--ray", cluster.address],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
    finally:
        cluster.shutdown()
    assert out.read_bytes() == want


def test_worker_deserialises_an_index_once():
    """A worker reuses the index of the search whose shards it runs, and takes the next search's new index."""
    import faiss
    import numpy as np

    from bisent.cluster.ray_compressed import _index

    index = faiss.IndexFlatIP(8)
    index.add(np.eye(8, dtype=np.float32))
    blob = faiss.serialize_index(index)
    first = _index(blob, "search-1")
    assert _index(blob, "search-1") is first and first.ntotal == 8
    assert _index(blob, "search-2") is not first
    assert _index(blob, None) is not _index(blob, None)
