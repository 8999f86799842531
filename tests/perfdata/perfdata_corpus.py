"""Shared helpers for the perfdata tests: where the corpus is, which files are good input,
and reading a whole input into a list of events."""

from __future__ import annotations

from pathlib import Path

from perfparser_py.perfdata.errors import PerfDataError
from perfparser_py.perfdata.reader import PerfReader
from perfparser_py.source import open_source

CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"


def good_files() -> list[Path]:
    """Every perf.data in the corpus except the deliberately broken ones."""
    found = [p for p in sorted(CORPUS.glob("recorded/*/*.data*")) if "badinput" not in p.parts]
    found += [p for p in sorted(CORPUS.glob("upstream/**/*"))
              if p.is_file() and not p.name.endswith((".txt", ".md")) and
              (p.suffix in (".data", ".zstd", ".file", ".stream") or ".data" in p.name)]
    return found


def corpus_id(path: Path) -> str:
    return str(path.relative_to(CORPUS))


def read_all(source) -> list:
    return list(PerfReader(source).events())


def read_file(path: Path) -> list:
    return read_all(open_source(str(path), None, 0))


def read_until_error(source) -> tuple[list, PerfDataError | None]:
    out: list = []
    try:
        for e in PerfReader(source).events():
            out.append(e)
    except PerfDataError as exc:
        return out, exc
    return out, None
