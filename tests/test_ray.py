"""`bisent mine --ray` and `bisent embed --ray`: the same bytes as one machine, through a killed worker and a
killed driver.

Ray runs locally with 2 CPUs, one session for the module (starting Ray takes seconds).
Blocks are 4096 rows, the kernel's tile (as by default), on a corpus of 8500 × 4500
sentences: a 3 × 2 grid of jobs. The ``random`` encoder gives dense vectors without
exact cosine ties; ties are covered in tests/test_scale_blocks.py.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

from bisent.cli import main
from bisent.encoders import get_encoder
from bisent.encoders.shards import embed_file

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.ray

from bisent.cluster.ray_mine import RayExecutor  # noqa: E402
from bisent.cluster.ray_session import thread_env  # noqa: E402
from bisent.mining.blocks import BlockScorer, knn_block  # noqa: E402
from bisent.mining.retrieval import mine_files  # noqa: E402

BLOCK = 4096


@pytest.fixture(scope="module")
def ray_local():
    """One local Ray of 2 CPUs for the module, logs in a temp folder removed afterwards."""
    tmp = tempfile.mkdtemp(prefix="bisent-ray-test-")
    ray.init(address="local", num_cpus=2, include_dashboard=False, _temp_dir=tmp,
             runtime_env={"env_vars": thread_env(1)}, logging_level="WARNING")
    yield ray
    ray.shutdown()
    subprocess.run(["rm", "-rf", tmp], check=False)


def _sentences(rng, n):
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = ["".join(rng.choice(letters, size=int(rng.integers(3, 9)))) for _ in range(3000)]
    return [" ".join(rng.choice(words, size=int(rng.integers(4, 12)))) for _ in range(n)]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Source and target files, their vectors folders, and what `bisent mine` writes on one machine."""
    d = tmp_path_factory.mktemp("raycorpus")
    rng = np.random.default_rng(0)
    src = _sentences(rng, 8500)
    tgt = _sentences(rng, 4500)
    enc = get_encoder("random")
    paths = {}
    for name, lines in (("src", src), ("tgt", tgt)):
        p = d / f"{name}.txt"
        p.write_text("\n".join(lines) + "\n", encoding="utf-8")
        embed_file(p, "en", enc, d / f"{name}.vec", shard_rows=1500, progress=False)
        paths[name] = p
    args = [str(paths["src"]), str(paths["tgt"]), "-l", "en", "-L", "en", "--src-vectors", str(d / "src.vec"),
            "--tgt-vectors", str(d / "tgt.vec"), "--threshold", "none"]
    one = d / "one.tsv"
    assert main(["mine", *args, "-o", one]) == 0
    assert len(one.read_text(encoding="utf-8").splitlines()) > 3000
    return d, args, one.read_bytes()


def test_ray_mine_equals_one_machine_byte_for_byte(ray_local, corpus, tmp_path, capsys):
    d, args, want = corpus
    out = tmp_path / "ray.tsv"
    capsys.readouterr()
    assert main(["mine", *args, "-o", out, "--ray", "local", "--block-rows", BLOCK]) == 0
    summary = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert summary["blocks"] == {"blocks": 6, "resumed": 0, "computed": 6}
    assert out.read_bytes() == want
    assert not (tmp_path / "ray.tsv.blocks").exists()            # state removed once the output is written
    # texts embedded in the driver: the blocks travel through Ray's object store instead of a folder
    text_one, text_ray = tmp_path / "t1.tsv", tmp_path / "t2.tsv"
    base = [*args[:6], "-e", "random", "--threshold", "none"]
    assert main(["mine", *base, "-o", text_one]) == 0
    assert main(["mine", *base, "-o", text_ray, "--ray", "local", "--block-rows", BLOCK]) == 0
    assert text_ray.read_bytes() == text_one.read_bytes() == want


def _dies_once(marker: str):
    """A block job that kills its own worker process (SIGKILL) the first time any job runs."""
    def job(*args):
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return knn_block(*args)
        os.kill(os.getpid(), signal.SIGKILL)
    return job


