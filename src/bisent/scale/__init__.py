"""Mining beyond one pass on one machine.

- :mod:`bisent.scale.blocks`: the exact kNN cut into (source block, target block)
  jobs, their neighbour lists merged, finished blocks kept in a state folder so a
  killed run resumes; :class:`~bisent.scale.blocks.BlockScorer` mines with it.
- :mod:`bisent.scale.ray_mine`: the same jobs as Ray tasks (``bisent mine --ray``);
- :mod:`bisent.scale.ray_embed`: shards encoded by one encoder actor per worker (``bisent embed --ray``);
- :mod:`bisent.scale.ray_session`: the Ray session (``pip install bisent[ray]``; Ray imported only there,
  when used).
"""
