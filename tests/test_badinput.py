"""corpus/recorded/badinput: a clear one-line error, upstream's exit code, the decodable part
written as a valid stream, never a traceback or a hang."""

from __future__ import annotations

import pytest

from perfparser_py import protocol as P
from tests.corpus.expect import CORPUS, load_case, run_parser

BAD = CORPUS / "recorded" / "badinput"

# upstream's exit code per file (CLI.md §5: 4 header errors incl. truncated file, 5 data errors)
# and how many samples precede the damage (we emit them; upstream does for 5 only)
EXPECTED = {
    "truncated-midrecord.data": (4, 1),
    "truncated-in-header.data": (4, 0),
    "header-only.data": (4, 0),
    "empty.data": (4, 0),
    "bad-magic.data": (4, 0),
    "data-size-beyond-eof.data": (4, 749),
    "attr-size-zero.data": (5, 0),
    "zero-size-record.data": (5, 10),
    "undersized-record.data": (5, 10),
    "callchain-nr-huge.data": (0, 21),  # the bad sample is skipped (expected_differences)
    "truncated-pipe.data": (5, 249),
    "random-garbage.data": (4, 0),
}


def test_every_bad_file_is_covered():
    files = {e["file"] for e in load_case(BAD)["expect"] if e.get("kind") == "error"}
    assert files == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("via_stdin", [False, True], ids=["file", "stdin"])
def test_bad_input(name: str, via_stdin: bool, tmp_path):
    code, min_samples = EXPECTED[name]
    path = BAD / name
    args = ["--app", str(CORPUS / "recorded" / "fp"), "--kallsyms", "/dev/null",
            "--output", str(tmp_path / "out")]
    if via_stdin:
        with path.open("rb") as stdin:
            res = run_parser(args, timeout=30, stdin=stdin)
    else:
        res = run_parser([*args, "--input", str(path)], timeout=30)
    err = res.stderr.decode()
    assert "Traceback" not in err
    assert res.returncode == code, err
    errors = [line for line in err.splitlines() if line.startswith("perfparser: ")]
    assert len(errors) == 1, err
    stream = P.read_stream((tmp_path / "out").read_bytes())
    samples = [m for m in stream.messages if isinstance(m, P.Sample)]
    assert len(samples) >= min_samples
