"""StreamWriter.sample_one (the fast path of single-value samples) writes what sample() writes."""

from __future__ import annotations

import io

import pytest

from perfparser_py.protocol import FLAVOURS, StreamWriter

CASES = [
    (1, 2, 3, 0, [5, 6, 7], 0, 0, 1000),
    (-1, -1, 1 << 63, 7, [0], 2, 3, 1),
    (4, 4, 9, 1, [], 0, -1, 0),
    (4, 4, 9, 1, [1 << 31, 2], 1, 0, 5),  # frame id out of int32 range: the schema path wraps
    (4, 4, 9, 1, [1, 2], 0, 0, (1 << 64) + 3),  # value out of range
    (1 << 40, 4, 9, 1, [1, 2], 0, 0, 3),  # pid out of range
    (1, 2, 3, 0, [5, 6, 7], 255, 0, 1000),  # guessed: the last frames came from the history
]


def _bytes(flavour: str, use_one: bool, cases) -> bytes:
    out = io.BytesIO()
    w = StreamWriter(out, flavour)
    for pid, tid, time, cpu, frames, guessed, aid, value in cases:
        if use_one:
            w.sample_one(pid, tid, time, cpu, frames, guessed, aid, value)
        else:
            w.sample(pid, tid, time, cpu, frames, guessed, ((aid, value),))
    w.flush()
    return out.getvalue()


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_sample_one_equals_sample(flavour):
    shared = [9, 8, 7, 6]  # one list handed out again and again, as the call-chain memo does
    cases = CASES + [(1, 1, t, 0, shared, t % 3, 0, t) for t in range(5)]
    assert _bytes(flavour, True, cases) == _bytes(flavour, False, cases)
    assert len(_bytes(flavour, True, cases)) > 0
