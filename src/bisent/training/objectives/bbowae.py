"""The BBoWAE baseline (Chandar et al. 2014, Eq. 1-4 of Zhang et al. 2016): trained by the same loop as Zhang 2016.

Its loss is :func:`bisent.training.objectives.zhang2016.bbowae_chunk_loss`.
"""

from .zhang2016 import train  # noqa: F401
