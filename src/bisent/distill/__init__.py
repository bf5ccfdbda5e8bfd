"""Distilling a student on the user's own text: the sample (:mod:`.sample`) and its quality without gold
(:mod:`.quality`); the job is :func:`bisent.jobs.distill.distill`."""
