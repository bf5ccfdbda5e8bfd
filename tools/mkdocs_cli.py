"""A mkdocs hook: the CLI reference (mkdocs-click's table style) rendered as ``bisent COMMAND --help`` reads.

mkdocs-click writes click's help texts into Markdown as they are, so three things of a terminal's help go wrong on a
page: an option without a default shows click's ``Sentinel.UNSET`` as its default; a placeholder such as
``src<TAB>tgt`` is taken for an HTML tag and vanishes; and an ``Examples:`` block, one command a line, runs into
one paragraph. A Markdown preprocessor that runs right after mkdocs-click's (priority 141) fixes the lines it
generated, on the pages that hold a ``::: mkdocs-click`` block only.
"""

from __future__ import annotations

import re

from markdown import Extension, Markdown
from markdown.preprocessors import Preprocessor

DIRECTIVE = "::: mkdocs-click"
#: click's marker of an option that was given no default (``Sentinel.UNSET`` in click 8.3 and later)
UNSET = "`Sentinel.UNSET`"
#: a ``<`` that opens what Markdown takes for an HTML tag (``<TAB>``, ``<lang>``), outside code spans
TAG = re.compile(r"<(?=[A-Za-z/!?])")


def escape_tags(line: str) -> str:
    """``line`` with every ``<`` outside backtick code spans written as ``&lt;``, so a placeholder is shown."""
    parts = re.split(r"(`+[^`]*`+)", line)
    return "".join(p if p.startswith("`") else TAG.sub("&lt;", p) for p in parts)


def option_row(line: str) -> str:
    """A row of the options table with its default as the terminal's help gives it: a flag's ``False``, else none."""
    cells = line.split(" | ")
    if len(cells) >= 4 and cells[-1].rstrip(" |") == UNSET:
        cells[-1] = ("`False`" if cells[1] == "boolean" else "–") + " |"
    return escape_tags(" | ".join(cells))


def fix_lines(lines: list[str]) -> list[str]:
    """mkdocs-click's lines fixed: table defaults, placeholders, and indented example lines as a code block."""
    out: list[str] = []
    fence = False                      # inside a ``` block mkdocs-click wrote (a usage line)
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            fence = not fence
            out.append(line)
        elif fence:
            out.append(line)
        elif line.startswith("| "):
            out.append(option_row(line))
        elif line.startswith("  ") and out and out[-1].rstrip().endswith(":") and not out[-1].startswith("|"):
            block = []
            while i < len(lines) and lines[i].startswith("  "):
                block.append(lines[i][2:])
                i += 1
            lang = "sh" if all(b.lstrip().startswith(("bisent", "#")) for b in block) else "text"
            out += ["", f"```{lang}", *block, "```"]
            continue
        else:
            out.append(escape_tags(line.replace("\b", "")))
        i += 1
    return out


class _Mark(Preprocessor):
    """Before mkdocs-click: notes whether this page holds its directive."""

    def __init__(self, md: Markdown, state: dict):
        super().__init__(md)
        self.state = state

    def run(self, lines: list[str]) -> list[str]:
        self.state["cli"] = any(line.startswith(DIRECTIVE) for line in lines)
        return lines


class _Fix(Preprocessor):
    """After mkdocs-click: fixes the lines it generated."""

    def __init__(self, md: Markdown, state: dict):
        super().__init__(md)
        self.state = state

    def run(self, lines: list[str]) -> list[str]:
        return fix_lines(lines) if self.state.get("cli") else lines


class CliReference(Extension):
    def extendMarkdown(self, md: Markdown) -> None:  # noqa: N802 (Python-Markdown's name)
        state: dict = {}
        md.preprocessors.register(_Mark(md, state), "bisent_cli_mark", 142)
        md.preprocessors.register(_Fix(md, state), "bisent_cli_fix", 140)


def on_config(config, **kwargs):
    config.markdown_extensions.append(CliReference())
    return config
