"""Mining and embedding on a Ray cluster.

- :mod:`bisent.cluster.ray_mine`: the block jobs of :mod:`bisent.mining.blocks` as Ray tasks (``bisent mine --ray``);
- :mod:`bisent.cluster.ray_embed`: shards encoded by one encoder actor per worker (``bisent embed --ray``);
- :mod:`bisent.cluster.ray_session`: the Ray session (``pip install bisent[ray]``; Ray imported only there,
  when used).
"""
