"""One optimiser step on the DAN's hashed table: RowAdam against torch's SparseAdam.

The code is in `bisent.bench.table_optimiser` (one home for benchmark code, one result recorder);
this file keeps `python benchmarks/table_optimiser.py [options]` working. Options: --help.
"""

from bisent.bench.table_optimiser import main

if __name__ == "__main__":
    main()
