"""Filtering noisy bitext: rules, language id, embedding scores, the MLP similarity, selection, YAML pipelines.

    from bisent.filtering import FilterPipeline, filter_file, rank_scores
    pipe = FilterPipeline.from_yaml("filter-default", src_lang="en", tgt_lang="de")
    for res in pipe.run([("Hello there, friend.", "Hallo, mein Freund.")]):
        print(res.kept, res.reason, res.score)
    summary = filter_file("raw.tsv.gz", "kept.tsv.gz", "rejected.tsv.gz", "en", "de",
                          "filter-default", summary_path="summary.json")
    order = rank_scores(pipe, pairs)          # one number per pair for ranking (kept first)

New step types subclass :class:`Step`, implement ``score_batch`` and
``accept``, are decorated with ``@register_step("type")`` and add their module
to :data:`STEP_MODULES`. Embedding steps (``cosine``, ``csls``, ``margin``)
are in :mod:`.embedding`; Kim et al.'s MLP similarity: the network and
:func:`train_scorer` in :mod:`.mlp` (torch is imported only when it is used),
the negative strategies in :mod:`.negatives`, the ``mlp`` step in :mod:`.mlp_step`.
A configuration is read with :func:`load_config` and its encoder or embedding step
changed with :func:`edit_config` (:mod:`.config`).
"""

from ..io.rows import MAX_SIDE_BYTES, parse_row
from .config import edit_config, load_config
from .embedding import CosineStep, CSLSStep, EmbeddingStep, MarginStep
from .files import filter_file
from .langid import LanguageIdFilter, identify
from .mlp import MLPScorer, train_scorer
from .mlp_step import MLPStep
from .pipeline import (
                       STEP_MODULES,
                       STEP_TYPES,
                       Bounds,
                       FilterPipeline,
                       FilterResult,
                       Step,
                       as_pipeline,
                       background_sample,
                       check_bool,
                       check_choice,
                       check_number,
                       register_step,
                       step_types,
)
from .ranking import rank_scores
from .rules import (
                       DebrisFilter,
                       DuplicateFilter,
                       EmptyFilter,
                       LengthFilter,
                       LengthRatioFilter,
                       NormalisedDuplicateFilter,
                       NumbersFilter,
                       OverlapFilter,
                       ScriptFilter,
)
from .selection import Selection

__all__ = [
    "FilterPipeline", "FilterResult", "Step", "register_step", "step_types", "STEP_TYPES", "STEP_MODULES",
    "filter_file", "as_pipeline", "parse_row", "MAX_SIDE_BYTES", "Bounds", "Selection", "background_sample",
    "check_number", "check_choice", "check_bool", "rank_scores",
    "DuplicateFilter", "NormalisedDuplicateFilter", "EmptyFilter", "LengthFilter", "LengthRatioFilter",
    "OverlapFilter", "NumbersFilter", "DebrisFilter", "ScriptFilter", "LanguageIdFilter", "identify",
    "EmbeddingStep", "CosineStep", "CSLSStep", "MarginStep", "MLPScorer", "MLPStep", "train_scorer",
    "load_config", "edit_config",
]
