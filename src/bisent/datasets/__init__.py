"""Benchmark data built at run time from Debian packages (nothing copied into the repository).

- :mod:`.debian`: fetch and unpack a package into the cache (``apt-get download`` + ``dpkg -x``).
- :mod:`.libreoffice`: exactly aligned paragraphs and documents of LibreOffice help, any two languages.
- :mod:`.comparable`: a BUCC-like mining task (mostly unpaired sentences, some gold pairs) from those pairs.
- :mod:`.gettext`, :mod:`.freedict`: out-of-domain pairs (UI messages of Debian packages, dictionary phrases);
  :mod:`.domains` picks a domain's pairs for the benchmarks, :mod:`.pairset` holds what those builders share.
"""

from .comparable import MiningTask, make_mining_task, write_bucc
from .debian import fetch_package
from .libreoffice import Document, Pair, Paragraph, load_documents, load_pairs, write_dataset

__all__ = ["Document", "MiningTask", "Pair", "Paragraph", "fetch_package", "load_documents",
           "load_pairs", "make_mining_task", "write_bucc", "write_dataset"]
