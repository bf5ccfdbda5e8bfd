"""Recovery error by how often a training collection shows each test item's words (where a student's gap lies).

The code is in `bisent.bench.word_coverage`; `python benchmarks/word_coverage.py --collection DIR --pair en-XX -e use-m3
-e MODEL [--examples]`. Options: --help.
"""

from bisent.bench.word_coverage import main

if __name__ == "__main__":
    main()
