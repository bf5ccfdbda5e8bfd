"""One guard for the paths of every command: what it reads, what it writes, checked before any work.

Each command in :mod:`bisent.cli` declares its path parameters with :func:`guarded` (inputs, output files,
output folders, bisent's own state folders, and the paths derived from them such as ``OUTPUT.knn``);
:func:`check_command_paths` then refuses, with one :class:`BisentError` line, an output that

- is a symbolic link (writing through it would change its target),
- is an input (the same inode, hard links included, or the same real path),
- is the same path as another output (``--report`` equal to ``-o``),
- is an existing file inside an input folder (``report RUN_DIR -o RUN_DIR/mined.tsv``),
- is a folder that holds an input (``embed vec/x.txt -o vec``, ``run run.yaml -o .``),
- cannot be written (a parent that is a file, a folder that cannot be created),
- or, for a state folder, is a folder bisent did not make (see :func:`bisent.io.check_state_dir`),
- is a file bisent reads back that this command does not own: the labels of a review (a person's work) or
  the record ``X.report.json`` of another output ``X`` (see :func:`read_back`), unless the command declares
  it as the file it resumes (``resumes``) or as its own record (a derived ``... record`` output).

The declaration is kept on the command's callback (``__bisent_paths__``), so a test can check that every
path parameter of every command is declared.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import click

from .errors import BisentError
from .io import check_creatable_dir, check_state_dir, check_writable, is_stdio, same_file

#: what a derived declaration returns: kind ("reads", "writes", "folders", "states") -> {label: path or None}
Paths = dict[str, dict[str, object]]
KINDS = ("reads", "writes", "folders", "states")


@dataclass(frozen=True)
class PathSpec:
    """The path parameters of one command (their Python names), by what the command does with them."""

    reads: tuple[str, ...] = ()       # files or folders it reads
    writes: tuple[str, ...] = ()      # files it writes
    folders: tuple[str, ...] = ()     # folders it creates or fills
    states: tuple[str, ...] = ()      # bisent's own state folders (marked; files deleted inside)
    specs: tuple[str, ...] = ()       # reads given as [PREFIX=]PATH (--train en-de=train.tsv)
    derived: Callable[[dict], Paths] | None = None     # more paths from the arguments (OUTPUT.knn, ...)
    derived_params: tuple[str, ...] = ()               # parameters only ``derived`` turns into paths
    rewrites: tuple[str, ...] = ()    # suffixes an output may replace inside an input folder (a previous report)
    resumes: tuple[str, ...] = ()     # outputs the command reads back and extends (a review's labels)
    unchecked: dict[str, str] = field(default_factory=dict)   # parameter -> why no check applies
    what: dict[str, str] = field(default_factory=dict)        # parameter -> what errors call it ("model directory")

    def names(self) -> set[str]:
        """Every parameter this declaration covers."""
        return {*self.reads, *self.writes, *self.folders, *self.states, *self.specs, *self.derived_params,
                *self.unchecked}


def guarded(**declaration) -> Callable:
    """Decorate a command function (below ``@click.command`` and its options) to check its paths first."""
    spec = PathSpec(**declaration)

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            check_command_paths(resolve(spec, kwargs, _labels()))
            return fn(*args, **kwargs)

        wrapper.__bisent_paths__ = spec
        return wrapper

    return decorate


def _labels() -> dict[str, str]:
    """Python name -> how the user wrote it (``--output``, ``SRC``) for the running click command."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return {}
    return {p.name: (max(p.opts, key=len) if isinstance(p, click.Option) else p.human_readable_name.strip("[]"))
            for p in ctx.command.params}


def _values(value) -> list:
    if value is None or value == "" or value is False:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _spec_path(value: str) -> str:
    """The path of ``[PREFIX=]PATH`` (a prefix holds no slash)."""
    prefix, eq, rest = str(value).partition("=")
    return rest if eq and "/" not in prefix and rest else str(value)


