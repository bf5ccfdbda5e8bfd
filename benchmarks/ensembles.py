"""Recovery errors of ensembles of trained students from each member's cached embeddings, beside use-m3.

The code is in `bisent.bench.ensembles`; `python benchmarks/ensembles.py --out FILE NAME=DIR[,DIR...] ...`, then
`python benchmarks/gaps.py --results FILE -e NAME`. Options: --help.
"""

from bisent.bench.ensembles import main

if __name__ == "__main__":
    main()
