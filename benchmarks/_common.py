"""Helpers shared by the benchmark scripts: JSON lines with machine, commit and command."""

from __future__ import annotations

import json
import sys
import time

from bisent.bench.common import git_commit, machine, peak_rss_mb


def emit(record: dict) -> None:
    """Print one JSON object per line, with the machine, commit and command."""
    record = {**record, "machine": machine(), "commit": git_commit(), "command": " ".join(sys.argv),
              "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
    print(json.dumps(record), flush=True)


def peak_rss_bytes() -> int:
    """Peak resident set size of this process so far (VmHWM, which exec resets)."""
    return int(peak_rss_mb() * 2**20)
