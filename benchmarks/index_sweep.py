"""IVF against exact kNN on real embeddings: top-1 agreement and cost by lists and probes.

The code is in `bisent.bench.index_sweep`; this file keeps `python benchmarks/index_sweep.py [options]`
working. Options: --help.
"""

from bisent.bench.index_sweep import main

if __name__ == "__main__":
    main()
