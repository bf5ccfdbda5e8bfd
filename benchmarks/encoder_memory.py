"""Memory of a loaded encoder (peak while loading, held after), each in a fresh process.

The code is in `bisent.bench.encoder_memory` (one home for benchmark code, one result recorder);
this file keeps `python benchmarks/encoder_memory.py [options]` working. Options: --help.
"""

from bisent.bench.encoder_memory import main

if __name__ == "__main__":
    main()