def resolve(spec: PathSpec, kwargs: dict, labels: dict[str, str] | None = None) -> Paths:
    """The declared paths of one call: kind -> {label: path} (several values of one option get ``[i]``)."""
    labels = labels or {}
    out: Paths = {kind: {} for kind in KINDS}
    for kind in KINDS:
        for name in getattr(spec, kind):
            vals = _values(kwargs.get(name))
            flag = labels.get(name, name)
            label = (f"{spec.what[name]} ({flag})" if name in spec.what else
                     f"{flag} folder" if kind in ("folders", "states") else flag)
            for i, v in enumerate(vals):
                out[kind][label + (f"[{i + 1}]" if len(vals) > 1 else "")] = v
    for name in spec.specs:
        vals = _values(kwargs.get(name))
        for i, v in enumerate(vals):
            out["reads"][labels.get(name, name) + (f"[{i + 1}]" if len(vals) > 1 else "")] = _spec_path(v)
    out["resumes"] = {str(v): v for name in spec.resumes for v in _values(kwargs.get(name))}
    if spec.derived is not None:
        for kind, paths in spec.derived(kwargs).items():
            out[kind].update(paths)
    out["rewrites"] = {s: s for s in spec.rewrites}
    return out


#: the first bytes of a labels file of ``bisent review``
LABELS_HEAD = b'{"bisent_review"'
RECORD_SUFFIX = ".report.json"


def read_back(path) -> str | None:
    """What ``path`` is, when it is an existing file bisent reads back and nothing but its owner may replace:
    the labels of a review, or the run record of another output beside it (None: neither)."""
    p = Path(path)
    try:
        if not p.is_file():
            return None
        with open(p, "rb") as f:
            head = f.read(len(LABELS_HEAD))
    except OSError:
        return None
    if head == LABELS_HEAD:
        return "the labels of a review (a person's work)"
    if p.name.endswith(RECORD_SUFFIX) and head.startswith(b"{"):
        out = p.with_name(p.name[:-len(RECORD_SUFFIX)])
        if out.exists() or p.name == "pairs" + RECORD_SUFFIX:
            return f"the run record of {out.name} (review and report read it)"
    return None


def _inside(path, folder) -> bool:
    """Whether ``path`` (really) lies inside ``folder`` (or is it)."""
    p, f = Path(os.path.realpath(path)), Path(os.path.realpath(folder))
    return p == f or f in p.parents


def check_command_paths(paths: Paths) -> None:
    """Refuse, before any work, outputs that would destroy an input, collide, or cannot be written (one line)."""
    ins = [(k, v) for k, v in paths.get("reads", {}).items() if v is not None and not is_stdio(v)]
    outs = [(kind, k, v) for kind in ("writes", "folders", "states")
            for k, v in paths.get(kind, {}).items() if v is not None and not is_stdio(v)]
    rewrites = tuple(paths.get("rewrites", {}))
    for i, (kind, name, out) in enumerate(outs):
        for other, inp in ins:
            if same_file(out, inp):
                raise BisentError(f"{out}: {name} is the same file as {other} ({inp}); refusing to overwrite an input")
            if kind != "writes" and _inside(inp, out):
                raise BisentError(f"{out}: {name} is a folder that holds {other} ({inp}); bisent writes and "
                                  f"removes files there: give another folder")
            if (os.path.isdir(inp) and os.path.lexists(out) and _inside(out, inp)
                    and not str(out).endswith(rewrites)):
                raise BisentError(f"{out}: {name} would replace a file inside {other} ({inp}); give a name "
                                  f"outside it")
        if os.path.islink(out):
            raise BisentError(f"{out}: is a symbolic link ({name}); refusing to write through it "
                              f"(remove the link or give another name)")
        if kind == "writes" and str(out) not in paths.get("resumes", {}) and not name.endswith("record"):
            what = read_back(out)
            if what is not None:
                raise BisentError(f"{out}: {name} would overwrite {what}; give another name")
        for _, other, out2 in outs[:i]:
            if same_file(out, out2):
                raise BisentError(f"{out}: {name} and {other} are the same file; give them different names")
    for kind, name, out in outs:
        if kind == "writes":
            check_writable(out, name)
        elif kind == "folders":
            check_creatable_dir(out, name)
        else:
            check_state_dir(out, name)


def command_specs() -> dict[str, tuple[click.Command, PathSpec | None]]:
    """Every command of ``bisent`` (``"documents mine"`` for a group's) with its declaration (None: undeclared)."""
    from .cli import cli

    found: dict[str, tuple[click.Command, PathSpec | None]] = {}

    def walk(prefix: str, group: click.Group, ctx: click.Context) -> None:
        for name in group.list_commands(ctx):
            cmd = group.get_command(ctx, name)
            full = f"{prefix} {name}".strip()
            if isinstance(cmd, click.Group):
                walk(full, cmd, ctx)
            else:
                found[full] = (cmd, getattr(cmd.callback, "__bisent_paths__", None))

    walk("", cli, click.Context(cli))
    return found
