"""benchmarks/ray_projection.py: the projection to larger sizes follows its stated assumptions (stage by stage) and
reads the latest anchor of a records file."""

from __future__ import annotations

import json

import pytest

from bisent.mining.compressed import BLOCK, compressed_params
from ray_projection import latest, project

ANCHOR = {"bench": "one_machine", "src": 131072, "tgt": 131072, "dim": 512, "time": "t1", "score_seconds": 2.0,
          "search_seconds": 100.0, "nprobe_fwd": 64, "nprobe_bwd": 90,
          "params": compressed_params(131072, 512).__dict__,
          "stages": {"projection": 4.0, "train_lists": 30.0, "index_tgt": 10.0, "index_src": 10.0,
                     "calibrate_fwd": 40.0, "calibrate_bwd": 40.0, "search_fwd": 50.0, "search_bwd": 50.0},
          "shard_costs": {"shard_rows": 65536, "shard_indexed_rows": 131072, "shard_codes_seconds": 20.0,
                          "shard_rerank_seconds": 5.0, "index_bytes": 131072 * 136, "index_serialise_seconds": 0.1,
                          "index_deserialise_seconds": 0.2}}


def test_stages_scale_as_stated():
    to = 100_000_000
    one = project(ANCHOR, None, to, 1, 16, 1)
    four = project(ANCHOR, None, to, 4, 16, 1)
    big, small = compressed_params(to, 512), ANCHOR["params"]
    grow = to / 131072
    st = one["stage_seconds"]
    assert st["projection"] == 4
    assert st["train_lists"] == round(30.0 * (big.nlist / small["nlist"]) ** 2)
    assert st["index"] == round(20.0 * grow) and st["calibrate"] == round(80.0 * grow)
    assert st["merge"] == round(2 * grow)
    assert one["tasks"] == 2 * -(-to // BLOCK)
    deser = one["deserialise_seconds_per_worker_and_direction"]
    assert four["stage_seconds"]["search"] == pytest.approx((st["search"] - 2 * deser) / 4 + 2 * deser, abs=1)
    assert four["serial_seconds"] == one["serial_seconds"]                                  # the driver's are not
    per_query = 20.0 / 65536 * (to / big.nlist) / (131072 / small["nlist"]) + 5.0 / 65536
    assert st["search"] == pytest.approx(2 * to * per_query / 16 + 2 * deser, rel=1e-3)
    assert deser == pytest.approx(0.2 / (131072 * 136) * one["index_gib_at_to"] * 2**30, rel=0.01)
    assert project(ANCHOR, None, to, 1, 16, 16)["serial_seconds"] == pytest.approx(one["serial_seconds"] / 16, abs=1)
    # a slower Ray (its 1-worker search twice one machine's) doubles the tasks' part
    slow = project(ANCHOR, {"search_seconds": 200.0}, to, 1, 16, 1)
    # the shard costs in CPU seconds: the Ray tasks' CPU share of the anchor's wall seconds (here a half)
    half = project(ANCHOR, {"search_seconds": 100.0, "tasks": 4, "task_cpu_seconds": 50.0}, to, 1, 16, 1)
    assert half["shard_cpu_scale"] == 0.5
    assert half["stage_seconds"]["search"] == pytest.approx((st["search"] - 2 * deser) / 2 + 2 * deser, abs=1)
    assert slow["ray_efficiency"] == 0.5
    assert slow["stage_seconds"]["search"] == pytest.approx(2 * (st["search"] - 2 * deser) + 2 * deser, abs=1)


def test_latest_anchor_and_its_ray_run(tmp_path):
    old = {**ANCHOR, "time": "t0", "src": 1000}
    rows = [old, {"bench": "ray_local", "workers": 1, "time": "t0", "search_seconds": 1.0}, ANCHOR,
            {"bench": "ray_local", "workers": 2, "time": "t1", "search_seconds": 60.0},
            {"bench": "ray_local", "workers": 1, "time": "t1", "search_seconds": 120.0}]
    f = tmp_path / "r.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    anchor, ray1 = latest(f)
    assert anchor["src"] == 131072 and ray1["search_seconds"] == 120.0
    f.write_text(json.dumps({"bench": "ray_local", "workers": 1}) + "\n")
    with pytest.raises(SystemExit, match="no one-machine record"):
        latest(f)
