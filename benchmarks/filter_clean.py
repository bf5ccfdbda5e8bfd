"""Clean published pairs through a filter recipe: the share rejected, per domain and per step.

The code is in `bisent.bench.filter_clean`; this file keeps `python benchmarks/filter_clean.py [options]`
working. Options: --help.
"""

from bisent.bench.filter_clean import main

if __name__ == "__main__":
    main()
