"""The run job: document pairs -> alignment -> filter -> bitext as resumable stages (``bisent run``,
:mod:`bisent.run`)."""

from __future__ import annotations

from .common import check_paths, fspaths


def _paths(kw: dict) -> dict:
    """The run folder: ``output``, else run_dir of the YAML (relative to it)."""
    run_dir = kw["output"]
    if run_dir is None and kw["config"]:
        from ..run import load_run_config
        from ..training.recipe import parse_override

        overrides = dict(parse_override(s) for s in kw["overrides"])
        config, base = load_run_config(kw["config"], overrides)
        run_dir = base / str(config["run_dir"]) if config.get("run_dir") else None
    return {"states": {"--output folder": run_dir}}


#: the paths of a run, for :func:`bisent.paths.guarded` and :func:`bisent.jobs.common.check_paths`
PATHS = {"reads": ("config",), "writes": ("report",), "derived": _paths, "derived_params": ("output",)}


def run(config=None, *, output=None, force: bool = False, quiet: bool = False, report=None, overrides=()) -> dict:
    """Run (or continue) the stages of the configuration ``config`` (an installed recipe's name, e.g.
    ``run-default``, or a YAML path) in the run folder ``output`` (default: run_dir of the YAML), as ``bisent run``
    does; finished stages whose inputs are unchanged are skipped unless ``force``. ``overrides``: ``KEY=VALUE``
    strings (``--set``). Returns the summary it prints.
    """
    from ..errors import BisentError
    from ..run import run_pipeline
    from ..training.recipe import parse_override

    if config is None:
        raise BisentError("no configuration: give -c/--config (e.g. -c run-default)")
    config, output, report = fspaths(config, output, report)
    check_paths(PATHS, locals())
    settings = dict(parse_override(s) for s in overrides)
    summary = run_pipeline(config, output, progress=False if quiet else None, force=force, overrides=settings)
    if report:
        from ..run import report_run
        summary["report"] = report_run(config, output, report, overrides=settings)
    return summary


__all__ = ["PATHS", "run"]
