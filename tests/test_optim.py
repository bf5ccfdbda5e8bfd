"""RowAdam, the optimiser of hashed tables, against torch's own SparseAdam."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from bisent.training.optim import RowAdam, _row_gradient  # noqa: E402


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
    [[1, 4, 9, 30], [0, 4, 5], [2, 9, 49]],              # distinct, increasing: the gradient is used as it is
    [[9, 4, 30, 1], [5, 0, 4], [49, 2]],                  # distinct, unsorted: coalesced
    [[4, 4, 1, 9, 1], [0, 5, 5, 5], [2, 9, 2, 49, 49]],   # repeated rows: coalesced (their gradients summed)
])
def test_rowadam_equals_sparse_adam(lookups):
    """RowAdam moves exactly the rows SparseAdam moves, by the same amounts, on every kind of lookup (no
    gradient here is near epsilon, where the two add it differently)."""
    ours, theirs = _steps(RowAdam, lookups), _steps(torch.optim.SparseAdam, lookups)
    assert torch.allclose(ours, theirs, atol=1e-6)
    untouched = sorted(set(range(50)) - {r for rows in lookups for r in rows})
    assert torch.equal(ours[untouched], _steps(RowAdam, [])[untouched])


def test_row_gradient_sums_repeated_rows():
    """A gradient with repeated, unsorted rows comes back with each row once, its gradients summed."""
    g = torch.sparse_coo_tensor(torch.tensor([[7, 2, 7]]), torch.tensor([[1.0], [2.0], [3.0]]), (10, 1),
                                check_invariants=True)
    rows, vals = _row_gradient(g)
    assert rows.tolist() == [2, 7] and vals.flatten().tolist() == [2.0, 4.0]
    dense = torch.zeros(10, 1)
    dense[3] = 5.0
    rows, vals = _row_gradient(dense)
    assert rows.tolist() == [3] and vals.flatten().tolist() == [5.0]


def test_table_optimiser_benchmark(capsys):
    """The benchmark runs its three variants; RowAdam's fast path is RowAdam on the coalesced gradient, exactly."""
    from bisent.bench.table_optimiser import main

    main(["--buckets", "4096", "--dim", "16", "--rows", "500", "--steps", "2", "--results", ""])
    records = {r["variant"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert set(records) == {"row-adam", "row-adam-coalesced", "sparse-adam"}
    assert records["row-adam"]["max_diff_vs_coalesced"] == 0.0
    assert records["sparse-adam"]["anchor"] and records["sparse-adam"]["max_diff_vs_anchor"] == 0.0
    assert all(r["s_per_step"] > 0 for r in records.values())
