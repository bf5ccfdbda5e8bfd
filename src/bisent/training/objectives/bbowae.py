"""The BBoWAE baseline (Chandar et al. 2014, Eq. 1-4 of Zhang et al. 2016): trained by the same loop as Zhang 2016.

Its loss is :func:`bisent.training.objectives.zhang2016.bbowae_chunk_loss`.
"""

from ...models.keys import NUM, Field
from .zhang2016 import OWN_STEP, WORD_AE_SECTIONS, setup  # noqa: F401

#: the sections of its recipes besides the model's (models/zhang2016.py)
RECIPE_SECTIONS = {**WORD_AE_SECTIONS, "objectives": {
    "beta": Field(1.0, NUM, minimum=0), "lambda_cor": Field(4.0, NUM, minimum=0),
    "block": Field(100, int, minimum=2)}}  # pairs per correlation estimate
