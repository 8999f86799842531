"""--max-frames counts every frame of a sample, the recorded kernel frames too (SEMANTICS
§11.3): DWARF unwinding stops once more than N frames exist, so a sample ends with at most
N + 1 frames, and with none unwound when its kernel part already has more than N. -1 means
no limit; other negatives leave only the sample ip when nothing else is there (CLI.md)."""

from __future__ import annotations

import pytest

from tests.corpus.expect import CORPUS, case_options, decode, run_parser

OFFCPU = CORPUS / "recorded" / "offcpu"  # DWARF user stacks under kernel call chains


def _frames(max_frames: int) -> list[tuple[int, int]]:
    """(kernel frames, user frames) of each sample of the offcpu recording."""
    res = run_parser(["--input", str(OFFCPU / "perf.data"), *case_options(OFFCPU),
                      "--max-frames", str(max_frames)])
    assert res.returncode == 0, res.stderr.decode()
    out = []
    for s in decode(res.stdout)[0]:
        k = sum(f.kernel for f in s.frames)
        out.append((k, len(s.frames) - k))
    return out


@pytest.mark.parametrize("split", ["0", "1"])  # unwound here, or in the reading process
def test_recorded_kernel_frames_count_against_max_frames(split, monkeypatch):
    monkeypatch.setenv("PERFPARSER_PY_SPLIT", split)
    unlimited = _frames(-1)
    # the recording must have what the rule is about: kernel frames above DWARF user frames
    assert any(k >= 4 and u >= 5 for k, u in unlimited)
    for n in (-5, 0, 3, 6):
        limited = _frames(n)
        assert [k for k, _ in limited] == [k for k, _ in unlimited]
        for (k, u_all), (_, u) in zip(unlimited, limited, strict=True):
            wanted = min(u_all, max(0, n + 1 - k)) if n >= 0 else 0
            assert u == (wanted or (1 if k == 0 else 0)), (n, k, u_all, u)
