"""Bounded reading of the YAML and JSON that users hand to bisent: one-line errors instead of hangs,
``MemoryError`` or ``RecursionError``.

YAML (recipes, filter configs, run configs, ``--set`` values) is first walked event by event: aliases
(``*name``: a "billion laughs" document of a few hundred bytes expands to gigabytes when walked), nesting
deeper than :data:`MAX_DEPTH`, more than :data:`MAX_NODES` values, integers longer than
:data:`MAX_INT_DIGITS` and a key given twice in one mapping (PyYAML would keep the last silently) are refused
before anything is built,
then it is read by PyYAML's safe loader. The text may be at most :data:`MAX_YAML_BYTES` (a configuration
is a few kilobytes; building Python objects from YAML runs at about 150 kB a second, so a 2 MB file of
50,000 filter steps would hang for most of a minute). JSON (model ``config.json``,
``report.json``, manifests, document JSONL) is parsed by :mod:`json`, whose C decoder raises
``RecursionError`` on deep nesting; that, and any nesting deeper than :data:`MAX_DEPTH`, is a one-line
error here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from .errors import BisentError, where

#: the most bytes of a YAML configuration (recipes are under 20 kB)
MAX_YAML_BYTES = 1 << 20
#: the most values (scalars, lists, mappings) of a YAML configuration (the largest recipe has about 100)
MAX_NODES = 20_000
#: the deepest nesting of lists and mappings accepted in YAML and JSON
MAX_DEPTH = 64
#: the most digits of an integer in YAML (Python refuses to convert more than 4,300; a float holds about 308)
MAX_INT_DIGITS = 100

#: a plain YAML scalar PyYAML reads as an integer (decimal, 0x, 0o/0, 0b, base 60)
_INT = re.compile(r"[-+]?(0b[01_]+|0x[0-9a-fA-F_]+|0o?[0-7_]+|[0-9][0-9_]*(:[0-5]?[0-9])*)")


_FAST = getattr(yaml, "CSafeLoader", None)            # libyaml, when PyYAML was built with it


class _Refused(yaml.YAMLError):
    def __init__(self, problem: str, mark):
        super().__init__(problem)
        self.problem, self.problem_mark = problem, mark


def _scan(text: str) -> None:
    """Walk the YAML events of ``text`` (libyaml's parser where there is one: 1 MB in about half a second)
    and refuse aliases, nesting deeper than :data:`MAX_DEPTH` and more than :data:`MAX_NODES` nodes, before
    anything is built from them."""
    level = nodes = 0
    keys: list[set | None] = []           # per open collection: the keys seen (None: a list)
    expect_key: list[bool] = []           # per open mapping: whether its next scalar is a key
    for event in yaml.parse(text, Loader=_FAST or yaml.SafeLoader):
        if isinstance(event, yaml.ScalarEvent) and event.implicit[0] and len(event.value) > MAX_INT_DIGITS \
                and _INT.fullmatch(event.value):
            raise _Refused(f"an integer of {len(event.value)} characters (a configuration number has a few digits)",
                           event.start_mark)
        if isinstance(event, (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent,
                              yaml.AliasEvent)) and keys and keys[-1] is not None:
            if expect_key[-1] and isinstance(event, yaml.ScalarEvent):
                if event.value in keys[-1]:
                    raise _Refused(f"duplicate key '{event.value}' (the first one would be dropped)",
                                   event.start_mark)
                keys[-1].add(event.value)
            expect_key[-1] = not expect_key[-1]
        if isinstance(event, yaml.AliasEvent):
            raise _Refused(f"alias *{event.anchor} refused (bisent configurations use no anchors or aliases)",
                           event.start_mark)
        if isinstance(event, (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            nodes += 1
            if nodes > MAX_NODES:
                raise _Refused(f"more than {MAX_NODES} values (a configuration has a few hundred)", event.start_mark)
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            level += 1
            if level > MAX_DEPTH:
                raise _Refused(f"nested more than {MAX_DEPTH} levels deep", event.start_mark)
            keys.append(set() if isinstance(event, yaml.MappingStartEvent) else None)
            expect_key.append(True)
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            level -= 1
            keys.pop()
            expect_key.pop()


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,63}")


def shown_key(key) -> str:
    """``'key'`` for an error line when ``key`` is a name (``steps``, ``model.dim``); a key that is no name (the
    first line of a file that is no configuration, such as a password file) is not echoed."""
    return f"'{key}'" if isinstance(key, str) and _NAME.fullmatch(key) else "(a key that is not a name, not shown)"


def _one_line(text) -> str:
    return " ".join(str(text).split())


def _yaml_error(source, e: yaml.YAMLError, lines: bool = True) -> BisentError:
    mark = getattr(e, "problem_mark", None)
    at = f":{mark.line + 1}" if mark is not None and lines else ""
    problem = getattr(e, "problem", None) or e
    return BisentError(f"{source}{at}: invalid YAML: {_one_line(problem)}")


def yaml_text(text: str, source="YAML", *, lines: bool = True) -> Any:
    """The data of one YAML document ``text`` (``source`` names it in errors, with the line when ``lines``)."""
    if isinstance(source, str) and len(source) > 100:          # a --set value: named, not echoed in full
        source = source[:60] + f"... ({len(source)} characters)"
    if len(text) > MAX_YAML_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_YAML_BYTES:
        raise BisentError(f"{source}: YAML of more than {MAX_YAML_BYTES // 1024} kB refused (a configuration is "
                          f"a few kB)")
    try:
        _scan(text)
        return yaml.load(text, Loader=_FAST or yaml.SafeLoader)
    except yaml.YAMLError as e:
        raise _yaml_error(source, e, lines) from None
    except RecursionError:
        raise BisentError(f"{source}: invalid YAML: nested too deep") from None
    except ValueError as e:                       # a value PyYAML cannot build (an integer too long to convert)
        raise BisentError(f"{source}: invalid YAML: {_one_line(e)}") from None


def read_yaml(path) -> Any:
    """The data of the YAML file ``path``: size-checked before it is read, then :func:`yaml_text`."""
    path = Path(path)
    try:
        if not path.is_file():
            raise BisentError(f"{path}: not a regular file" if path.exists() else f"{path}: no such file")
        with open(path, "rb") as f:
            data = f.read(MAX_YAML_BYTES + 1)
    except OSError as e:
        raise BisentError(f"{path}: cannot read ({e.strerror or e})") from None
    if len(data) > MAX_YAML_BYTES:
        raise BisentError(f"{path}: YAML of more than {MAX_YAML_BYTES // 1024} kB refused (a configuration is "
                          f"a few kB)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise BisentError(f"{path}:{line}: not valid UTF-8") from None
    return yaml_text(text, path)


def too_deep(obj: Any, limit: int = MAX_DEPTH) -> bool:
    """True when lists and dicts in ``obj`` nest more than ``limit`` levels (stops at that level)."""
    level, d = [obj] if type(obj) in (list, dict) else [], 0
    while level:
        d += 1
        if d > limit:
            return True
        level = [v for node in level for v in (node.values() if type(node) is dict else node)
                 if type(v) in (list, dict)]
    return False


def json_text(text: str | bytes, source="JSON", line: int | None = None) -> Any:
    """The value of the JSON ``text``; invalid JSON or nesting deeper than :data:`MAX_DEPTH` is a one-line
    error naming ``source`` (and ``line``)."""
    at = where(source, line)
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise BisentError(f"{at}: not valid UTF-8 (byte 0x{text[e.start]:02x} at column {e.start + 1})") from None
    try:
        value = json.loads(text)
    except RecursionError:
        raise BisentError(f"{at}: JSON nested more than {MAX_DEPTH} levels deep") from None
    except UnicodeDecodeError:
        raise BisentError(f"{at}: not valid UTF-8") from None
    except ValueError as e:
        raise BisentError(f"{at}: corrupt JSON ({_one_line(e)})") from None
    if isinstance(value, (list, dict)) and text.count("[") + text.count("{") > MAX_DEPTH and too_deep(value):
        raise BisentError(f"{at}: JSON nested more than {MAX_DEPTH} levels deep")
    return value



def read_json(path, what: str = "JSON") -> Any:
    """The value of the JSON file ``path`` (one-line errors: missing, not a regular file, not UTF-8, invalid,
    too deep)."""
    path = Path(path)
    try:
        if not path.is_file():
            raise BisentError(f"{path}: not a regular file" if path.exists() else f"{path}: missing ({what})")
        data = path.read_bytes()
    except OSError as e:
        raise BisentError(f"{path}: cannot read ({e.strerror or e})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BisentError(f"{path}:{data[:e.start].count(chr(10).encode()) + 1}: not valid UTF-8") from None
    return json_text(text, path)
