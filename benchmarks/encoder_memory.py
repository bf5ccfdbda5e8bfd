"""Memory of a loaded encoder: each in a fresh process, its peak RSS while loading and what it holds after.

A process imports bisent, loads the encoder (``get_encoder``: a registered name, a model directory or
an ensemble) and embeds two sentences; its own peak RSS (VmHWM) and resident set after (VmRSS) are
recorded beside the same figures of a process that only imports bisent and torch (``baseline``), and
the size of the weights on disk (every ``model.safetensors`` under a model directory). Why: a hashed
student's int8 table read back as float32 held four times its file, so an ensemble of seven held
7.4 GB. One JSON line per encoder; use-m3 is the anchor unless ``--no-anchors``.

Usage: python benchmarks/encoder_memory.py -e MODEL_DIR [-e ...] [--no-anchors]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from bisent.bench.common import Recorder, add_results_option
from bisent.encoders import resolve
from bisent.errors import BisentError
from mine_memory import run_measured

ANCHORS = ("use-m3",)

#: appended to a measured process: its resident set once the encoder is loaded and has embedded
_HELD = ("with open('/proc/self/status') as f:\n"
         "    sys.stderr.write('\\nheld_kb ' + next(l for l in f if l.startswith('VmRSS:')).split()[1] + '\\n')\n")


def weights_mb(name: str) -> float | None:
    """MB of the weights a model directory loads (``model.safetensors``, its ensemble members' too; not a training
    checkpoint beside them); None for a registered name."""
    p = Path(name)
    return round(sum(f.stat().st_size for f in p.rglob("model.safetensors")) / 2**20, 1) if p.is_dir() else None


def measure(code: str, env: dict, log: Path) -> dict:
    """``{"exit", "peak_rss_mb", "held_rss_mb", "seconds"}`` of ``code`` in a fresh process."""
    t = time.perf_counter()
    rc, peak = run_measured(code, env, log)
    held = [int(line.split()[1]) for line in log.read_text(encoding="utf-8", errors="replace").splitlines()
            if line.startswith("held_kb ")]
    return {"exit": rc, "peak_rss_mb": round(peak / 2**20, 1),
            "held_rss_mb": round(held[-1] / 1024, 1) if held else None, "seconds": round(time.perf_counter() - t, 1)}


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-e", "--encoder", action="append", default=[], help="registered name or model directory")
    ap.add_argument("--no-anchors", action="store_true", help=f"leave out {', '.join(ANCHORS)}")
    add_results_option(ap)
    args = ap.parse_args(argv)
    names = list(dict.fromkeys(([] if args.no_anchors else list(ANCHORS)) + args.encoder))
    if not names:
        raise SystemExit("no encoder to measure: give -e NAME (or leave out --no-anchors)")
    try:
        for name in names:                                # every name known before anything runs or is recorded
            resolve(name)
    except BisentError as e:
        raise SystemExit(f"bisent: error: {e}") from None
    record = Recorder("encoder_memory", args.results or None, echo=lambda line: print(line, flush=True))
    out = []
    with tempfile.TemporaryDirectory(prefix="bisent-encoder-memory-") as tmp:
        log, env = Path(tmp, "stderr.txt"), dict(os.environ)
        base = measure("import sys, torch, bisent.encoders\n" + _HELD, env, log)
        for name in names:
            code = ("import sys\nfrom bisent.encoders import get_encoder\nfrom bisent.errors import BisentError\n"
                    f"try:\n    enc = get_encoder({name!r})\n"
                    "except BisentError as e:\n    sys.exit(f'bisent: error: {e}')\n"     # one line, exit 1, recorded
                    "enc.encode(['Save the current file', 'Die aktuelle Datei speichern'], 'en', cache=False, "
                    "progress=False)\n" + _HELD)
            res = measure(code, env, log)
            out.append(record({"bench": "encoder_memory", "encoder": Path(name).name if os.path.isdir(name) else name,
                               "weights_mb": weights_mb(name), **res, "baseline_peak_rss_mb": base["peak_rss_mb"],
                               "baseline_held_rss_mb": base["held_rss_mb"]}))
    return out


if __name__ == "__main__":
    main()
