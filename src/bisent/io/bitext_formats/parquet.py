"""Parquet bitexts: one row a unit, the sides in two string columns (``src`` and ``tgt`` unless told)."""

from __future__ import annotations

from typing import Iterator

from ...errors import BisentError
from ..files import atomic_write
from ..rows import Bitext, Unit, set_text, unchanged


def _pq():
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - a declared dependency
        raise BisentError("Parquet needs pyarrow (pip install pyarrow)") from None
    return pq


def read(bt: Bitext) -> Iterator[Unit]:
    pq = _pq()
    try:
        table = pq.read_table(bt.paths[0])
    except (OSError, ValueError) as e:  # pyarrow's errors derive from these
        raise BisentError(f"{bt.paths[0]}: cannot read Parquet ({e.__class__.__name__}: {e})") from None
    ks, kt = bt.columns or ("src", "tgt")
    bt.columns, bt.table = (ks, kt), table
    for k in (ks, kt):
        if k not in table.column_names:
            raise BisentError(f"{bt.paths[0]}: no column '{k}' (columns: {', '.join(table.column_names)}); "
                              f"give --columns SRC,TGT")
    for i, (a, b) in enumerate(zip(table.column(ks).to_pylist(), table.column(kt).to_pylist())):
        u = Unit(i + 1, data=i)
        if not isinstance(a, str) or not isinstance(b, str):
            u.problem, u.raw = "bad_row:null", f"{a}\t{b}".encode()
        else:
            set_text(u, a, b)
        yield u


def write(paths, bt: Bitext, units, scores, score_name: str) -> None:
    """The kept rows of the table (changed texts set), a float column ``score_name`` appended when asked."""
    import pyarrow as pa
    pq = _pq()
    ks, kt = bt.columns
    table = bt.table.take(pa.array([u.data for u in units], type=pa.int64()))
    if any(not unchanged(bt, u) for u in units):
        for k, side in ((ks, "src"), (kt, "tgt")):
            i = table.column_names.index(k)
            table = table.set_column(i, k, pa.array([getattr(u, side) for u in units], type=pa.string()))
    if scores is not None:
        table = table.append_column(score_name, pa.array([float(x) for x in scores], type=pa.float64()))
    with atomic_write(paths[0], "wb") as f:
        pq.write_table(table, f)


def write_fields(paths, bt: Bitext, units, fields, names) -> None:
    """Every row with string columns ``bisent_NAME`` appended."""
    import pyarrow as pa
    pq = _pq()
    table = bt.table.take(pa.array([u.data for u in units], type=pa.int64()))
    for k in names:
        table = table.append_column(f"bisent_{k}", pa.array([e[k] for e in fields], type=pa.string()))
    with atomic_write(paths[0], "wb") as f:
        pq.write_table(table, f)


def new(bt: Bitext, **_) -> None:
    import pyarrow as pa
    bt.columns = ("src", "tgt")
    bt.table = pa.table({"src": [u.src for u in bt.units], "tgt": [u.tgt for u in bt.units]})
    for i, u in enumerate(bt.units):
        u.data = i
