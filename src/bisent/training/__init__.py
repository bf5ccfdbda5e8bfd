"""Training bisent's own encoders: a recipe (YAML), data streams, one loop, one loss file per paper.

``bisent.training.loop.train(recipe, parallel, mono, dev, out_dir)`` writes a
model directory (``config.json``, ``model.safetensors``, ``tokenizer.model``)
that :func:`bisent.encoders.get_encoder` loads. Needs torch (``pip install bisent[train]``).
"""
