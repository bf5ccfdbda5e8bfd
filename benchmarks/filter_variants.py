"""Filter recipes side by side on the noisy LibreOffice set: clean kept against each noise kind kept, AP.

The code is in `bisent.bench.filter_variants`; this file keeps `python benchmarks/filter_variants.py [options]`
working. Options: --help.
"""

from bisent.bench.filter_variants import main

if __name__ == "__main__":
    main()
