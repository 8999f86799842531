"""The package's metadata (issue "Ship it"): an SPDX license with its file, what an index page
shows (readme, authors, keywords, classifiers), and dependencies split into what every run
imports and what is optional or for the tests only."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def _names(requirements: list[str]) -> set[str]:
    return {re.match(r"[A-Za-z0-9_.-]+", r).group().lower() for r in requirements}


def test_the_license_is_an_spdx_expression_with_its_file():
    assert PROJECT["license"] == "GPL-3.0-or-later"
    assert all((REPO / f).is_file() for f in PROJECT["license-files"])
    assert "GNU GENERAL PUBLIC LICENSE" in (REPO / "LICENSE").read_text()[:200]


def test_an_index_page_has_what_it_shows():
    assert (REPO / PROJECT["readme"]).is_file()
    assert PROJECT["authors"] and PROJECT["keywords"] and PROJECT["description"]
    assert any(c.startswith("Programming Language :: Python :: 3.") for c in PROJECT["classifiers"])
    assert "version" in PROJECT["dynamic"]


def test_runtime_dependencies_are_what_a_run_imports():
    runtime = _names(PROJECT["dependencies"])
    assert runtime == {"construct", "zstandard", "lz4"}
    extras = PROJECT["optional-dependencies"]
    # optional speed-ups and fallbacks, each an extra of its own, all in the test extra
    for extra, name in (("rust", "pyderust"), ("fast", "deflate"), ("cxx", "cpp-demangle")):
        assert _names(extras[extra]) == {name}
        assert name in _names(extras["test"])
    assert "pyelftools" in _names(extras["test"])  # the tests' second ELF reader only
