"""Peak memory of ``bisent mine`` on real text: two files of up to 100k distinct sentences a side.

The code is in `bisent.bench.mine_memory` (one home for benchmark code, one result recorder);
this file keeps `python benchmarks/mine_memory.py [options]` working. Options: --help.
"""

from bisent.bench.mine_memory import main

if __name__ == "__main__":
    main()
