"""Shared fixtures: the corpus is read in place from ../shared/corpus."""

import os
from pathlib import Path

import pytest

# The parser honours DEBUGINFOD_URLS (some distributions set it in login shells): keep tests
# off the network unless a test starts its own local server.
for _name in [n for n in os.environ if n.startswith("DEBUGINFOD_")]:
    del os.environ[_name]

REPO = Path(__file__).resolve().parents[1]
CORPUS = (REPO / ".." / "shared" / "corpus").resolve()


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    assert CORPUS.is_dir(), f"corpus not found at {CORPUS}"
    return CORPUS
