"""Upstream's test vectors, run the way upstream's own test runs them, against expected.txt.

Our text dump must equal upstream's `*.expected.txt` byte for byte, except for the lines of the
checked-in diff next to this file (`<vector>.diff`), each of which is a deliberate fix listed
in tests/expected_differences.md. Any other difference fails, and so does a listed
difference that went away (then the diff file must be updated on purpose).
"""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from perfparser_py import protocol as P
from perfparser_py import textdump
from tests.corpus.expect import CORPUS, run_parser

UPSTREAM = CORPUS / "upstream"
HERE = Path(__file__).resolve().parent
VECTORS = [
    "vector_static_gcc/perf.data",
    "vector_static_gcc/perf.data.zstd",
    "vector_static_gcc/perf.lbr.data",
    "vector_static_clang/perf.data",
    "fork_static_gcc/perf.data.zstd",
    "parallel_static_gcc/perf.data.zstd",
]


def our_text(vector: str) -> str:
    path = UPSTREAM / vector
    res = run_parser(["--input", str(path), "--app", str(path.parent), "--sysroot", ":/",
                      "--debug", "", "--kallsyms", "/dev/null", "--protocol", "1.5"])
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    stream = P.read_stream(res.stdout, "1.5")
    state = textdump.StreamState.from_messages(stream.messages)
    return textdump.normalize_like_upstream_test(textdump.render(state))


def diff_lines(ours: str, expected: str) -> list[str]:
    """Changed lines only (no context, no positions), so the check survives unrelated shifts."""
    return [
        line
        for line in difflib.unified_diff(expected.splitlines(), ours.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


@pytest.mark.parametrize("vector", VECTORS)
def test_vector_matches_expected_except_listed_fixes(vector: str) -> None:
    expected = (UPSTREAM / f"{vector}.expected.txt").read_text()
    got = diff_lines(our_text(vector), expected)
    listed_file = HERE / (vector.replace("/", "_") + ".diff")
    listed = listed_file.read_text().splitlines() if listed_file.exists() else []
    assert got == listed
