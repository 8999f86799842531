"""The bounded CI fuzz job (tests/robustness/fuzzer.py) and checks that its invariants bite.

The CI run is deterministic: executions 0 .. PERFPARSER_FUZZ_EXECS-1 (default 4500, about a
minute and a half on 2 workers: CI's 30 minutes hold the whole suite twice) of seed 1, capped at PERFPARSER_FUZZ_SECONDS (default 600) so a slow
machine still ends. A longer exploration is `tools/fuzz --seconds 3600 --seed N`."""

from __future__ import annotations

import os

import pytest

from perfparser_py import protocol as P
from tests.robustness.fuzzer import check, fuzz, layout, load_seeds

SECONDS = float(os.environ.get("PERFPARSER_FUZZ_SECONDS", "600"))
EXECS = int(os.environ.get("PERFPARSER_FUZZ_EXECS", "4500"))


def test_bounded_fuzz_run_finds_nothing(capsys, tmp_path):
    report = fuzz(SECONDS, seed=1, workers=2, max_execs=EXECS, out_dir=tmp_path,
                  log=lambda _line: None)
    with capsys.disabled():
        print(f"\n{report.summary()} (slowest {report.slowest:.2f} s)")
    assert report.executions > 0
    assert report.slowest < 10
    assert report.failures == []


def test_seeds_are_small_and_parse_back():
    seeds = load_seeds()
    assert len(seeds) >= 10
    for s in seeds:
        assert len(s.data) < 1 << 20, s.name
        assert layout(s.data).records, s.name


def _stream(*messages) -> bytes:
    return P.HEADER + b"".join(P.encode(m) for m in messages)


@pytest.mark.parametrize("code,stderr,output,expect", [
    (0, "", "good", None),
    (5, "perfparser: Malformed record", "good", None),
    (3, "", "good", "undocumented exit code"),
    (5, "Traceback (most recent call last):", "good", "traceback"),
    (5, "perfparser: internal error, please report: X", "good", "internal error"),
    (0, "", "cut", "ends inside a message"),
    (0, "", "undefined", "undefined locations"),
    (0, "", "garbage", "invalid output stream"),
])
def test_invariants_reject_what_they_should(code, stderr, output, expect):
    loc = P.Location(0, 0x1000, -1, 1, -1, -1, -1, -1)
    good = _stream(loc, P.Sample(1, 1, 5, 0, [0], 0, [(0, 1)]))
    data = {"good": good, "cut": good[:-3], "garbage": b"NOT A STREAM AT ALL",
            "undefined": _stream(P.Sample(1, 1, 5, 0, [7], 0, [(0, 1)]))}[output]
    failure = check(code, stderr, b"", data)
    assert (failure is None) if expect is None else (expect in failure), failure


# (seed, index) of past findings, replayed exactly: each once failed an invariant
FINDINGS = [
    (1, 3995),  # DW_AT_ranges decoded with a mutated form: TypeError in the rnglist reader
]


@pytest.mark.parametrize("seed,index", FINDINGS)
def test_past_findings_stay_fixed(seed, index, tmp_path):
    from tests.robustness.fuzzer import make_case, run_case

    case = make_case(load_seeds(), seed, index, tmp_path / "case")
    failure, _elapsed = run_case(case)
    assert failure is None, (failure, case.mutations)
