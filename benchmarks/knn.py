"""kNN benchmark: blocked exact search against a plain sgemm of the same shapes, peak RSS, approximate search.

The code is in `bisent.bench.knn` (one home for benchmark code, one result recorder);
this file keeps `python benchmarks/knn.py [options]` working. Options: --help.
"""

from bisent.bench.knn import main

if __name__ == "__main__":
    main()
