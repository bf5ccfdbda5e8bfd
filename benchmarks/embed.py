"""Embedding speed: sentences/s of every registered encoder on the same 2,000 real sentences.

The code is in `bisent.bench.embed` (one home for benchmark code, one result recorder);
this file keeps `python benchmarks/embed.py [options]` working. Options: --help.
"""

from bisent.bench.embed import main

if __name__ == "__main__":
    main()
