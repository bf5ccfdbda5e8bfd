"""Sentence alignment inside documents: monotone many-to-many DP over overlap embeddings (vecalign-style),
coarse to fine for long documents, with Gale & Church's length model as the floor.

- :mod:`.dp`: the DP engine (exact, banded, coarse to fine);
- :mod:`.costs`: vecalign's normalised embedding cost, Gale-Church's length cost;
- :mod:`.store`: vectors of long documents made or read window by window (a temporary file, not memory);
- :mod:`.aligner`: :class:`SentenceAligner` (sentences in, blocks out);
- :mod:`.files`: documents and alignment files, strict / lax P/R/F1.
"""

from ..io import format_block
from .aligner import GALE_CHURCH, AlignResult, Block, SentenceAligner, group_texts
from .costs import EmbeddingCosts, GaleChurchCosts
from .dp import Band, align_costs, alignment_types, dp_band, project_band
from .files import AlignScores, Document, line_blocks, read_alignment, read_document, score_alignments

__all__ = ["SentenceAligner", "Block", "AlignResult", "GALE_CHURCH", "group_texts", "EmbeddingCosts",
           "GaleChurchCosts", "Band", "align_costs", "alignment_types", "dp_band", "project_band", "AlignScores",
           "Document", "format_block", "line_blocks", "read_alignment", "read_document", "score_alignments"]
