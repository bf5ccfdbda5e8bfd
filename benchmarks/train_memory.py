"""Peak memory of ``bisent train`` (a recipe run to its first checkpoint) against half the machine's memory.

The code is in `bisent.bench.train_memory` (one home for benchmark code, one result recorder);
this file keeps `python benchmarks/train_memory.py [options] -- TRAIN_ARGS` working. Options: --help.
"""

from bisent.bench.train_memory import main

if __name__ == "__main__":
    main()
