"""A DAN student's size against its quality: float16 storage and fewer hash buckets (folded tables).

The code is in `bisent.bench.student_size` (one home for benchmark code, one result recorder);
this file keeps `python benchmarks/student_size.py [options]` working. Options: --help.
"""

from bisent.bench.student_size import main

if __name__ == "__main__":
    main()
