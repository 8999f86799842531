"""stream2text's views for people and pipelines: folded stacks, the summary (self and total
shares, call paths, unresolved frames by library), JSON, the sample filters and the
--max-unresolved check."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from perfparser_py import protocol as P
from perfparser_py import reports, textdump

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / ".." / "shared" / "spec" / "golden"
S = 1_000_000_000


def _strings(*names: str) -> list:
    return [P.String(i, n.encode()) for i, n in enumerate(names)]


# strings: 0 prog, 1 main, 2 hot, 3 inl, 4 /bin/prog, 5 prog(binary), 6 libgone.so,
# 7 /lib/libgone.so, 8 kfunc, 9 [kernel.kallsyms]_text, 10 other
STRINGS = _strings("prog", "main", "hot", "inl", "/bin/prog", "prog", "libgone.so",
                   "/lib/libgone.so", "kfunc", "[kernel.kallsyms]_text", "other")


def _loc(i: int, parent: int = -1) -> P.Location:
    return P.Location(i, 0x1000 + i, -1, 1, 0, 0, parent, 0)


def _sym(i: int, name: int, binary: int = 5, path: int = 4, actual: int = 4,
         kernel: bool = False, inline: bool = False) -> P.Symbol:
    return P.Symbol(i, name, binary, path, kernel, 0, 0, actual, inline)


def _state(tmp_path: Path) -> textdump.StreamState:
    """Process 1 (prog): main > hot (hot with an inlined `inl`) x3, main > [libgone] x1;
    process 2 (other, tid 3): a kernel frame without a name under main, once."""
    prog = tmp_path / "prog"
    prog.write_bytes(b"\x7fELF")  # "found": the stream's actual path exists here
    strings = list(STRINGS)
    strings[4] = P.String(4, str(prog).encode())
    msgs = [*strings,
            P.Command(1, 1, 0, 0, 0), P.Command(2, 3, 0, 0, 10),
            # main: leaf 0 -> function 1
            _loc(0, parent=1), _loc(1), _sym(1, 1),
            # hot with inl inlined: leaf 2 -> inline 3 -> call site 4 -> function 5
            _loc(2, parent=3), _loc(3, parent=4), _sym(3, 3, inline=True), _loc(4, parent=5),
            _loc(5), _sym(5, 2),
            # a frame in libgone.so, not found and without a name
            _loc(6), _sym(6, -1, binary=6, path=7, actual=7),
            # a kernel frame without a name
            _loc(7), _sym(7, -1, binary=-1, path=9, actual=-1, kernel=True),
            # an address outside every mapping: no symbol at all
            _loc(8)]
    for i in range(3):
        msgs.append(P.Sample(1, 1, (10 + i) * S, 0, [2, 0], 0, []))
    msgs.append(P.Sample(1, 1, 20 * S, 0, [6, 0], 0, []))
    msgs.append(P.Sample(2, 3, 30 * S, 0, [7, 8, 0], 0, []))
    return textdump.StreamState.from_messages(msgs)


def test_frames_expand_inline_chains_innermost_first(tmp_path):
    stacks = list(reports.Stacks(_state(tmp_path)))
    assert [f.name for f in stacks[0][1]] == ["inl", "hot", "main"]
    assert [f.name for f in stacks[4][1]] == ["??", "??", "main"]
    kernel, unmapped = stacks[4][1][:2]
    assert kernel.kernel and kernel.library == "[kernel.kallsyms]"
    assert unmapped.library == "" and not unmapped.kernel


def test_folded_stacks_outermost_first_with_counts(tmp_path):
    text = reports.folded(reports.Stacks(_state(tmp_path)))
    assert text.splitlines() == [
        "other;main;[unknown];[[kernel.kallsyms]] 1",
        "prog;main;[libgone.so] 1",
        "prog;main;hot;inl 3",
    ]


def test_summary_self_total_paths_and_causes(tmp_path):
    data = reports.analyse(reports.Stacks(_state(tmp_path)))
    # frames: the stacks' entries (inline chains not expanded), as the parser counts them
    assert (data["samples"], data["frames"], data["unresolved_frames"]) == (5, 11, 3)
    prog = data["processes"][0]
    assert (prog["pid"], prog["samples"], prog["percent"]) == (1, 4, 80.0)
    by_name = {f["name"]: f for f in prog["functions"]}
    assert (by_name["inl"]["self_percent"], by_name["inl"]["total_percent"]) == (75.0, 75.0)
    assert (by_name["main"]["self_percent"], by_name["main"]["total_percent"]) == (0.0, 100.0)
    assert prog["functions"][0]["name"] == "inl"
    assert prog["paths"][0] == {"frames": ["main", "hot", "inl"], "truncated": False,
                                "samples": 3, "percent": 75.0}
    causes = {u["library"]: u for u in data["unresolved_by_library"]}
    assert "not found" in causes["libgone.so"]["cause"]
    assert "--app" in causes["libgone.so"]["fix"]
    assert "--kallsyms" in causes["[kernel.kallsyms]"]["fix"]
    assert "outside every mapping" in causes["[unknown]"]["cause"]
    text = reports.summary_text(data)
    assert "pid 1 (prog): 4 samples (80.0%), 12.5% of 8 frames unresolved" in text
    assert "   75.0%  75.0%  inl [prog]" in text
    assert "   75.0%  main > hot > inl" in text
    assert "libgone.so: file not found on this machine;" in text


def test_a_found_library_without_symbols_says_to_install_debug_info(tmp_path):
    state = _state(tmp_path)
    lib = tmp_path / "libgone.so"
    lib.write_bytes(b"\x7fELF")
    state.strings[7] = str(lib)
    data = reports.analyse(reports.Stacks(state))
    cause = next(u for u in data["unresolved_by_library"] if u["library"] == "libgone.so")
    assert "without symbols" in cause["cause"] and "DEBUGINFOD_URLS" in cause["fix"]


@pytest.mark.parametrize(("selection", "times"), [
    (reports.Selection(pids=frozenset({2})), [30]),
    (reports.Selection(tids=frozenset({1})), [10, 11, 12, 20]),
    (reports.Selection(comms=frozenset({"other"})), [30]),
    (reports.Selection(start_ns=11 * S, end_ns=20 * S), [11, 12, 20]),
    (reports.Selection(start_ns=21 * S), [30]),
])
def test_selection_filters_samples(tmp_path, selection, times):
    got = [smp.time // S for smp, _ in reports.Stacks(_state(tmp_path), selection)]
    assert got == times


def test_time_ranges_parse_like_perf_script():
    assert reports.parse_time_range("1.5,2") == (1_500_000_000, 2 * S)
    assert reports.parse_time_range(",2.000000001") == (None, 2 * S + 1)
    assert reports.parse_time_range("3,") == (3 * S, None)
    for bad in ("3", "a,b", "1.2.3,"):
        with pytest.raises(ValueError):
            reports.parse_time_range(bad)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perfparser_py.textdump", *args],
                          capture_output=True, text=True, cwd=REPO)


GOLDEN_FORK = str(GOLDEN / "fork_static_gcc_perf.data.zstd.qperfstream")


def test_cli_folded_counts_every_sample():
    r = run_cli("--folded", GOLDEN_FORK)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert sum(int(ln.rsplit(" ", 1)[1]) for ln in lines) == 106
    assert all(ln.startswith("fork;") for ln in lines)


def test_cli_summary_json_and_filters():
    r = run_cli("--summary", "--json", "--pid", "18175", GOLDEN_FORK)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["samples"] == 106 and data["processes"][0]["comm"] == "fork"
    r = run_cli("--summary", "--json", "--pid", "1", GOLDEN_FORK)
    assert json.loads(r.stdout)["samples"] == 0
    r = run_cli("--tid", "1", GOLDEN_FORK)
    assert r.returncode == 0 and r.stdout == ""


def test_cli_max_unresolved_sets_the_exit_status(tmp_path):
    # a recording from another machine, parsed without --app: its two binaries are missing
    case = REPO / ".." / "shared" / "corpus" / "recorded" / "sharedlib"
    stream = tmp_path / "s.qperfstream"
    parsed = subprocess.run([sys.executable, "-m", "perfparser_py.cli", "--no-cache",
                             "--input", str(case / "perf.data"), "--output", str(stream)],
                            capture_output=True, cwd=tmp_path)
    assert parsed.returncode == 0, parsed.stderr
    over = run_cli("--summary", "--max-unresolved", "50", str(stream))
    assert over.returncode == 1
    assert "frames unresolved, more than the 50% allowed" in over.stderr
    assert "libhot.so: file not found on this machine; pass its directory with --app" \
        in over.stdout
    assert run_cli("--summary", "--max-unresolved", "100", str(stream)).returncode == 0
    ok = run_cli("--max-unresolved", "0", GOLDEN_FORK)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("fork\t")  # the check goes with any view


def test_cli_json_needs_summary():
    r = run_cli("--json", GOLDEN_FORK)
    assert r.returncode == 2 and "--json goes with --summary" in r.stderr


def test_paths_of_other_lengths_with_equal_counts_sort():
    """A path that is a prefix of a longer one, both once: the sort compared the short
    path's truncation flag with the long one's next name (TypeError on a -a recording)."""
    p = reports._Process("x")
    p.samples = 2
    p.paths[("a", False)] += 1
    p.paths[("a", "b", True)] += 1
    paths = reports._process_data(1, p, 2)["paths"]
    assert [x["frames"] for x in paths] == [["a"], ["a", "b"]]


@pytest.mark.parametrize("name", ["<.text+1149>", "<.init+1000>", "<.plt.sec+4f0>",
                                  "<my_section+20>"])
def test_a_name_that_only_says_where_the_code_is_is_unresolved(name):
    """As the parser's end-of-run report counts it: a stripped program's function, an
    address of a section without symbols."""
    assert not reports.Frame(name, "p", "/bin/p", True, False).resolved
    assert reports.Frame("puts@plt", "p", "/bin/p", True, False).resolved
    assert reports.Frame("operator<<", "p", "/bin/p", True, False).resolved
