"""Scale benchmark: `bisent data scale` → `bisent embed` → `bisent mine` exact and IVF; per-stage time and RSS.

The code is in `bisent.bench.scale` (one home for benchmark code, one result recorder);
this file keeps `python benchmarks/scale.py [options]` working. Options: --help.
"""

from bisent.bench.scale import main

if __name__ == "__main__":
    main()
