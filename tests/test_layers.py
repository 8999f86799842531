"""The import layers (issue 21 item 5): no import cycle between the package's modules, and each
stage imports only its own stage and the stages before it.

STAGES is the one statement of the layering (README.md's layout section points here).
Data flows source -> grammar -> ordering -> session -> unwind -> symbolize -> emit -> protocol;
imports follow who calls whom, so the writer (protocol) and the id-giver (emit) come before
the symbolizer that calls them, and the wiring (reading, pipeline, parallel, run) comes after every
stage it wires. Every import statement counts, the ones inside functions and under
TYPE_CHECKING too: a lazy import is still a dependency, only a later one.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "perfparser_py"

# In order; a module is named without "perfparser_py.", a package by its name (its __init__)
# and a trailing ".*" takes every module under a package.
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    # shared services, no stage of their own: exit codes, interned tuples, the file tests,
    # CPU counting, the end-of-run diagnosis, the launching hotspot, demangling, the cache
    ("base", ("exitcodes", "tuples", "regular", "cpus", "diagnostics", "dependencies",
              "standins", "flavour", "demangle_fallback", "demangle", "cache", "probes",
              "mergesort")),
    # perf.data (and the jitdump files beside it) into events; where the bytes come from
    ("grammar", ("perfdata", "perfdata.*", "source", "jitdump")),
    ("ordering", ("ordering", "deferred_chains")),
    ("elf", ("elf", "elf.*")),
    ("session", ("session",)),
    ("unwind", ("unwind", "unwind.*")),
    ("protocol", ("protocol", "protocol.*")),
    ("emit", ("emit",)),
    ("symbolize", ("symbolize", "kernel", "kernel.*", "jitmap", "tracepoints")),
    ("dispatch", ("dispatch",)),
    # the reading side (a split run's reading process imports it alone), then the writing side
    ("reading", ("reading",)),
    ("pipeline", ("pipeline",)),
    ("parallel", ("parallel", "split")),
    ("run", ("run", "replay")),
    # the commands; the package itself (its compiled_core() looks the unwinder up) is read by cli
    ("tools", ("", "__main__", "cli", "saved_stream", "stream_state", "textdump", "reports",
               "compare")),
)

# Cycles still being taken apart, as the edges that close them. Each must still exist (the
# test fails once it is gone: then delete it here); no other cycle may appear.
KNOWN_CYCLE_EDGES: set[tuple[str, str]] = set()


def _module_names() -> dict[str, Path]:
    names = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that `name` imports anywhere in its source."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    package = [p for p in package if p]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
                module = "perfparser_py" + ("." + module if module else "")
            else:
                module = node.module or ""
            # `from x import y` imports the module x.y when there is one, else x
            targets = [f"{module}.{a.name}" if _local(f"{module}.{a.name}") in modules
                       else module for a in node.names]
        for target in targets:
            if target != "perfparser_py" and not target.startswith("perfparser_py."):
                continue
            local = _local(target)
            while local not in modules:  # an attribute of a module: the module
                local = local.rpartition(".")[0]
            if local != name:
                found.add(local)
    return found


def _local(target: str) -> str:
    return target.removeprefix("perfparser_py").removeprefix(".")


def _graph() -> dict[str, set[str]]:
    modules = _module_names()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _stage_of(name: str) -> int | None:
    for index, (_stage, members) in enumerate(STAGES):
        for member in members:
            if name == member or (member.endswith(".*") and name.startswith(member[:-1])):
                return index
    return None


def test_every_module_has_a_stage():
    assert [name for name in _graph() if _stage_of(name) is None] == []


def test_each_stage_imports_only_itself_and_earlier_stages():
    upward = []
    for name, imported in sorted(_graph().items()):
        stage = _stage_of(name)
        for other in sorted(imported):
            if _stage_of(other) > stage:
                upward.append(f"{name} ({STAGES[stage][0]}) imports {other} "
                              f"({STAGES[_stage_of(other)][0]})")
    assert upward == []


def test_no_import_cycle():
    graph = _graph()
    assert [e for e in sorted(KNOWN_CYCLE_EDGES) if e[1] not in graph.get(e[0], ())] == []
    for a, b in KNOWN_CYCLE_EDGES:
        graph[a] = graph[a] - {b}
    cycles = []
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(name: str) -> None:
        state[name] = 1
        path.append(name)
        for other in sorted(graph[name]):
            if state.get(other) == 1:
                cycles.append(" -> ".join(path[path.index(other):] + [other]))
            elif other not in state:
                visit(other)
        path.pop()
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)
    assert cycles == []


def test_the_checker_sees_lazy_and_relative_imports():
    """The parts of the check that could silently see nothing: an import inside a function,
    `from . import module`, `from .package import module` and the package itself."""
    graph = _graph()
    assert "flavour" in graph["cli"]  # main(): inside a function
    assert "" in graph  # the package itself
    assert "cpus" in graph["split"]  # from . import cpus
    assert "perfdata.events" in graph["dispatch"]  # from .perfdata import events as ev
    assert "elf.leb128" in graph["elf.cfi"]  # from .leb128 import ..., inside a package
