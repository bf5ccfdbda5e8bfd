"""The training log, ``train_log.jsonl``: one JSON line per record (losses, dev figures, events)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from ..io import atomic_write


class RunLog:
    """``train_log.jsonl``: one JSON line per record, flushed at once. A resumed run keeps the lines up
    to its checkpoint's step and rewrites what came after."""

    def __init__(self, path: Path, upto: int):
        self.records: list[dict] = []
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if rec.get("step", math.inf) <= upto:
                    self.records.append(rec)
        with atomic_write(path) as f:
            f.writelines(json.dumps(r) + "\n" for r in self.records)
        self._f = open(path, "a", encoding="utf-8")

    def write(self, rec: dict) -> None:
        self.records.append(rec)
        self._f.write(json.dumps(rec) + "\n")
        self._f.flush()

    def close(self) -> None:
        self._f.close()
