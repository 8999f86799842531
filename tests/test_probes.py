"""probes.py keeps what a run looked at on the file system, which the replay cache checks
before giving a stored stream again: it must see every look, and notice every change."""

from __future__ import annotations

import ast
import os
import time
from pathlib import Path

import pytest

from perfparser_py import probes

PACKAGE = Path(probes.__file__).parent
# calls that look at the file system by name
_LOOKS = {("os", "stat"), ("os", "lstat"), ("os", "listdir"), ("os", "scandir"),
          ("os", "open"), ("os", "access"), ("os.path", "isfile"), ("os.path", "isdir"),
          ("os.path", "exists"), ("os.path", "lexists"), ("os.path", "getsize"),
          ("os.path", "getmtime"), ("io", "open")}
# where the run may look without probes, and why
_ALLOWED = {
    "probes.py": "the probes themselves",
    "regular.py": "through probes.stat, and os.lstat for the caches' own entries",
    "cache.py": "the persistent cache's own files (results do not depend on them)",
    "replay.py": "the replay cache's own files",
    "flavour.py": "decided before the run; its answer is part of the replay key",
    "cli.py": "the output file, and the saved-stream check before any run",
    "saved_stream.py": "a saved stream passed through: no run to replay",
    "elf/debuginfod.py": "a run that asks debuginfod is never stored",
    "elf/vdso.py": "our own vDSO: probes.content of the running kernel's notes stands for it",
    "kernel/worker.py": "reads the kallsyms file for the run, which probes it (Kallsyms.load)",
    "kernel/symbols.py:exists": "the cache's copy of /proc/kallsyms (OwnCopy), which names "
                                "the image as /proc/kallsyms does; a run reading it probes it",
    "kernel/symbols.py:used": "the cache's copy's mtime, for its LRU trim",
    "split.py": "the pipe's capacity, which does not change the output",
    "compare.py": "a tool, not the run",
    "textdump.py": "a tool, not the run",
    "source.py:_permission_hint": "after a failed open: a run that fails is not stored",
    "source.py:_open": "probes.opened(path, f) right after",
    "jitdump.py:_events": "a path _find() probed",
}


def _looks(tree: ast.AST, func: str = ""):
    """(innermost function's name, call text) of each look at the file system by name."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield from _looks(node, node.name)
            continue
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id == "open":
                yield func, "open"
            elif isinstance(f, ast.Attribute) and (ast.unparse(f.value), f.attr) in _LOOKS:
                yield func, f"{ast.unparse(f.value)}.{f.attr}"
        yield from _looks(node, func)


def test_the_run_looks_at_files_only_through_probes() -> None:
    unprobed = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in _ALLOWED:
            continue
        for func, call in set(_looks(ast.parse(path.read_text()))):
            if f"{rel}:{func}" not in _ALLOWED:
                unprobed.append(f"{rel}:{func}: {call}")
    assert not unprobed, ("file-system looks the replay cache would not see (use probes, or "
                          "say in _ALLOWED why the output does not depend on them): "
                          + ", ".join(sorted(unprobed)))


def test_the_check_sees_looks_it_was_not_told_of(tmp_path: Path) -> None:
    """The AST check is not vacuous: a module that stats a file is caught."""
    tree = ast.parse("import os\ndef f(p):\n    return os.path.isfile(p) or open(p)\n")
    assert set(_looks(tree)) == {("f", "os.path.isfile"), ("f", "open")}


@pytest.fixture
def recording():
    probes.start()
    yield
    probes.taken()


def test_changes_are_noticed(tmp_path: Path, recording) -> None:
    kept, gone, later = tmp_path / "kept", tmp_path / "gone", tmp_path / "later"
    kept.write_bytes(b"a")
    gone.write_bytes(b"b")
    folder = tmp_path / "dir"
    folder.mkdir()
    assert probes.isfile(str(kept)) and probes.exists(str(gone))
    assert not probes.isfile(str(later))
    assert probes.scandir(str(folder)) == []
    seen = probes.taken()
    assert probes.unchanged(seen)
    changes = [lambda: kept.write_bytes(b"c"), gone.unlink, lambda: later.write_bytes(b""),
               lambda: (folder / "new").write_bytes(b"")]
    for change in changes:
        time.sleep(0.01)  # a later mtime on file systems of coarse timestamps
        change()
        assert not probes.unchanged(seen)
        seen = {**seen, **_now(seen)}
        assert probes.unchanged(seen)


def _now(seen: dict) -> dict:
    """`seen` as it would be recorded now."""
    probes.start()
    for key in seen:
        probes.exists(key[1:])
    now = probes.taken()
    return {k: v for k, v in now.items() if k in seen}


def test_pseudo_files_are_kept_by_content(tmp_path: Path, recording) -> None:
    notes = tmp_path / "notes"
    notes.write_bytes(b"one")
    assert probes.content(str(notes)) == b"one"
    probes.exists("/proc/self/status")  # a stat of /proc says nothing: not kept
    seen = probes.taken()
    assert set(seen) == {"c" + str(notes)} | {k for k in seen if k[0] == "s"} - {
        "s/proc/self/status"}
    assert "s/proc/self/status" not in seen
    notes.write_bytes(b"two")
    assert not probes.unchanged(seen)


def test_code_files_are_kept(recording) -> None:
    seen = probes.taken()
    assert "s" + probes.__file__ in seen
    assert any(k.endswith(".so") or ".so." in k for k in seen)  # the mapped libraries


def test_recent_files(tmp_path: Path, recording) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"")
    probes.isfile(str(f))
    seen = probes.taken()
    assert probes.recent(seen, time.time_ns() - 5 * 10**9)
    assert not probes.recent(seen, time.time_ns() + 5 * 10**9)


def test_not_recording_keeps_nothing(tmp_path: Path) -> None:
    assert probes.taken() is None
    assert not probes.isfile(str(tmp_path / "x"))
    assert probes.taken() is None
    probes.merge({"s/x": None})  # nothing to merge into: no error
    assert os.path.isdir(tmp_path)