def test_killed_worker_is_retried_and_output_is_identical(ray_local, corpus, tmp_path):
    d, args, want = corpus
    marker = tmp_path / "killed"
    scorer = BlockScorer("ratio", 4, block=BLOCK, executor=RayExecutor(block_fn=_dies_once(str(marker)),
                                                                      max_retries=2))
    out = tmp_path / "ray.tsv"
    mine_files(d / "src.txt", d / "tgt.txt", "en", "en", None, out, scorer=scorer,
               src_vectors=d / "src.vec", tgt_vectors=d / "tgt.vec", progress=False)
    assert marker.exists()                                        # a worker did die
    assert scorer.counts_["computed"] == 6
    assert out.read_bytes() == want


def _session_pids(sid: int) -> list[int]:
    """Processes of session ``sid`` (the killed driver's Ray processes, if any outlive it)."""
    pids = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if os.getsid(int(p)) == sid:
                    pids.append(int(p))
            except OSError:
                pass
    return pids


def test_killed_driver_resumes_from_finished_blocks(corpus, tmp_path):
    d, args, want = corpus
    out, state = tmp_path / "ray.tsv", tmp_path / "state"
    cmd = [sys.executable, "-m", "bisent", "mine", *args, "-o", str(out), "--ray", "local", "--workers", "2",
           "--block-rows", str(BLOCK), "--state", str(state)]
    tmp = tempfile.mkdtemp(prefix="r")                            # short: Ray's socket paths live under it
    env = {**os.environ, "TMPDIR": tmp, "OMP_NUM_THREADS": "1"}
    log = open(tmp_path / "driver.log", "wb")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    try:
        deadline = time.monotonic() + 50
        while not list(state.glob("block-*.npz")) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        proc.kill()                                               # SIGKILL the driver mid-run
        proc.wait()
        log.close()
        done = len(list(state.glob("block-*.npz")))
        assert 1 <= done < 6, (tmp_path / "driver.log").read_text()[-2000:]
        assert not out.exists()
    finally:
        time.sleep(1)
        for pid in _session_pids(proc.pid):                       # Ray processes the driver left behind
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        subprocess.run(["rm", "-rf", tmp], check=False)
    tmp = tempfile.mkdtemp(prefix="r")
    try:
        r = subprocess.run(cmd, env={**env, "TMPDIR": tmp}, capture_output=True, text=True, timeout=120)
    finally:
        subprocess.run(["rm", "-rf", tmp], check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    summary = json.loads(r.stderr.strip().splitlines()[-1])
    assert summary["blocks"]["resumed"] == done
    assert summary["blocks"]["computed"] == 6 - done
    assert out.read_bytes() == want


def test_ray_embed_writes_the_same_shards(ray_local, corpus, tmp_path):
    d, _, _ = corpus
    for name in ("ray", "one"):                                   # the actors compute, then the cache serves
        extra = ["--ray", "local"] if name == "ray" else []
        assert main(["embed", d / "tgt.txt", "-l", "en", "-e", "char-ngram", "-o", tmp_path / name,
                     "--shard-rows", 1000, *extra]) == 0
    files = sorted(p.name for p in (tmp_path / "one").iterdir())
    assert len(files) == 7 and files == sorted(p.name for p in (tmp_path / "ray").iterdir())  # + .bisent-state
    for f in files:
        assert (tmp_path / "one" / f).read_bytes() == (tmp_path / "ray" / f).read_bytes(), f


def test_embed_actor_gets_the_drivers_encoder_settings(monkeypatch):
    """A Ray worker is a fresh process: the actor applies the settings the driver's --device / --batch-size set."""
    from dataclasses import asdict

    from bisent.cluster import ray_embed
    from bisent.encoders import settings

    seen = {}
    monkeypatch.setattr("bisent.encoders.get_encoder", lambda name: seen.setdefault("s", settings.current()))
    try:
        ray_embed._EncoderActor("random", asdict(settings.Settings(batch_size=7, pooling="cls")))
        assert seen["s"].batch_size == 7 and seen["s"].pooling == "cls" and seen["s"].device == "cpu"
    finally:
        settings.reset()
