"""RowAdam, the optimiser of hashed tables, against torch's own SparseAdam."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from bisent.training.optim import RowAdam  # noqa: E402


def _steps(opt_cls, lookups: list[list[int]]) -> torch.Tensor:
    torch.manual_seed(0)
    emb = torch.nn.Embedding(50, 8, sparse=True)
    target = torch.randn(50, 8)
    opt = opt_cls([emb.weight], lr=0.05)
    for rows in lookups:
        opt.zero_grad(set_to_none=True)
        idx = torch.tensor(rows)
        ((emb(idx) - target[idx]) ** 2).sum().backward()
        opt.step()
    return emb.weight.detach().clone()


@pytest.mark.parametrize("lookups", [
    [[1, 4, 9, 30], [0, 4, 5], [2, 9, 49]],              # distinct, increasing (the DAN's lookups)
    [[9, 4, 30, 1], [5, 0, 4], [49, 2]],                  # distinct, unsorted
    [[4, 4, 1, 9, 1], [0, 5, 5, 5], [2, 9, 2, 49, 49]],   # repeated rows (their gradients summed)
])
def test_rowadam_equals_sparse_adam(lookups):
    """RowAdam moves exactly the rows SparseAdam moves, by the same amounts, on every kind of lookup (no
    gradient here is near epsilon, where the two add it differently)."""
    ours, theirs = _steps(RowAdam, lookups), _steps(torch.optim.SparseAdam, lookups)
    assert torch.allclose(ours, theirs, atol=1e-6)
    untouched = sorted(set(range(50)) - {r for rows in lookups for r in rows})
    assert torch.equal(ours[untouched], _steps(RowAdam, [])[untouched])


def test_table_optimiser_benchmark(capsys):
    """The benchmark runs both optimisers on the same lookups and records how far their tables end apart."""
    from bisent.bench.table_optimiser import main

    main(["--buckets", "4096", "--dim", "16", "--rows", "500", "--steps", "2", "--results", ""])
    records = {r["variant"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert set(records) == {"row-adam", "sparse-adam"}
    assert records["row-adam"]["max_diff_vs_anchor"] < 1e-3          # a tenth of a step (lr 0.01)
    assert records["sparse-adam"]["anchor"] and records["sparse-adam"]["max_diff_vs_anchor"] == 0.0
    assert all(r["s_per_step"] > 0 for r in records.values())
