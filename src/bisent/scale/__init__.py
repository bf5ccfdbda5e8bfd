"""Mining beyond one pass on one machine.

- :mod:`bisent.scale.ray_mine`: the block jobs of :mod:`bisent.mining.blocks` as Ray tasks (``bisent mine --ray``);
- :mod:`bisent.scale.ray_embed`: shards encoded by one encoder actor per worker (``bisent embed --ray``);
- :mod:`bisent.scale.ray_session`: the Ray session (``pip install bisent[ray]``; Ray imported only there,
  when used).
"""
