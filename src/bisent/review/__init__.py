"""Check a run's pairs by eye, and let the labels set the threshold.

    bisent review mined.tsv                      # serve the page; labels go to mined.tsv.review.jsonl
    bisent review mined.tsv --summary            # measured precision per band beside the no-gold estimate
    bisent review mined.tsv --apply 0.95 -o cut.tsv

- :mod:`.scored_run`: the scored pairs of a ``mine``, ``filter``, ``documents mine``, ``align`` or ``run`` output,
  and the output re-cut at a threshold;
- :mod:`.sample`: the sample, stratified by score band, seeded;
- :mod:`.labels`: the append-only label log, Wilson intervals, the threshold the labels give;
- :mod:`.session`: one review (sample + log + summary); :mod:`.server`: the page on 127.0.0.1.
"""

from .labels import labelled_pairs, read_log, wilson
from .sample import band_size, draw
from .scored_run import ReviewRun, load_run
from .session import Review, open_review

__all__ = ["Review", "ReviewRun", "band_size", "draw", "labelled_pairs", "load_run", "open_review", "read_log",
           "wilson"]
