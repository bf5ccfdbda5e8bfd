"""Where `--index auto` switches from exact to IVF: exact and IVF mining at a few sizes.

The code is in `bisent.bench.index_choice` (one home for benchmark code, one result recorder);
this file keeps `python benchmarks/index_choice.py [options]` working. Options: --help.
"""

from bisent.bench.index_choice import main

if __name__ == "__main__":
    main()
