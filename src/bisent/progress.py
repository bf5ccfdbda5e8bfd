"""Progress of long phases: a tqdm bar on a terminal, a line every few seconds otherwise.

``progress=True``: a bar; ``False``: nothing; ``None`` (the default of every
command): a bar when standard error is a terminal, else plain lines
``desc: n/total unit (rate/s, elapsed)`` every ``BISENT_PROGRESS_SECONDS``
(default 10), so a log file shows that a phase of minutes is alive. A phase
shorter than that prints nothing. Every bar of bisent comes from :func:`progress_bar`
and every message printed beside one from :func:`note`, so no ``\\r`` reaches a log file.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time

from tqdm.auto import tqdm


class LineProgress:
    """The tqdm calls bisent uses (iteration, update, set_postfix, close, context manager, ``n``) as periodic
    lines on stderr."""

    def __init__(self, iterable=None, total=None, desc: str = "", unit: str = "it", initial: int = 0,
                 every: float | None = None, unit_scale: bool = False):
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)
        self.iterable, self.total, self.desc, self.unit, self.n = iterable, total, desc, unit, initial
        self.postfix = ""
        self.every = every if every is not None else float(os.environ.get("BISENT_PROGRESS_SECONDS") or 10)
        self.t0 = self.last = time.monotonic()
        self.start, self.printed, self.shown = initial, False, initial

    def _line(self, now: float) -> None:
        done = f"{self.n}/{self.total}" if self.total else f"{self.n}"
        rate = (self.n - self.start) / max(now - self.t0, 1e-9)
        rate_s = f"{rate:.0f}" if rate >= 10 else f"{rate:.2g}"
        print(f"{self.desc}: {done} {self.unit} ({rate_s} {self.unit}/s, {now - self.t0:.0f}s){self.postfix}",
              file=sys.stderr, flush=True)
        self.last, self.printed, self.shown = now, True, self.n

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self.last >= self.every:
            self._line(now)

    def __iter__(self):
        for item in self.iterable:
            yield item
            self.update(1)
        self.close()

    def set_postfix(self, **fields) -> None:
        """Fields shown at the end of the next line, as tqdm shows them after its bar."""
        self.postfix = "".join(f", {k}={v}" for k, v in fields.items())

    def close(self) -> None:
        if self.printed and self.shown != self.n:  # the final count, unless the last line showed it
            self._line(time.monotonic())
        self.printed = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def progress_bar(progress: bool | None, iterable=None, **kw):
    """A tqdm bar or a :class:`LineProgress` (see the module docstring) over ``iterable`` if given;
    ``kw``: total, desc, unit, initial, leave, unit_scale."""
    if progress is None and not sys.stderr.isatty():
        kw.pop("leave", None)
        return LineProgress(iterable, **kw)
    return tqdm(iterable, disable=not progress if progress is not None else False, file=sys.stderr, **kw)


def note(message: str) -> None:
    """Print one message on stderr without breaking a bar that is showing (tqdm.write's way)."""
    tqdm.write(message, file=sys.stderr)


@contextlib.contextmanager
def heartbeat(desc: str, every: float | None = None):
    """A phase with no count to show (a download by another program): its start on stderr, then, off a terminal,
    ``desc: still running (Ns)`` every ``BISENT_PROGRESS_SECONDS``, so a log shows it is alive; its end with
    the time taken."""
    every = every if every is not None else float(os.environ.get("BISENT_PROGRESS_SECONDS") or 10)
    t0 = time.monotonic()
    note(f"{desc} ...")
    stop = threading.Event()

    def beat():
        while not stop.wait(every):
            print(f"{desc}: still running ({time.monotonic() - t0:.0f}s)", file=sys.stderr, flush=True)

    thread = None
    if not sys.stderr.isatty():
        thread = threading.Thread(target=beat, daemon=True)
        thread.start()
    try:
        yield
    finally:
        stop.set()
        if thread is not None:
            thread.join()
    note(f"{desc}: done ({time.monotonic() - t0:.0f}s)")
