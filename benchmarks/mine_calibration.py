"""Mining threshold calibration against gold over many tasks (overlap, size, domain, script, encoder).

The code is in `bisent.bench.mine_calibration` (one home for benchmark code, one result recorder);
this file keeps `python benchmarks/mine_calibration.py [options]` working. Options: --help.
"""

from bisent.bench.mine_calibration import main

if __name__ == "__main__":
    main()
