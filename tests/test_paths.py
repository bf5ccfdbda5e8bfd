"""Every command's path parameters are declared to the one path guard (bisent.paths), and the guard's rules."""

from __future__ import annotations

import os

import click
import pytest

from bisent.errors import BisentError
from bisent.io import STATE_MARKER, make_state_dir, remove_state_dir
from bisent.paths import check_command_paths, command_specs

#: parameters that name files or folders although click types them as plain strings
PATHLIKE_NAMES = {"results", "model_dir", "train_specs", "mono_specs", "dev_specs", "word_vectors", "collection"}
PATHLIKE_METAVAR = ("TSV", "TXT", "FILE", "DIR", "PATH")


def path_params(cmd: click.Command) -> set[str]:
    """The parameters of ``cmd`` that name a path: click.Path / click.File types, or path-like names/metavars."""
    found = set()
    for p in cmd.params:
        kind = p.type
        if isinstance(kind, (click.Path, click.File)) or p.name in PATHLIKE_NAMES or \
                any(m in (p.metavar or "") for m in PATHLIKE_METAVAR):
            found.add(p.name)
    return found


COMMANDS = command_specs()


def test_every_command_is_found_and_declared():
    assert {"mine", "embed", "filter", "align", "run", "report", "documents mine", "eval docs", "data vocab",
            "train", "train-scorer", "ensemble"} <= set(COMMANDS)
    undeclared = sorted(name for name, (_, spec) in COMMANDS.items() if spec is None)
    assert not undeclared, f"commands without a path declaration (bisent.paths.guarded): {undeclared}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_path_parameter_is_declared(name):
    cmd, spec = COMMANDS[name]
    missing = sorted(path_params(cmd) - spec.names())
    assert not missing, f"bisent {name}: path parameters not declared to the guard: {missing}"
    unknown = sorted(spec.names() - {p.name for p in cmd.params})
    assert not unknown, f"bisent {name}: the declaration names parameters the command lacks: {unknown}"


def test_a_new_undeclared_path_option_is_caught():
    cmd, spec = COMMANDS["repair"]
    extra = click.Option(["--extra-out"], type=click.Path())
    probe = click.Command("probe", params=[*cmd.params, extra], callback=cmd.callback)
    assert path_params(probe) - spec.names() == {"extra_out"}


def _paths(reads=None, writes=None, folders=None, states=None):
    return {"reads": reads or {}, "writes": writes or {}, "folders": folders or {}, "states": states or {}}


def test_guard_rules(tmp_path):
    a = tmp_path / "a.txt"
    a.write_text("x\n")
    os.link(a, tmp_path / "hard.txt")
    (tmp_path / "ln.txt").symlink_to(a)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "in.txt").write_text("y\n")
    cases = [
        _paths({"SRC": a}, {"-o": a}),                                       # the input itself
        _paths({"SRC": a}, {"-o": tmp_path / "hard.txt"}),                  # a hard link of it
        _paths({"SRC": a}, {"-o": tmp_path / "ln.txt"}),                    # a link
        _paths({"SRC": a}, {"-o": tmp_path / "o.tsv", "--report": tmp_path / "o.tsv"}),   # two outputs
        _paths({"SRC": tmp_path / "data" / "in.txt"}, folders={"-o": tmp_path / "data"}),  # folder holds input
        _paths({"RUN_DIR": tmp_path / "data"}, {"-o": tmp_path / "data" / "in.txt"}),     # a file of an input folder
        _paths({}, {"-o": a / "o.tsv"}),                                     # parent is a file
        _paths({}, states={"--state": tmp_path / "data"}),                   # a user's folder
    ]
    for paths in cases:
        with pytest.raises(BisentError) as e:
            check_command_paths(paths)
        assert "\n" not in str(e.value)
    check_command_paths(_paths({"SRC": a}, {"-o": tmp_path / "new" / "o.tsv"}, states={"--state": tmp_path / "st"}))
    assert a.read_text() == "x\n" and not (tmp_path / "st").exists()


def test_state_folders_are_marked_and_only_marked_ones_removed(tmp_path):
    user = tmp_path / "user"
    user.mkdir()
    (user / "thesis.tex").write_text("mine\n")
    with pytest.raises(BisentError, match="not made by bisent"):
        make_state_dir(user)
    with pytest.raises(BisentError, match="not removed"):
        remove_state_dir(user)
    assert (user / "thesis.tex").read_text() == "mine\n"
    st = make_state_dir(tmp_path / "st", "test")
    assert (st / STATE_MARKER).is_file()
    (st / "x.npz").write_bytes(b"1")
    make_state_dir(st)                                   # a resumed run: kept
    assert (st / "x.npz").exists()
    remove_state_dir(st)
    assert not st.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    make_state_dir(empty)                                # an empty folder is adopted
    assert (empty / STATE_MARKER).is_file()
