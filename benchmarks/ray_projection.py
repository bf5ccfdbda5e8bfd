"""The compressed search at TO × TO on N nodes, projected from the per-shard costs `ray_compressed.py` measured.

A projection, not a measurement: it reads the latest anchor record of ``mine_ray_compressed.jsonl`` (one machine,
one thread, with its ``shard_costs``) and, when present, the 1-worker Ray record of the same run, and prints one
JSON line per node count. Every measured figure is one thread's; the parameters at TO are
:func:`bisent.mining.compressed.compressed_params` of TO rows (whatever its current rule).

The plan as built: the driver fits the projection, trains the lists, builds both indexes, calibrates the probes
and merges; the query shards (:data:`~bisent.mining.compressed.BLOCK` rows) are Ray tasks, each deserialising the
index it searches. The assumptions, each a term of the sum:

- ``projection``: fitted on a fixed sample: the measured seconds, whatever the size;
- ``train_lists``: k-means of ``TRAIN_PER_LIST × nlist`` points against ``nlist`` centroids: × (nlist_TO /
  nlist_measured)²;
- ``index`` (both sides): per row as measured (projection, coarse assignment, encoding), × rows; the coarse
  assignment of an HNSW quantiser over nlist_TO lists taken as no dearer than the measured one's;
- ``calibrate``: exact lists of a fixed sample of queries and the exact neighbourhoods of their candidates, each a
  scan of the other side: × TO / rows measured (the probe ladder's steps as measured);
- ``search`` (the tasks): per query, the codes scanned in ``nprobe`` lists of TO / nlist_TO rows against the
  measured lists of rows / nlist_measured (the same probes, the same cost per code whether SQ8 or PQ), the
  re-ranking of k + extra candidates per query as measured (the indexed side's pages in memory or on local disk),
  spread evenly over N nodes × C one-thread workers, slowed by the Ray efficiency measured at 1 worker (one
  machine's search seconds / Ray's); plus each worker deserialising each direction's index once at the measured
  bytes per second (a worker holds one index: ``index_gib_at_to`` of memory);
- the shard costs in CPU seconds (the anchor's, or its wall seconds times the CPU share of the 1-worker Ray
  tasks), the driver's stages in the wall seconds measured (inflated on a loaded machine);
- ``merge``: placing the lists, margins and retrieval in the driver: × TO / rows measured;
- the driver's stages at ``--driver-threads`` threads, taken to scale linearly (FAISS's k-means, the BLAS of the
  exact calibration: optimistic), reading the vectors from disk not counted.

Usage: python benchmarks/ray_projection.py [--to 100000000] [--nodes 1,4,16,64] [--cores 16] [--driver-threads 16]
    [--records benchmarks/results/mine_ray_compressed.jsonl] [--results benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bisent.bench.common import Recorder, add_results_option


def latest(records: Path) -> tuple[dict, dict | None]:
    """The latest one-machine record with shard costs, and the 1-worker Ray record of the same run (or None)."""
    rows = [json.loads(line) for line in records.read_text(encoding="utf-8").splitlines() if line.strip()]
    anchors = [i for i, r in enumerate(rows) if r.get("bench") == "one_machine" and r.get("shard_costs")]
    if not anchors:
        raise SystemExit(f"{records}: no one-machine record with shard_costs; run benchmarks/ray_compressed.py first")
    i = anchors[-1]
    anchor = rows[i]
    ray1 = next((r for r in rows[i + 1:] if r.get("bench") == "ray_local" and r.get("workers") == 1
                 and r.get("time") == anchor.get("time")), None)
    return anchor, ray1


def _code_bytes(codes: str, dim: int) -> int:
    return dim if codes == "sq8" else int(codes[2:])


def project(anchor: dict, ray1: dict | None, to: int, nodes: int, cores: int, driver_threads: int,
            dim: int = 512, cpu: bool = True) -> dict:
    """Seconds of each stage at ``to`` × ``to`` (see the module's assumptions)."""
    from bisent.mining.compressed import BLOCK, compressed_params

    n = anchor["src"]
    st, sc, pm = anchor["stages"], anchor["shard_costs"], anchor["params"]
    big = compressed_params(to, anchor.get("dim") or dim)
    grow = to / n
    # CPU seconds where measured: a loaded machine's wall time is inflated. An anchor without them: its wall times
    # scaled by the CPU share of the 1-worker Ray tasks (their CPU seconds over as many anchor shards' wall seconds)
    clock, scale = "seconds", 1.0
    if cpu and "shard_codes_cpu_seconds" in sc:
        clock = "cpu_seconds"
    elif cpu and ray1 and ray1.get("task_cpu_seconds") and ray1.get("tasks"):
        wall = sc["shard_codes_seconds"] + sc["shard_rerank_seconds"]
        scale = min(1.0, ray1["task_cpu_seconds"] / ray1["tasks"] / wall)
    per_query_codes = sc[f"shard_codes_{clock}"] / sc["shard_rows"] * scale
    list_growth = (to / big.nlist) / (sc["shard_indexed_rows"] / pm["nlist"])
    per_query_rerank = sc[f"shard_rerank_{clock}"] / sc["shard_rows"] * scale
    index_bytes_to = sc["index_bytes"] / sc["shard_indexed_rows"] * to * \
        (8 + _code_bytes(big.codes, big.dim)) / (8 + _code_bytes(pm["codes"], pm["dim"]))   # 8: a row's id
    deser_per_task = sc["index_deserialise_seconds"] / sc["index_bytes"] * index_bytes_to
    tasks = 2 * -(-to // BLOCK)
    efficiency = 1.0
    if ray1 and ray1.get("search_seconds") and anchor.get("search_seconds"):
        efficiency = min(1.0, anchor["search_seconds"] / ray1["search_seconds"])
    workers = nodes * cores
    search = 2 * to * (per_query_codes * list_growth + per_query_rerank) / workers / efficiency + 2 * deser_per_task
    driver = {
        "projection": st.get("projection", 0),
        "train_lists": sum(v for key, v in st.items() if key.startswith("train_lists"))
        * (big.nlist / pm["nlist"]) ** 2,
        "index": (st.get("index_tgt", 0) + st.get("index_src", 0)) * grow,
        "calibrate": (st.get("calibrate_fwd", 0) + st.get("calibrate_bwd", 0)) * grow,
        "merge": anchor.get("score_seconds", 0) * grow,
    }
    driver = {key: v / driver_threads for key, v in driver.items()}
    total = sum(driver.values()) + search
    return {"src": to, "tgt": to, "to": f"{to}x{to}", "nodes": nodes, "workers_per_node": cores,
            "driver_threads": driver_threads, "shard_clock": clock, "shard_cpu_scale": round(scale, 3),
            "projection": True, "measured_at": f"{n}x{n}", "measured_time": anchor.get("time"),
            "params_at_to": big.__dict__, "measured_params": pm,
            "nprobe_assumed": [anchor.get("nprobe_fwd"), anchor.get("nprobe_bwd")],
            "tasks": tasks, "index_gib_at_to": round(index_bytes_to / 2**30, 1),
            "deserialise_seconds_per_worker_and_direction": round(deser_per_task, 1),
            "ray_efficiency": round(efficiency, 3),
            "stage_seconds": {**{key: round(v) for key, v in driver.items()}, "search": round(search)},
            "serial_seconds": round(sum(driver.values())), "mine_seconds": round(total),
            "mine_hours": round(total / 3600, 2),
            "rerank_reads": 2 * to * (4 + big.extra),
            "driver_lists_gib": round(2 * to * 4 * 12 / 2**30, 1),
            "mined_pair_agreement_measured": anchor.get("mined_pair_agreement"),
            "measured_load_average": anchor.get("load_avg_1min_before")}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", default="benchmarks/results/mine_ray_compressed.jsonl")
    ap.add_argument("--to", type=int, default=100_000_000, help="rows a side")
    ap.add_argument("--nodes", default="1,4,16,64")
    ap.add_argument("--cores", type=int, default=16, help="one-thread workers a node")
    ap.add_argument("--driver-threads", type=int, default=16)
    ap.add_argument("--wall", action="store_true", help="the shard costs' wall seconds, not CPU seconds")
    ap.add_argument("--dim", type=int, default=512, help="the vectors' dimension, where the record does not say it")
    add_results_option(ap)
    args = ap.parse_args(argv)
    anchor, ray1 = latest(Path(args.records))
    record = Recorder("mine_ray_projection", args.results or None, echo=lambda line: print(line, flush=True))
    for nodes in map(int, args.nodes.split(",")):
        record({"bench": "mine_projection", **project(anchor, ray1, args.to, nodes, args.cores, args.driver_threads,
                                                              args.dim, not args.wall)})


if __name__ == "__main__":
    main()
