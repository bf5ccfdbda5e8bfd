"""The mining engine: vectors in, neighbours both ways, scored pairs out.

- :mod:`.vectors`: vector folders (fp16 shards + manifest) written by streaming a text file, read as one matrix;
- :mod:`.topk`: the fused top-k of both directions over one score tile (the compiled kernel);
- :mod:`.index`: k-nearest neighbours both ways, exact in tiles or approximate (FAISS), and the rule
  that picks one (:func:`~bisent.mining.index.choose_index`);
- :mod:`.twostage`: a scan in a reduced space for candidates, then exact scores at full dimension;
- :mod:`.blocks`: the exact kNN as a grid of resumable blocks (the jobs that ``bisent mine --ray`` runs);
- :mod:`.scoring`: cosine, CSLS and the margin scores of the candidates;
- :mod:`.retrieval`: the retrieval rules (max, fwd, bwd, intersect), :func:`~bisent.mining.retrieval.mine`,
  :func:`~bisent.mining.retrieval.mine_texts` and :func:`~bisent.mining.retrieval.mine_files`;
- :mod:`.rerank`: document candidates re-ranked by how well their sentences align.

``from bisent import mine, MarginScorer`` gives the everyday names; the rest is imported from its module.
"""
