"""A run of an ordinary recording does not import construct (its header, attrs and feature
sections are read with struct: construct's import costs ~40 M instructions). Runs import
neither the debugger, pickle, traceback and hashlib (OpenSSL) modules that construct pulls in
nor inspect (with ast, dis, tokenize), which construct pulls in: perfparser_py.standins
stands in for them (~13 ms of a start). Nor dataclasses, which imports inspect. What those
libraries use them for still works. Nor typing, whose NamedTuple compiled every field
annotation (perfparser_py.tuples), unless a library needs it (zstandard, for compressed
recordings). The DWARF unwinder and the tracepoint decoder are imported only by
runs that use them. Nor re (with enum: ~4 ms before the fork of a split run): the few
patterns a run matches are spelled out (zstandard imports it, through platform)."""

import subprocess
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
UNUSED = ("construct", "dataclasses", "pdb", "bdb", "pickle", "traceback", "inspect", "ast",
          "dis", "tokenize", "hashlib", "_hashlib")

RUN = """
import sys
from perfparser_py import cli
code = cli.main(["--input", sys.argv[1], "--output", "/dev/null", "--no-cache"])
print(code, sorted(m for m in {unused!r} if m in sys.modules))
"""

LIBRARIES = """
import sys
from perfparser_py.standins import import_construct
import perfparser_py.perfdata, perfparser_py.protocol
import_construct()
import construct, construct.debug, dataclasses, pickle

@dataclasses.dataclass
class NoDoc:
    x: int

print(construct.Pickled.parse(pickle.dumps([1, 2])), NoDoc.__doc__)
print(construct.debug.pdb.post_mortem.__module__, construct.debug.inspect.getsource.__module__)
print(construct.Struct("a" / construct.Byte).compile().parse(b"x").a)
"""


def _recording() -> Path:
    return next(p for p in sorted(CORPUS.glob("recorded/*/perf.data")) if p.stat().st_size > 0)


def test_run_imports_none_of_them(monkeypatch):
    monkeypatch.setenv("PERFPARSER_PY_SPLIT", "0")
    done = subprocess.run([sys.executable, "-c", RUN.format(unused=UNUSED), str(_recording())],
                          capture_output=True, text=True, check=True)
    assert done.stdout.split(None, 1) == ["0", "[]\n"]


def test_rare_records_import_construct_alone(monkeypatch):
    """LOST_SAMPLES records are decoded with construct's declarations: imported then, without
    the modules it imports for what the parser never uses."""
    monkeypatch.setenv("PERFPARSER_PY_SPLIT", "0")
    done = subprocess.run([sys.executable, "-c", RUN.format(unused=UNUSED),
                           str(CORPUS / "recorded" / "lost" / "perf.data")],
                          capture_output=True, text=True, check=True)
    assert done.stdout == "0 ['construct']\n"


UNWINDER = ["perfparser_py.elf.cfi", "perfparser_py.unwind.arches", "perfparser_py.unwind.dwarf",
            "perfparser_py.unwind.expression", "perfparser_py.unwind.memory",
            "perfparser_py.unwind.rules"]
ON_USE = (*UNWINDER, "perfparser_py.tracepoints", "perfparser_py.perfdata.tracing", "typing",
          "re", "enum")


@pytest.mark.parametrize(("case", "imported"), [
    ("fp", []),
    ("dwarf", UNWINDER),
])
def test_unwinder_and_tracepoints_on_use(monkeypatch, case, imported):
    monkeypatch.setenv("PERFPARSER_PY_SPLIT", "0")
    done = subprocess.run([sys.executable, "-c", RUN.format(unused=ON_USE),
                           str(CORPUS / "recorded" / case / "perf.data")],
                          capture_output=True, text=True, check=True)
    assert done.stdout == f"0 {imported}\n"


def test_libraries_still_work_with_them():
    done = subprocess.run([sys.executable, "-c", LIBRARIES], capture_output=True, text=True,
                          check=True)
    pickled, debugger, compiled = done.stdout.splitlines()
    assert pickled == "[1, 2] NoDoc(x: int)"
    assert debugger == "pdb inspect"
    assert compiled == "120"  # compile() names its module by a hashlib digest


@pytest.mark.parametrize("command", ["perfparser", "hotspot-perfparser"])
def test_installed_command_imports_no_re(command):
    """The commands pip installs (what hotspot and tools/bench start) are scripts/perfparser,
    not an entry point's script, which imports re for sys.argv[0] (~5 ms of every start)."""
    script = Path(sys.executable).with_name(command)
    done = subprocess.run([str(script), "--input", str(CORPUS / "recorded" / "fp" / "perf.data"),
                           "--output", "/dev/null", "--no-cache"],
                          env={"PYTHONPROFILEIMPORTTIME": "1", "PERFPARSER_PY_SPLIT": "0",
                               "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:") and "|" in line}
    assert "perfparser_py.cli" in imported
    assert not {"re", "enum"} & imported
