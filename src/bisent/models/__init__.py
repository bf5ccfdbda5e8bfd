"""Torch modules for bisent's trained encoders.

Importing this package registers every architecture with
:func:`bisent.encoders.trained.register_architecture`, so
``bisent.encoders.get_encoder(model_dir)`` can load them (the loader imports
this package lazily, because it needs torch).
"""

from . import rnn  # noqa: F401  registers "kim2019" and "artetxe2019"
from .rnn import Artetxe2019, Kim2019, Seq2SeqEncoder, build_model

__all__ = ["Kim2019", "Artetxe2019", "Seq2SeqEncoder", "build_model"]
