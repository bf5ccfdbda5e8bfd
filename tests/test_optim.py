"""RowAdam, the optimiser of hashed tables, against torch's own SparseAdam."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from bisent.training.optim import RowAdam  # noqa: E402


def _steps(opt_cls, lookups: list[list[int]], **kw) -> torch.Tensor:
    torch.manual_seed(0)
    emb = torch.nn.Embedding(50, 8, sparse=True)
    target = torch.randn(50, 8)
    opt = opt_cls([emb.weight], lr=0.05, **kw)
    for rows in lookups:
        opt.zero_grad(set_to_none=True)
        idx = torch.tensor(rows)
        ((emb(idx) - target[idx]) ** 2).sum().backward()
        opt.step()
    return emb.weight.detach().clone()


@pytest.mark.parametrize("fused", [True, False], ids=["compiled", "torch"])
@pytest.mark.parametrize("lookups", [
    [[1, 4, 9, 30], [0, 4, 5], [2, 9, 49]],              # distinct, increasing (the DAN's lookups)
    [[9, 4, 30, 1], [5, 0, 4], [49, 2]],                  # distinct, unsorted
    [[4, 4, 1, 9, 1], [0, 5, 5, 5], [2, 9, 2, 49, 49]],   # repeated rows (their gradients summed)
])
def test_rowadam_equals_sparse_adam(lookups, fused):
    """RowAdam moves exactly the rows SparseAdam moves, by the same amounts, on every kind of lookup, in its
    compiled pass (CPU tables) and in torch (GPU tables); no gradient here is near epsilon, where the two add it
    differently."""
    ours, theirs = _steps(RowAdam, lookups, fused=fused), _steps(torch.optim.SparseAdam, lookups)
    assert torch.allclose(ours, theirs, atol=1e-6)
    untouched = sorted(set(range(50)) - {r for rows in lookups for r in rows})
    assert torch.equal(ours[untouched], _steps(RowAdam, [], fused=fused)[untouched])


def test_rowadam_paths_agree_on_a_big_table():
    """The compiled pass and the torch path give the same table and moments after several steps of distinct
    sorted lookups (the DAN's), to float32 rounding."""
    tables = []
    for fused in (True, False):
        torch.manual_seed(1)
        w = torch.nn.Parameter(torch.randn(1000, 32))
        w0 = w.detach().clone()
        opt = RowAdam([w], lr=0.01, fused=fused)
        for _ in range(3):
            rows = torch.randperm(1000)[:300].sort().values
            w.grad = torch.sparse_coo_tensor(rows[None], torch.randn(300, 32), (1000, 32), check_invariants=True)
            opt.step()
        st = opt.state[w]
        tables.append((w.detach().clone(), st["exp_avg"], st["exp_avg_sq"], st["step"]))
    (w1, m1, v1, s1), (w2, m2, v2, s2) = tables
    assert s1 == s2 == 3
    assert torch.allclose(w1, w2, atol=1e-6) and torch.allclose(m1, m2, atol=1e-6) and torch.allclose(v1, v2, atol=1e-6)
    assert not torch.equal(w1, w0)


def test_table_optimiser_benchmark(capsys):
    """The benchmark runs both optimisers on the same lookups and records how far their tables end apart."""
    from table_optimiser import main

    main(["--buckets", "4096", "--dim", "16", "--rows", "500", "--steps", "2", "--results", ""])
    records = {r["variant"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert set(records) == {"row-adam", "row-adam-torch", "sparse-adam"}
    assert records["row-adam"]["max_diff_vs_anchor"] < 1e-3          # a tenth of a step (lr 0.01)
    assert records["row-adam-torch"]["max_diff_vs_anchor"] < 1e-3
    assert records["sparse-adam"]["anchor"] and records["sparse-adam"]["max_diff_vs_anchor"] == 0.0
    assert all(r["s_per_step"] > 0 for r in records.values())
