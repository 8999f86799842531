"""Upstream's test vectors, run the way upstream's own test runs them, against expected.txt.

Our text dump must equal upstream's `*.expected.txt` byte for byte, except for the lines of the
checked-in diff next to this file (`<vector>.diff`), each of which is a deliberate fix listed
in tests/expected_differences.md. Any other difference fails, and so does a listed
difference that went away (then the diff file must be updated on purpose).
"""

from __future__ import annotations

import difflib
import re
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


GOLDEN = CORPUS.parent / "spec" / "golden"


def our_stream(vector: str, tmp_path: Path) -> Path:
    path = UPSTREAM / vector
    out = tmp_path / "ours.qperfstream"
    res = run_parser(["--input", str(path), "--app", str(path.parent), "--sysroot", ":/",
                      "--debug", "", "--kallsyms", "/dev/null", "--protocol", "1.5",
                      "--output", str(out)])
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    return out


def test_cpp_inlining_symbol_ids(tmp_path: Path) -> None:
    """Upstream's testInlineDetection: id 29 is main, id 104 the inlined _Mod::__calc."""
    stream = P.read_stream(our_stream("cpp-inlining/cpp-inlining.perf.data", tmp_path).read_bytes())
    strings = {m.id: m.string for m in stream.messages if isinstance(m, P.String)}
    symbols = {m.id: m for m in stream.messages if isinstance(m, P.Symbol)}
    assert strings[symbols[29].name] == b"main" and not symbols[29].is_inline
    assert strings[symbols[104].name] == (
        b"std::__detail::_Mod<unsigned long, 2147483647ul, 16807ul, 0ul, true, true>"
        b"::__calc(unsigned long)"
    )
    assert symbols[104].is_inline


# vector -> golden stream of upstream's output for it
GOLDENS = {
    "cpp-inlining/cpp-inlining.perf.data": "cpp-inlining_cpp-inlining.perf.data",
    "vector_static_gcc/perf.data": "vector_static_gcc_perf.data",
    "vector_static_clang/perf.data": "vector_static_clang_perf.data",
    "fork_static_gcc/perf.data.zstd": "fork_static_gcc_perf.data.zstd",
    "probe.data.file": "probe.data.file",
    "probe.data.stream": "probe.data.stream",
}


# vector -> (upstream's event name, ours): perf's names in pipe mode (expected_differences 33)
RENAMED = {"probe.data.stream": ("tracepoint: 0x531", "probe_untitled1:main")}
# vector -> its samples in a .plt slot without CFI, whose callers upstream does not find and
# we do (expected_differences 60)
PLT_UNWOUND = {"vector_static_clang/perf.data": 1}


# names of one address in the vectors' static glibc, where perf's choice of alias (ours,
# expected_differences 43) and upstream's first-in-table differ: one name on both sides
ALIASES = [(b"__hypot", b"hypot"), (b"__hypot", b"hypotf32x"),
           (b"__ieee754_hypot", b"__hypot_finite"),
           (b"__libc_start_main_impl", b"__libc_start_main"),
           (b"__memmove_avx_unaligned_erms", b"__memcpy_avx_unaligned_erms"),
           (b"malloc", b"__libc_malloc"), (b"__cabs", b"cabsf64")]
_ONE_NAME = {b: a for a, b in ALIASES}
# the static glibc's IRELATIVE .plt slots: the elfutils the goldens were made with named them
# after the size-0 `_init` of .init before them or gave §10.8's placeholder (expected
# differences 48), we after the IFUNC resolver their relocation names, `__cos@plt` (52)
_PLT_SLOT = re.compile(rb"<\.plt\+[0-9a-f]+>|[\w.]+@plt")


def _one_alias_name(stream_path: Path, out: Path) -> Path:
    """The stream with one name for each pair of ALIASES, and `_init` for a .plt slot."""
    stream = P.read_stream(stream_path.read_bytes())

    def name(s: bytes) -> bytes:
        return b"_init" if _PLT_SLOT.fullmatch(s) else _ONE_NAME.get(s, s)

    out.write_bytes(P.HEADER + b"".join(
        P.encode(P.String(m.id, name(m.string)) if isinstance(m, P.String) else m,
                 stream.flavour)
        for m in stream.messages))
    return out


@pytest.mark.parametrize("vector", sorted(GOLDENS))
def test_same_stacks_as_upstream_golden(vector: str, tmp_path: Path, capsys) -> None:
    """tools/compare in --reference-stream mode: every sample's stack equals upstream's (and
    its event name, but for the listed renames)."""
    import json

    from perfparser_py import compare

    ours = _one_alias_name(our_stream(vector, tmp_path), tmp_path / "ours.aliased")
    golden = _one_alias_name(GOLDEN / f"{GOLDENS[vector]}.qperfstream",
                             tmp_path / "golden.aliased")
    code = compare.main(["--ours-stream", str(ours), "--reference-stream", str(golden),
                         "--json", "--show", "1000"])
    if vector in PLT_UNWOUND:
        report = json.loads(capsys.readouterr().out)
        assert report["differences"] == {"extra frames": PLT_UNWOUND[vector]}
        for d in report["first_differences"]:
            assert d["reference"] == d["ours"][:1] == ["_init [vector_static_clang_v8.0.1] "]
            assert d["ours"][-1].startswith("_start ")
        return
    if vector not in RENAMED:
        assert code == 0
        return
    report = json.loads(capsys.readouterr().out)
    theirs, renamed = RENAMED[vector]
    assert report["differences"] == {"different values": report["samples"]["aligned"]}
    assert all(d["ours"] == d["reference"] for d in report["first_differences"])
    for t in report["threads"]:
        ours_values, reference_values = t["values"]
        assert ours_values == {renamed if k == theirs else k: n
                               for k, n in reference_values.items()}
