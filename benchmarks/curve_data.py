"""Nested training sets (core domain + a fixed random prefix of the rest) for the seed encoders' learning curve.

The code is in `bisent.bench.curve_data`; this file keeps `python benchmarks/curve_data.py [options]` working.
Options: --help.
"""

from bisent.bench.curve_data import main

if __name__ == "__main__":
    main()
