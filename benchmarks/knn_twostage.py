"""Two-stage kNN (reduced-space scan, exact re-scoring) against exact kNN on real embeddings.

The code is in `bisent.bench.knn_twostage`; this file keeps `python benchmarks/knn_twostage.py [options]`
working. Options: --help.
"""

from bisent.bench.knn_twostage import main

if __name__ == "__main__":
    main()
