"""Candidate bounds of `filter-default` on the clean published sets and the noise mix of a split.

Every step's value is computed once for every pair (`bisent.bench.filter_clean.step_values`); each candidate
(the product of `GRID`) is then decided from them. One JSON line per candidate: clean pairs rejected per
domain and noise pairs kept per kind, as counts. The code is in `bisent.bench.filter_clean`.

Usage: python benchmarks/filter_grid.py --split dev -o grid-dev.jsonl
"""

from bisent.bench.filter_clean import grid_main

if __name__ == "__main__":
    grid_main()
