"""Benchmark tasks on real translated documentation (LibreOffice help), anchors measured in the same run.

Each task module has ``run(src_lang, tgt_lang, encoders, record, ...)`` and
returns its records; :class:`bisent.bench.common.Recorder` prints each as a
JSON line and, given a results folder (``bisent bench --results DIR``), appends it to ``DIR/TASK.jsonl``. The scripts
of a checkout's ``benchmarks/`` folder (not installed) record through the same recorder. Splits are the
contract: models train on train documents, thresholds are tuned on dev
documents, figures are reported on test documents.
"""

TASKS = ("mining", "recover", "filter", "docs", "speed", "calibration", "divergence", "align", "pairs", "docmine")


def task_module(name: str):
    """The module implementing benchmark task ``name``."""
    import importlib

    module = {"filter": "filtering"}.get(name, name)
    return importlib.import_module(f"bisent.bench.{module}")
