"""Document matching's default threshold: each candidate rule's precision and recall on collections with
unrelated pages mixed in.

The code is in `bisent.bench.doc_threshold`; this file keeps `python benchmarks/doc_threshold.py [options]`
working. Options: --help.
"""

from bisent.bench.doc_threshold import main

if __name__ == "__main__":
    main()
