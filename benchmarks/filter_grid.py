"""Candidate bounds of `filter-default` on the clean published sets and the noise mix of a split.

Every step's value is computed once for every pair (`bisent.bench.filter_clean.step_values`); each candidate
(the product of `GRID`) is then decided from them. One JSON line per candidate: clean pairs rejected per
domain and noise pairs kept per kind, as counts. `choose FILE` prints the candidate the rule of
benchmarks/README.md picks; `yield` the current default with its length ratio yielding to word coverage
(`YIELDS`); `two` the length ratio and the `leave_out` step asking for two signals before rejecting
(`TWO_SIGNALS`). The code is in `benchmarks/filter_clean.py`.

Usage: python benchmarks/filter_grid.py --split dev -o grid-dev.jsonl
       python benchmarks/filter_grid.py choose grid-dev.jsonl
       python benchmarks/filter_grid.py yield --split dev --values values-dev.json
       python benchmarks/filter_grid.py two --split dev --values values-two-dev.json
"""

import sys

from filter_clean import choose_main, grid_main, two_signals_main, yield_main

if __name__ == "__main__":
    if sys.argv[1:2] == ["choose"]:
        choose_main(sys.argv[2:])
    elif sys.argv[1:2] == ["yield"]:
        yield_main(sys.argv[2:])
    elif sys.argv[1:2] == ["two"]:
        two_signals_main(sys.argv[2:])
    else:
        grid_main()
