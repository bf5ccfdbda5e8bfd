"""The package's import structure: no cycle between modules, no module importing from a layer above it.

Every ``import`` statement of ``src/bisent`` counts, function-local ones too
(only ``if TYPE_CHECKING:`` blocks are skipped), because a lazy import hides
a cycle rather than removing it. A module's layer is the layer of its
top-level name under ``bisent`` (``bisent.training.loop`` -> ``training``).
A module may import from its own layer and the layers below. A NEW top-level
module or package goes into :data:`LAYERS` at the lowest layer whose
modules it needs: e.g. a document encoder next to ``models``, a new mining
tool inside ``mining``, a new command in ``cli``.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PKG = SRC / "bisent"

#: lowest first; a module may import only from its own layer and those below
LAYERS: list[set[str]] = [
    {"errors", "io", "cache", "langcodes", "progress", "threads", "formats", "safeload", "values", "state",  # plumbing,
     "recipes"},                                                   # bitext files, recipes
    {"encoders", "models", "divergence"},                         # sentence -> vector; word divergence (no torch)
    {"mining", "datasets", "calibration"},         # vectors -> neighbours -> pairs; data builders
    {"filtering", "documents", "evaluate", "align", "cluster", "distill"},  # what a user does with them
    {"training"},                                                 # learning encoders
    {"bench", "demo", "report", "review", "run"},                 # measuring, showing, checking, whole jobs
    {"jobs", "cli", "paths", "__main__", "__init__"},             # the jobs, the command line; the package root
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skip


@functools.lru_cache(maxsize=None)
def _parsed(path: Path, mtime_ns: int) -> tuple[ast.AST, set[int]]:
    """A module's syntax tree and its ``TYPE_CHECKING`` nodes, parsed once per version of the file (the graph and
    the per-line checks read every module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return tree, _type_checking_nodes(tree)


def parsed(path: Path) -> tuple[ast.AST, set[int]]:
    return _parsed(path, path.stat().st_mtime_ns)


