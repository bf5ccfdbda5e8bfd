"""The jobs: one library function per job, called by the command line and by Python alike.

Each job owns its orchestration (defaults, state folder, resume, Ray, report record), so that
``bisent JOB ...`` and ``bisent.jobs.JOB(...)`` write the same output from the same defaults. A job takes the
command's options as keyword arguments, by the names of their Python parameters (``bisent mine -o OUT`` is
``bisent.jobs.mine(SRC, TGT, src_lang=..., tgt_lang=..., output=OUT)``), with the command's defaults, and returns
the summary the command prints as JSON.

Each job's module (``bisent.jobs.mine``, ...) also holds its ``PATHS``: what it reads and writes, checked
before any work (:mod:`bisent.paths`), by the command and by the job alike.
"""

from .align import align
from .documents import documents
from .embed import embed
from .filter import filter
from .mine import DEFAULT_PRECISION, mine
from .repair import repair
from .run import run

__all__ = ["DEFAULT_PRECISION", "align", "documents", "embed", "filter", "mine", "repair", "run"]
