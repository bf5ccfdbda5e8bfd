"""Filtering throughput: ``filter_file`` end to end over a real bitext file, embeddings cached.

The code is in `bisent.bench.filter_speed` (one home for benchmark code, one result recorder);
this file keeps `python benchmarks/filter_speed.py [options]` working. Options: --help.
"""

from bisent.bench.filter_speed import main

if __name__ == "__main__":
    main()
