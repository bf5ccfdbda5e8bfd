"""Modules for bisent's trained encoders.

Importing this package registers every architecture with
:func:`bisent.encoders.trained.register_architecture`, so
``bisent.encoders.get_encoder(model_dir)`` can load them (the loader imports
this package lazily). The DAN and the adapter run in NumPy and load without
torch; the others (and all training) need torch.
"""

from . import (  # noqa: F401  register "adapter" and "dan" (NumPy, no torch)
    adapter,
    dan,
    ensemble,  # noqa: F401  register "ensemble" (the mean of its members)
    zhang2016,  # noqa: F401  register "zhang2016" and "bbowae" (NumPy, no torch)
)

try:
    import torch  # noqa: F401
except ModuleNotFoundError as e:  # inference-only install: the NumPy encoders above still load
    if e.name != "torch":
        raise
else:
    from . import (  # noqa: F401  register "kim2019", "artetxe2019", "hash-transformer", "bilstm"
        divergence,  # noqa: F401  register "divergence"
        dual,
        rnn,
    )
    from .dual import DUAL_MODELS, build_dual, load_dual, save_dual
    from .rnn import Artetxe2019, Kim2019, Seq2SeqEncoder, build_model

__all__ = ["Kim2019", "Artetxe2019", "Seq2SeqEncoder", "build_model", "DUAL_MODELS", "build_dual", "load_dual",
           "save_dual"]
