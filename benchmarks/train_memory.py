"""Peak memory of ``bisent train``: a recipe run for a few steps in a fresh process, its own peak RSS.

The run (the ``bisent train`` arguments after ``--``; ``-o`` is a temporary folder) goes to its first
checkpoint and model directory, which is where the peak was: the state (weights and optimiser moments,
the size of ``checkpoint.safetensors``) is resident the whole run, and writing it once held about two
copies more. The budget is half this machine's memory: two runs side by side, as the general student's
seeds are trained. One JSON line per run.

Usage: python benchmarks/train_memory.py [--steps 1] -- -c R --train ... --mono ... --dev ... [--set ...]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from bisent.bench.common import Recorder, add_results_option
from mine_memory import run_measured


def _mem_total() -> int:
    with open("/proc/meminfo") as f:
        return int(next(line for line in f if line.startswith("MemTotal:")).split()[1]) * 1024


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    ours, train_args = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=1, help="training steps (the checkpoint and model follow them)")
    add_results_option(ap)
    args = ap.parse_args(ours)
    if not train_args or any(a in ("-o", "--out") or a.startswith("--out=") for a in train_args):
        raise SystemExit("give the bisent train arguments after --, without -o (a temporary folder is used)")
    record = Recorder("train_memory", args.results or None, echo=lambda line: print(line, flush=True))
    with tempfile.TemporaryDirectory(prefix="bisent-train-memory-") as tmp:
        out = Path(tmp, "run")
        cli = ["train", *train_args, "--set", f"train.max_steps={args.steps}", "-o", str(out)]
        code = f"from bisent.cli import main\nsys.exit(main({cli!r}))\n"            # what `bisent train ...` runs
        t = time.perf_counter()
        rc, peak = run_measured(code, dict(os.environ), Path(tmp, "stderr.txt"))
        seconds = round(time.perf_counter() - t, 1)
        size = {name: round(Path(out, name).stat().st_size / 2**20, 1) if Path(out, name).is_file() else None
                for name in ("checkpoint.safetensors", "model.safetensors")}
        budget = _mem_total() / 2
        named = [Path(a).name if os.path.exists(a) else a for a in train_args]       # files by name, not path
        record({"bench": "train_memory", "args": named, "steps": args.steps, "exit": rc,
                "peak_rss_mb": round(peak / 2**20, 1), "checkpoint_mb": size["checkpoint.safetensors"],
                "model_mb": size["model.safetensors"], "budget_mb": round(budget / 2**20, 1),
                "within_budget": bool(rc == 0 and peak <= budget), "seconds": seconds})


if __name__ == "__main__":
    main()