def from_imports(name: str, path: Path) -> list[tuple[int, str, list[str]]]:
    """``(line, bisent module, names)`` of every ``from ... import`` of a bisent module in ``path``, lazy ones
    included (``TYPE_CHECKING`` blocks left out); relative imports resolved against ``name``'s package."""
    tree, skip = parsed(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if id(node) in skip or not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package.split(".")
            base = base[: len(base) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        if target.split(".")[0] == "bisent":
            out.append((node.lineno, target, [a.name for a in node.names]))
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The bisent modules that ``name`` imports (a ``from pkg import sub`` names the submodule)."""
    tree, skip = parsed(path)
    out = set()
    for node in ast.walk(tree):
        if id(node) not in skip and isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "bisent"}
    for _, target, names in from_imports(name, path):
        subs = {f"{target}.{n}" for n in names if f"{target}.{n}" in known}
        out |= subs
        if len(subs) < len(names):
            out.add(target)
    return {m for m in out if m in known and m != name}


def layer(name: str) -> int:
    top = name.split(".")[1] if "." in name else "__init__"
    for i, names in enumerate(LAYERS):
        if top in names:
            return i
    raise AssertionError(f"bisent.{top} is in no layer: add it to LAYERS in tests/test_imports.py")


@functools.lru_cache(maxsize=1)
def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def test_no_module_imports_from_a_layer_above_it():
    bad = [f"{a} (layer {layer(a)}) imports {b} (layer {layer(b)})"
           for a, deps in graph().items() for b in sorted(deps) if layer(b) > layer(a)]
    assert not bad, "\n".join(bad)


#: cycles tolerated by name (none: the filtering cycle files <-> pipeline <-> selection is gone)
KNOWN_CYCLES: list[set[str]] = []


def find_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle a depth-first walk of ``edges`` meets, each as the path that closes it."""
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for n in sorted(edges):
        if n not in state:
            visit(n, [n])
    return cycles


def test_no_import_cycle():
    g = graph()
    # a submodule runs after its package's __init__ has started, so importing from its own package
    # (``from . import Setup``) is not an edge of a cycle
    edges = {a: {b for b in deps if not a.startswith(b + ".")} for a, deps in g.items()}
    cycles = [c for c in find_cycles(edges) if not any(set(c) <= known for known in KNOWN_CYCLES)]
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_the_walker_sees_relative_and_lazy_imports():
    g = graph()
    assert "bisent.models.modeldir" in g["bisent.models.dual"]                # from . import modeldir
    assert "bisent.training.objectives.dual" in g["bisent.training.objectives.guo2019"]
    assert "bisent.encoders" in g["bisent.models.adapter"]                    # function-local import


def test_every_name_imported_from_a_bisent_module_exists():
    """A function-local import runs only when its code path does: a name renamed or moved elsewhere would
    break it silently, so every ``from bisent... import NAME`` is resolved here."""
    import importlib

    known = modules()
    missing = []
    for name, path in known.items():
        for line, target, names in from_imports(name, path):
            module = importlib.import_module(target)
            missing += [f"{path.relative_to(SRC)}:{line}: {target} has no {n}" for n in names
                        if n != "*" and not hasattr(module, n) and f"{target}.{n}" not in known]
    assert not missing, "\n".join(missing)


# --- the scripts outside the package: benchmarks/ --------------------------------------------------------------

ROOT = SRC.parent
SCRIPT_DIRS = ("benchmarks",)


def scripts() -> dict[str, Path]:
    """``benchmarks/knn.py`` -> ``benchmarks.knn``: every script of the folders that are not installed."""
    return {f"{d}.{p.stem}": p for d in SCRIPT_DIRS for p in sorted((ROOT / d).glob("*.py"))}


def script_imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """``(line, module, names)`` of every import in a script (lazy ones too; ``names`` empty for ``import m``)."""
    tree, skip = parsed(path)
    out = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            out.append((node.lineno, node.module or "", [a.name for a in node.names]))
    return out


def test_scripts_import_only_public_bisent_modules_and_names_that_exist():
    """A script in benchmarks/ is run by hand, not by the tests: a module moved or a name renamed
    in the package would break it silently. It may use the public package only (no ``_private`` module or name)."""
    import importlib

    known = modules()
    bad = []
    for name, path in scripts().items():
        where = path.relative_to(ROOT)
        for line, target, names in script_imports(path):
            if target.split(".")[0] != "bisent":
                continue
            if target not in known:
                bad.append(f"{where}:{line}: no module {target}")
                continue
            if any(part.startswith("_") for part in target.split(".")):
                bad.append(f"{where}:{line}: {target} is private")
                continue
            module = importlib.import_module(target)
            for n in names:
                if n.startswith("_"):
                    bad.append(f"{where}:{line}: {target}.{n} is private")
                elif not hasattr(module, n) and f"{target}.{n}" not in known:
                    bad.append(f"{where}:{line}: {target} has no {n}")
    assert not bad, "\n".join(bad)


def test_no_import_cycle_with_the_scripts():
    """The package and the scripts together: a script may import a sibling script (``from summarise import
    table``) and the package, the package imports no script, and no chain of imports comes back to its start."""
    known, found = modules(), scripts()
    edges = {a: {b for b in deps if not a.startswith(b + ".")} for a, deps in graph().items()}
    for name, path in found.items():
        folder = name.split(".")[0]
        deps = set()
        for _, target, names in script_imports(path):
            if f"{folder}.{target}" in found:                          # a sibling script (run from its folder)
                deps.add(f"{folder}.{target}")
            elif target in known:
                deps |= {f"{target}.{n}" for n in names if f"{target}.{n}" in known} or {target}
        edges[name] = deps
    assert not any(d in found for m in known for d in edges[m]), "the package imports a script"
    cycles = find_cycles(edges)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_nothing_in_the_package_only_a_benchmark_imports():
    """The installed package keeps what a user runs: every module is reached from ``bisent`` itself or the CLI
    (``bisent bench TASK`` loads ``bisent.bench.TASK`` by name), so a module that only a script of benchmarks/ would
    import belongs there."""
    from bisent.bench import TASKS, task_module

    edges = graph()
    roots = {"bisent", "bisent.cli", "bisent.__main__"} | {task_module(t).__name__ for t in TASKS}
    roots |= {m for m in edges if m.startswith("bisent.cli.")}
    seen, todo = set(), [r for r in roots if r in edges]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += [d for d in edges.get(m, ()) if d not in seen]
    unused = sorted(m for m in modules() if m not in seen and m.startswith("bisent.bench"))
    assert not unused, f"modules of bisent.bench no command reaches (they belong in benchmarks/): {unused}"
