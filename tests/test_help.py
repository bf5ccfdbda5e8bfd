"""Every command's and group's ``--help``: each option has help text, each argument is named in the text, and each
command shows an Examples section of real command lines."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from bisent.cli import cli


def _walk(prefix: str, group: click.Group, ctx: click.Context, found: dict) -> None:
    found[prefix] = group
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        full = f"{prefix} {name}".strip()
        if isinstance(cmd, click.Group):
            _walk(full, cmd, ctx, found)
        else:
            found[full] = cmd


ALL: dict[str, click.Command] = {}
_walk("", cli, click.Context(cli), ALL)


def _help(name: str) -> str:
    result = CliRunner().invoke(cli, [*name.split(), "--help"], prog_name="bisent")
    assert result.exit_code == 0, result.output
    return result.output


def test_the_walk_finds_groups_and_their_commands():
    assert {"", "data", "documents", "eval", "cache", "mine", "explain", "eval filter", "data libreoffice",
            "bench", "bench mining", "bench align"} <= set(ALL)


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_option_has_help(name):
    cmd = ALL[name]
    missing = [p.opts[0] for p in cmd.params if isinstance(p, click.Option) and not p.hidden
               and not (p.help or "").strip()]
    assert not missing, f"bisent {name}: options without help text: {missing}"


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_argument_is_described(name):
    text = _help(name)
    usage, _, body = text.partition("\n")
    for p in ALL[name].params:
        if isinstance(p, click.Argument):
            label = (p.metavar or p.name.upper()).strip("[].")
            assert label in body, f"bisent {name}: argument {label} is not described in --help"


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_help_has_examples(name):
    text = _help(name)
    assert "Examples:" in text, f"bisent {name or '(group)'}: --help has no Examples section"
    after = text.split("Examples:", 1)[1]
    assert "bisent " in after, f"bisent {name}: the Examples section shows no command line"


@pytest.mark.parametrize("args, spelling", [
    (["align", "a.txt", "b.txt", "-l", "en", "-L", "de", "--out", "a.txt"], "--out"),
    (["train", "--recipe", "no.yaml", "--train", "x.tsv", "-o", "m"], "--recipe"),
    (["divergence", "in.tsv", "--encoder", "no-model"], "--encoder"),
    (["data", "gettext", "--tgt", "../x", "-o", "out"], "--tgt"),
])
def test_one_spelling_per_option(tmp_path, monkeypatch, capsys, args, spelling):
    """Each option has the one spelling --help shows: another is a usage error that names it, not a second name."""
    from bisent.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.tsv").write_text("a\tb\n")
    assert main(args) != 0
    err = capsys.readouterr().err
    assert f"No such option '{spelling}'" in err and "note:" not in err and "Traceback" not in err
