"""Shared fixtures: the corpus is read in place from ../shared/corpus."""

import os
import re
from pathlib import Path

import pytest

# The parser honours DEBUGINFOD_URLS (some distributions set it in login shells): keep tests
# off the network unless a test starts its own local server.
for _name in [n for n in os.environ if n.startswith("DEBUGINFOD_")]:
    del os.environ[_name]

# A test that runs a recording the way another test did must run it, not get the stream the
# other stored (tests/test_replay.py turns the replay cache on for itself).
os.environ["PERFPARSER_NO_REPLAY"] = "1"

REPO = Path(__file__).resolve().parents[1]
SHARED = (REPO / ".." / "shared").resolve()
CORPUS = SHARED / "corpus"
# the modules that read ../shared (the corpus, the spec's golden streams), by their text
_READS_SHARED = re.compile(r'"shared"|\bCORPUS\b|\bcorpus_dir\b|\bGOLDEN\b')
_left_out: list[str] = []


def pytest_configure(config) -> None:
    if not SHARED.is_dir() and os.environ.get("PERFPARSER_REQUIRE_CORPUS"):
        raise pytest.UsageError(f"{SHARED} not found, and PERFPARSER_REQUIRE_CORPUS is set "
                                "(CI): the corpus tests must run")


def pytest_ignore_collect(collection_path: Path, config) -> bool | None:
    """Without ../shared (a source tarball), leave out the modules that read it."""
    if SHARED.is_dir() or collection_path.suffix != ".py" or \
            not collection_path.name.startswith("test_"):
        return None
    if _reads_shared(collection_path, set()):
        _left_out.append(str(collection_path.relative_to(REPO)))
        return True
    return None


_TEST_IMPORT = re.compile(r"^\s*(?:from|import)\s+(tests(?:\.\w+)+)", re.M)


def _reads_shared(path: Path, seen: set[Path]) -> bool:
    """Whether the module, or a test helper module it imports, reads ../shared."""
    if path in seen or not path.is_file():
        return False
    seen.add(path)
    text = path.read_text(errors="replace")
    if _READS_SHARED.search(text):
        return True
    return any(_reads_shared(REPO.joinpath(*name.split(".")).with_suffix(".py"), seen)
               for name in _TEST_IMPORT.findall(text))


def pytest_terminal_summary(terminalreporter) -> None:
    if _left_out:
        terminalreporter.write_line(
            f"{len(_left_out)} test modules not run: they read {SHARED}, the shared corpus "
            "and spec, which a source tarball does not have")


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    assert CORPUS.is_dir(), f"corpus not found at {CORPUS}"
    return CORPUS
