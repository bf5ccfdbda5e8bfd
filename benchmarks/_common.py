"""Helpers shared by the benchmark scripts: machine description, JSON lines, peak RSS."""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import time


def machine() -> dict:
    """What the absolute figures were measured on."""
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version()}


def git_commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip() or None
    except (OSError, subprocess.CalledProcessError):
        return None


def emit(record: dict) -> None:
    """Print one JSON object per line, with the machine, commit and command."""
    record = {**record, "machine": machine(), "commit": git_commit(), "command": " ".join(sys.argv),
              "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
    print(json.dumps(record), flush=True)


def peak_rss_bytes() -> int:
    """Peak resident set size of this process so far.

    Linux's VmHWM (reset by exec, unlike getrusage's ru_maxrss, which a child
    started with fork + exec inherits from its parent).
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
