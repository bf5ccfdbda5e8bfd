"""Progress of long phases: a tqdm bar on a terminal, a line every few seconds otherwise.

``progress=True``: a bar; ``False``: nothing; ``None`` (the default of every
command): a bar when standard error is a terminal, else plain lines
``desc: n/total unit (rate/s, elapsed)`` every ``BISENT_PROGRESS_SECONDS``
(default 10), so a log file shows that a phase of minutes is alive. A phase
shorter than that prints nothing.
"""

from __future__ import annotations

import os
import sys
import time

from tqdm.auto import tqdm


class LineProgress:
    """The tqdm calls bisent uses (update, close, context manager, ``n``) as periodic lines on stderr."""

    def __init__(self, total=None, desc: str = "", unit: str = "it", initial: int = 0, every: float | None = None,
                 unit_scale: bool = False):
        self.total, self.desc, self.unit, self.n = total, desc, unit, initial
        self.every = every if every is not None else float(os.environ.get("BISENT_PROGRESS_SECONDS") or 10)
        self.t0 = self.last = time.monotonic()
        self.start, self.printed, self.shown = initial, False, initial

    def _line(self, now: float) -> None:
        done = f"{self.n}/{self.total}" if self.total else f"{self.n}"
        rate = (self.n - self.start) / max(now - self.t0, 1e-9)
        print(f"{self.desc}: {done} {self.unit} ({rate:.0f} {self.unit}/s, {now - self.t0:.0f}s)",
              file=sys.stderr, flush=True)
        self.last, self.printed, self.shown = now, True, self.n

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self.last >= self.every:
            self._line(now)

    def close(self) -> None:
        if self.printed and self.shown != self.n:  # the final count, unless the last line showed it
            self._line(time.monotonic())
        self.printed = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def progress_bar(progress: bool | None, **kw):
    """A tqdm bar or a :class:`LineProgress` (see the module docstring); ``kw``: total, desc, unit, initial, leave."""
    if progress is None and not sys.stderr.isatty():
        kw.pop("leave", None)
        return LineProgress(**kw)
    return tqdm(disable=not progress if progress is not None else False, **kw)
