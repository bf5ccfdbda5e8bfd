"""How far encoders are from use-m3 on every recovery set, and which gaps the sets can tell apart.

The code is in `bisent.bench.gaps`; `python benchmarks/gaps.py -e ENCODER [--list]`. Options: --help.
"""

from bisent.bench.gaps import main

if __name__ == "__main__":
    main()
