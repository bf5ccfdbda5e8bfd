"""Word-level translation divergence (Pham, Crego et al.): words, negative examples, repair, the scoring API.

The model (:mod:`bisent.models.divergence`) gives every word of a pair an
aggregated alignment score (Eq. 2); a negative score means "this word has no
counterpart on the other side". Its objective is
:mod:`bisent.training.objectives.divergence`. This package holds everything
around it that needs no torch:

- :mod:`.tokens`: the paper's minimal tokenisation (:func:`~.tokens.tokenize`,
  punctuation split off, with character offsets so that a cut keeps the
  original text) and the length-ratio constraint (:func:`~.tokens.ratio_ok`);
- :mod:`.negatives`: the labelled examples of section 3.1, each with its word
  labels (-1 parallel, +1 divergent): :func:`~.negatives.unpaired`,
  :func:`~.negatives.replace`, :func:`~.negatives.insert`, drawn by
  :class:`~.negatives.NegativeSampler`;
- :mod:`.wordclasses`: the word classes that ``replace`` swaps within
  (:class:`~.wordclasses.WordClasses`: k-means clusters of PPMI-SVD word
  vectors learned from the corpus; no POS tagger with its model inside a PyPI
  wheel was found);
- :mod:`.aligner`: the Dice aligner that marks the words aligned to a replaced
  span (:class:`~.aligner.DiceAligner`);
- :mod:`.testset`: the deterministic P/U/R/I word-labelled test set
  (:func:`~.testset.word_test_set`) and its word accuracy;
- :mod:`.cuts`: the repair of section 3.2 on one score matrix
  (:func:`~.cuts.best_cuts`: the leading/trailing cuts of both sides that
  maximise the aligned score, N-best);
- :mod:`.scores`, :mod:`.repair`, :mod:`.files`: the API under ``bisent divergence``
  and ``bisent repair`` (:func:`~.scores.score_pair`, :func:`~.repair.repair_pair`,
  :func:`~.files.read_pairs`).

The names below are re-exported, so ``from bisent import divergence; divergence.repair_pair(...)`` works.
"""

from .aligner import DiceAligner
from .cuts import Cut, best_cuts, cut_score, edge_costs, ends_sentence, pair_aggregates, sentence_boundaries
from .files import read_pairs
from .negatives import KINDS, ClassIndex, Example, NegativeSampler, insert, paired, replace, unpaired
from .repair import BOUNDARY_COST, MIN_WORD_GAIN, STEP_DEFAULTS, TAU, Repair, repair_pair
from .scores import check_pair, parallel_share, score_pair, sentence_similarity
from .testset import doc_seed, word_accuracy, word_test_set
from .tokens import MAX_WORDS, Words, cut_text, ratio_ok, tokenize
from .wordclasses import WordClasses

__all__ = ["BOUNDARY_COST", "KINDS", "MAX_WORDS", "MIN_WORD_GAIN", "STEP_DEFAULTS", "TAU", "ClassIndex", "Cut",
           "DiceAligner", "Example", "NegativeSampler", "Repair", "WordClasses", "Words", "best_cuts", "check_pair",
           "cut_score", "cut_text", "doc_seed", "edge_costs", "ends_sentence", "insert", "pair_aggregates", "paired",
           "parallel_share", "ratio_ok", "read_pairs", "repair_pair", "replace", "score_pair", "sentence_boundaries",
           "sentence_similarity", "tokenize", "unpaired", "word_accuracy", "word_test_set"]
