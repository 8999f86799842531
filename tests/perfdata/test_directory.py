"""The merge of a perf.data directory's files (perfdata/directory.py) on made-up streams."""

from __future__ import annotations

from perfparser_py.perfdata import directory
from perfparser_py.perfdata import events as ev


def _comm(time: int, name: bytes, size: int = 40) -> ev.CommEvent:
    return ev.CommEvent(1, 1, name, time, 0, size, 0)


def test_records_come_in_time_order_and_ties_in_file_order() -> None:
    attr = ev.AttrEvent(None, "a", (1,))
    main = [_comm(0, b"main0"), attr, _comm(0, b"main1"), ev.FinishedRoundEvent()]
    part1 = [_comm(5, b"p1-5"), _comm(9, b"p1-9"), ev.FinishedRoundEvent(), _comm(20, b"p1-20")]
    part2 = [_comm(0, b"p2-0"), _comm(5, b"p2-5"), _comm(10, b"p2-10")]
    out = list(directory.merged([iter(main), iter(part1), iter(part2)], [1, 1, 1]))
    # the attribute comes when its file reaches it; per-file round ends are dropped
    assert out[1] is attr
    names = [e.comm for e in out if type(e) is ev.CommEvent]
    assert names == [b"main0", b"main1", b"p2-0", b"p1-5", b"p2-5", b"p1-9", b"p2-10", b"p1-20"]
    assert not any(type(e) is ev.FinishedRoundEvent for e in out)


def test_a_round_ends_after_every_round_bytes_of_records() -> None:
    size = 4096
    n = 3 * directory.ROUND_BYTES // size
    parts = [iter([_comm(2 * k + i, b"x", size) for k in range(n // 2)]) for i in range(2)]
    out = list(directory.merged(parts, [1, 1]))
    rounds = [i for i, e in enumerate(out) if type(e) is ev.FinishedRoundEvent]
    per_round = directory.ROUND_BYTES // size
    assert rounds == [(per_round + 1) * (k + 1) - 1 for k in range(len(rounds))]
    assert len(rounds) == n // per_round


def test_progress_covers_all_files() -> None:
    def part(k: int, size: int) -> list:
        out = []
        for j in range(1, 11):
            out += [_comm(10 * j + k, b"x"), ev.ProgressEvent(j / 10)]
        return out

    out = list(directory.merged([iter(part(0, 100)), iter(part(1, 300))], [100, 300]))
    fractions = [e.fraction for e in out if type(e) is ev.ProgressEvent]
    assert fractions == sorted(fractions) and len(fractions) > 5
    assert abs(fractions[-1] - 1.0) < 1e-9
