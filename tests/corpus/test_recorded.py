"""Every [[expect]] of the recorded corpus cases, checked on our parser's output."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from tests.corpus.expect import (
    CORPUS,
    case_args,
    decode,
    evaluate,
    evaluate_inline,
    evaluate_offcpu,
    load_case,
    run_parser,
)

RECORDED = CORPUS / "recorded"
CASES = sorted(p.name for p in RECORDED.iterdir() if (p / "case.toml").is_file() and p.name != "badinput")


@functools.cache
def parsed(case: str, data_name: str):
    res = run_parser(case_args(RECORDED / case, data_name))
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    return decode(res.stdout)


def _expectations():
    for case in CASES:
        manifest = load_case(RECORDED / case)
        for i, e in enumerate(manifest.get("expect", [])):
            kind = e.get("kind", "samples")
            if kind in ("samples", "count", "lost", "offcpu", "inline"):
                yield pytest.param(case, i, id=f"{case}-{e.get('id', i)}")


@pytest.mark.parametrize("case,index", list(_expectations()))
def test_expectation(case: str, index: int) -> None:
    manifest = load_case(RECORDED / case)
    e = manifest["expect"][index]
    data = e.get("data", manifest["recording"]["perf_data"])
    samples, stream = parsed(case, data)
    kind = e.get("kind", "samples")
    if kind == "count":
        counts = manifest["truth"]["counts"]
        assert len(samples) == counts["total_samples"]
        by_event: dict[str, int] = {}
        for s in samples:
            by_event[s.event] = by_event.get(s.event, 0) + 1
        assert by_event == counts["by_event"]
    elif kind == "inline":
        ok, detail = evaluate_inline(e, samples, manifest.get("symbols", {}))
        assert ok, detail
    elif kind == "lost":
        from perfparser_py import protocol as P

        lost = [m for m in stream.messages if isinstance(m, P.Lost)]
        assert sum(m.lost for m in lost) == e["total_lost"]
    elif kind == "offcpu":
        ok, detail = evaluate_offcpu(e, samples, stream, manifest.get("symbols", {}))
        assert ok, detail
    else:
        ok, detail = evaluate(e, samples, manifest.get("symbols", {}))
        assert ok, detail


def test_case_dirs_exist() -> None:
    assert CASES and all(Path(RECORDED / c).is_dir() for c in CASES)
