"""Mining on Ray against one machine: wall time, blocks per second by workers, per-block cost.

The code is in `bisent.bench.ray_mine` (one home for benchmark code, one result recorder);
this file keeps `python benchmarks/ray_mine.py [options]` working. Options: --help.
"""

from bisent.bench.ray_mine import main

if __name__ == "__main__":
    main()
