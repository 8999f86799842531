"""The compiled core (setup.py, DESIGN.md decision 11) and its interpreted twin give
byte-identical streams, and PERFPARSER_PY_PURE=1 picks the interpreted one.

The hot modules are compiled from the same .py sources, with C types from the .pxd files
beside them; 64-bit register values and address masks are where a C type could change an
answer, so every corpus recording and a fresh `--call-graph dwarf` recording of a real
compiler run (deep stacks through cc1plus, libstdc++ and libc) are converted both ways.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

from tests.corpus.expect import CORPUS, case_args, load_case

RECORDED = CORPUS / "recorded"
PACKAGE = Path(__file__).resolve().parents[1] / "perfparser_py"
ROOT = PACKAGE.parent
COMPILED = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["perfparser-py"]["compiled"]


def _recordings() -> list[tuple[Path, str]]:
    found = []
    for case_dir in sorted(RECORDED.iterdir()):
        if not (case_dir / "case.toml").is_file() or case_dir.name == "badinput":
            continue
        manifest = load_case(case_dir)
        names = {manifest["recording"]["perf_data"]}
        names.update(e["data"] for e in manifest.get("expect", []) if "data" in e)
        found += [(case_dir, n) for n in sorted(names)]
    return found


def _run(args: list[str], pure: bool) -> bytes:
    env = {k: v for k, v in os.environ.items() if k != "PERFPARSER_PY_PURE"}
    if pure:
        env["PERFPARSER_PY_PURE"] = "1"
    env["PERFPARSER_NO_CACHE"] = "1"
    done = subprocess.run([sys.executable, "-m", "perfparser_py.cli", *args], env=env,
                          capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return done.stdout


def _compiled(source: str) -> bool:
    stem = ROOT / source.removesuffix(".py")
    return any(Path(f"{stem}{suffix}").is_file() for suffix in EXTENSION_SUFFIXES)


def test_the_core_is_compiled():
    # tools/run-tests builds the extensions in place (setup.py); a module left interpreted
    # would make the comparisons below prove nothing for it
    assert COMPILED and [m for m in COMPILED if not _compiled(m)] == []
    assert _run(["--version"], pure=False).endswith(b"core: compiled\n")


def _cimported(pxd: Path) -> set[Path]:
    """The package's .pxd files `pxd` cimports, directly or through the ones it cimports:
    `cimport perfparser_py.a.b [as x]` and `from perfparser_py.a.b cimport X` name a/b's,
    the latter a/b/X's where X is a module. Not Cython's own scan (create_dependency_tree):
    that is what decides the rebuilds, and a form it did not follow (`from perfparser_py.unwind
    cimport prefetch`) is how an extension went stale unseen."""
    found: set[Path] = set()
    todo = [pxd]
    while todo:
        for line in todo.pop().read_text().splitlines():
            words = line.split()
            if len(words) >= 2 and words[0] == "cimport":
                deps = [ROOT.joinpath(*words[1].split(".")).with_suffix(".pxd")]
            elif len(words) >= 4 and words[0] == "from" and words[2] == "cimport":
                base = ROOT.joinpath(*words[1].split("."))
                deps = [base / f"{w.strip(',')}.pxd" for w in words[3:]]
                deps = [d if d.is_file() else base.with_suffix(".pxd") for d in deps]
            else:
                continue
            for dep in deps:
                if dep.is_file() and dep not in found:
                    found.add(dep)
                    todo.append(dep)
    return found


def test_cimported_pxds_are_found():
    """memory.pxd cimports history's, process's and the prefetch module's C declarations."""
    deps = {p.relative_to(PACKAGE).as_posix() for p in _cimported(PACKAGE / "unwind/memory.pxd")}
    assert {"unwind/history.pxd", "unwind/process.pxd", "unwind/prefetch.pxd"} <= deps


def test_no_extension_is_older_than_its_source():
    """An extension built in place shadows its .py: after an edit (or a merge) of it, of its
    .pxd or of a .pxd that one cimports, it runs the old code until setup.py build_ext
    --inplace runs again, and every test here would test that old code."""
    stale = []
    for source in COMPILED:
        stem = ROOT / source.removesuffix(".py")
        pxd = Path(f"{stem}.pxd")
        inputs = [ROOT / source, *([pxd, *_cimported(pxd)] if pxd.exists() else [])]
        newest = max(p.stat().st_mtime for p in inputs)
        for suffix in EXTENSION_SUFFIXES:
            ext = Path(f"{stem}{suffix}")
            if ext.is_file() and ext.stat().st_mtime < newest:
                stale.append(source)
    assert stale == [], "rebuild: .venv/bin/python setup.py build_ext --inplace"


def test_pure_switch_imports_the_sources():
    """Every compiled module, in whichever directory of the package it is."""
    modules = [m.removesuffix(".py").replace("/", ".") for m in COMPILED]
    code = ("import importlib, sys; print(*(importlib.import_module(m).__file__ "
            "for m in sys.argv[1:]))")
    env = dict(os.environ, PERFPARSER_PY_PURE="1")
    files = subprocess.run([sys.executable, "-c", code, *modules], env=env, cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    assert len(files) == len(COMPILED) and [f for f in files if not f.endswith(".py")] == []
    assert _run(["--version"], pure=True).endswith(b"core: interpreted\n")


@pytest.mark.parametrize(("case_dir", "data"), _recordings(),
                         ids=lambda v: v.name if isinstance(v, Path) else v)
def test_corpus_streams_identical(case_dir: Path, data: str):
    args = case_args(case_dir, data)
    assert _run(args, pure=False) == _run(args, pure=True)


PROGRAM = r"""
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>
template <typename K, typename V>
std::map<K, std::vector<V>> group(const std::vector<std::pair<K, V>>& in) {
    std::map<K, std::vector<V>> out;
    for (auto& [k, v] : in) out[k].push_back(v);
    return out;
}
struct Shape { virtual ~Shape() = default; virtual double area() const = 0; };
struct Circle : Shape {
    double r;
    explicit Circle(double r) : r(r) {}
    double area() const override { return 3.14 * r * r; }
};
int main() {
    std::vector<std::unique_ptr<Shape>> shapes;
    for (int i = 0; i < 100; ++i) shapes.push_back(std::make_unique<Circle>(i));
    std::vector<std::pair<std::string, int>> pairs;
    for (int i = 0; i < 50; ++i) pairs.emplace_back(std::to_string(i % 7), i);
    auto g = group(pairs);
    std::function<int(int)> fib = [&](int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); };
    std::sort(pairs.begin(), pairs.end(), [](auto& x, auto& y) { return x.second > y.second; });
    std::ostringstream os;
    os << shapes[3]->area() << g.size() << fib(15) << pairs.front().first;
    return os.str().empty();
}
"""


@pytest.mark.skipif(shutil.which("perf") is None and not os.environ.get("CI"),
                    reason="needs perf (CI has it)")
def test_fresh_compiler_recording_identical(tmp_path: Path):
    src = tmp_path / "prog.cpp"
    src.write_text(PROGRAM)
    data = tmp_path / "gxx.data"
    subprocess.run(["perf", "record", "-N", "-q", "-F", "1999", "--call-graph", "dwarf",
                    "-o", str(data), "--", "g++", "-O2", "-std=c++17", "-c", str(src),
                    "-o", str(tmp_path / "prog.o")],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300)
    args = ["--input", str(data)]
    assert _run(args, pure=False) == _run(args, pure=True)
