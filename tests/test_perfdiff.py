"""tools/perfdiff's comparison rules on hand-made stacks (no perf needed)."""

from __future__ import annotations

from tests.e2e.test_perf_diff import perfdiff

LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"


def _aliases(table: dict[str, str]):
    aliases = perfdiff.Aliases(None)
    aliases._tables[LIBC] = table
    return aliases


def test_perfs_perf_map_dso_is_our_anonymous_mapping() -> None:
    """perf files an anonymous executable mapping (JIT code) under /tmp/perf-PID.map even
    when there is no such file: the same unresolved frame as ours in `//anon`."""
    perf = [perfdiff._perf_frame(0x7F00, "[unknown]", "/tmp/perf-123.map")]
    ours = [perfdiff.Frame(None, perfdiff._binary("//anon"), "//anon")]
    rep = perfdiff.compare("jit", [perfdiff.Stack(1, 5, "x", ours)],
                           [perfdiff.Stack(1, 5, "x", perf)], _aliases({}))
    assert rep.identical == 1


def test_perfs_vdso32_is_the_vdso_mapping() -> None:
    """perf calls a 32-bit process's vDSO [vdso32]; its mapping, which ours names the frame
    after, is [vdso]: both unresolved there, the same frame. Another binary is not."""
    ours = [perfdiff.Frame(None, perfdiff._binary("[vdso]"), "[vdso]")]
    for dso, same in (("[vdso32]", 1), ("[vdsox32]", 1), ("[vdso]", 1), ("/lib/libc.so.6", 0)):
        perf = [perfdiff._perf_frame(0xF7F00000, "[unknown]", dso)]
        rep = perfdiff.compare("m32", [perfdiff.Stack(1, 5, "x", ours)],
                               [perfdiff.Stack(1, 5, "x", perf)], _aliases({}))
        assert rep.identical == same, dso


def test_a_thread_entry_counts_by_its_own_name_not_its_alias_class() -> None:
    """libc's clone3 shares its address with `__GI___clone3`, which the alias table picks as
    the class's name: ours ending at clone3 still reaches the thread's entry."""
    leaf = perfdiff.Frame("work", "prog", "/prog")
    clone3 = perfdiff.Frame("clone3", "libc.so.6", LIBC)
    ours = [leaf, perfdiff.Frame("start_thread", "libc.so.6", LIBC), clone3]
    perf = [leaf, perfdiff.Frame(None, "", "")]
    rep = perfdiff.compare("threads", [perfdiff.Stack(1, 5, "x", ours)],
                           [perfdiff.Stack(1, 5, "x", perf)],
                           _aliases({"clone3": "__GI___clone3", "__GI___clone3": "__GI___clone3"}))
    assert rep.perf_stopped_early == 1 and rep.agreeing == 1


def test_a_stripped_executables_start_is_the_entry() -> None:
    """Below __libc_start_main there is only the executable's `_start`, nameless when the
    executable is stripped (Debian's gzip, gcc): perf stopping at main's caller agrees."""
    libc = [perfdiff.Frame(n, "libc.so.6", LIBC)
            for n in ("__libc_start_call_main", "__libc_start_main")]
    exe = perfdiff.Frame(None, "gzip", "/usr/bin/gzip")
    ours = [exe, exe, *libc, exe]
    perf = [exe, exe, libc[0]]
    rep = perfdiff.compare("stripped", [perfdiff.Stack(1, 5, "x", ours)],
                           [perfdiff.Stack(1, 5, "x", perf)], _aliases({}))
    assert rep.perf_stopped_early == 1
    # ours ending in an unresolved frame anywhere else is no entry
    rep = perfdiff.compare("stripped", [perfdiff.Stack(1, 5, "x", ours[:3] + [exe])],
                           [perfdiff.Stack(1, 5, "x", perf)], _aliases({}))
    assert rep.perf_stopped_early == 0


def test_perf_naming_a_plt_entry_after_a_size_0_symbol_agrees() -> None:
    """perf 6.1 stretches the size-0 `_init` over the .plt.sec after it: where ours has
    `strlen@plt` and perf `_init` of the same file, the stacks agree (not identical); any
    other name of perf's there still differs. perf 6.1 has no name for an IFUNC's slot
    (`@plt`, no name once normalized): that agrees too."""
    exe = "/prog"
    main = perfdiff.Frame("main", "prog", exe)
    ours = [perfdiff.Frame("strlen", "prog", exe, True), main]
    aliases = _aliases({})
    aliases._sizeless[exe] = {"_init"}
    assert perfdiff.normalize("@plt") is None
    for perf_name, agrees in (("_init", True), ("other", False), (None, True)):
        perf = [perfdiff.Frame(perf_name, "prog", exe), main]
        rep = perfdiff.compare("plt", [perfdiff.Stack(1, 5, "x", ours)],
                               [perfdiff.Stack(1, 5, "x", perf)], aliases)
        assert (rep.identical, rep.agreeing) == (0, int(agrees))


def test_perf_without_a_name_for_the_signal_trampoline_agrees() -> None:
    """A handler returns to libc's `__restore_rt`; perf looks that frame up at its address
    less one, before the symbol, and has no name: agreeing, not identical. perf without a
    name for any other frame still differs."""
    handler = perfdiff.Frame("handler", "prog", "/prog")
    main = perfdiff.Frame("main", "prog", "/prog")
    nameless = perfdiff.Frame(None, "libc.so.6", LIBC)
    for ours_name, agrees in (("__restore_rt", True), ("memcpy", False)):
        ours = [handler, perfdiff.Frame(ours_name, "libc.so.6", LIBC), main]
        rep = perfdiff.compare("signal", [perfdiff.Stack(1, 5, "x", ours)],
                               [perfdiff.Stack(1, 5, "x", [handler, nameless, main])],
                               _aliases({}))
        assert (rep.identical, rep.agreeing) == (0, int(agrees))
    # the other frames compare as frames do: an unresolved one by its binary, not its path
    ours = [handler, perfdiff.Frame("__restore_rt", "libc.so.6", LIBC),
            perfdiff.Frame(None, "prog", "/prog")]
    perf = [handler, nameless, perfdiff.Frame(None, "prog", "/usr/local/bin/prog")]
    rep = perfdiff.compare("signal", [perfdiff.Stack(1, 5, "x", ours)],
                           [perfdiff.Stack(1, 5, "x", perf)], _aliases({}))
    assert (rep.identical, rep.agreeing) == (0, 1)


def test_perf_stopping_past_the_trampoline_of_a_handler_on_its_own_stack_agrees() -> None:
    """A handler on a sigaltstack: perf's copy of that stack holds the trampoline's frame and
    the interrupted function, none of their callers. Ours goes on to the thread's entry:
    agreeing, as long as perf's frames are ours and ours reach the entry."""
    handler = perfdiff.Frame("handler", "prog", "/prog")
    work = perfdiff.Frame("work", "prog", "/prog")
    nameless = perfdiff.Frame(None, "libc.so.6", LIBC)
    restore = perfdiff.Frame("__restore_rt", "libc.so.6", LIBC)
    entry = [perfdiff.Frame("main", "prog", "/prog"),
             perfdiff.Frame("__libc_start_main", "libc.so.6", LIBC),
             perfdiff.Frame("_start", "prog", "/prog")]
    for ours, agrees in (([handler, restore, work, *entry], True),
                         ([handler, restore, work, *entry[:1]], False),
                         ([handler, restore, handler, *entry], False)):
        rep = perfdiff.compare("altstack", [perfdiff.Stack(1, 5, "x", ours)],
                               [perfdiff.Stack(1, 5, "x", [handler, nameless, work])],
                               _aliases({}))
        assert (rep.identical, rep.agreeing) == (0, int(agrees)), ours


def test_perfs_copies_of_a_read_group_sample_are_one_sample() -> None:
    """`-e '{cpu-clock,task-clock}:S'`: perf prints the leader's sample once per member, one
    stack each; ours is one sample with both values. A copy with another stack still counts
    as a sample only perf has."""
    main = [perfdiff.Frame("main", "prog", "/prog")]
    other = [perfdiff.Frame("other", "prog", "/prog")]
    perf = [perfdiff.Stack(1, 5, "x", main), perfdiff.Stack(1, 5, "x", list(main)),
            perfdiff.Stack(1, 9, "x", main), perfdiff.Stack(1, 9, "x", other)]
    ours = [perfdiff.Stack(1, 5, "x", main), perfdiff.Stack(1, 9, "x", main)]
    rep = perfdiff.compare("group", ours, perf, _aliases({}))
    assert (rep.perf, rep.matched, rep.identical) == (3, 2, 2)
    assert rep.classes == {"sample only in perf": 1}


def test_a_sample_without_a_call_chain_is_read(tmp_path) -> None:
    """Without a call chain perf prints a sample on one line, its comm padded on the left."""
    fake = tmp_path / "perf"
    fake.write_text("#!/bin/sh\ncat <<'E'\n"
                    "               w  3394/3396  23668.047620577:      56450b1f62c7 spin"
                    " (/work/w)\n"
                    "w  3394/3394  23668.047877000: \n"
                    "\t    56450b1f62d0 spin (/work/w)\n"
                    "\t    56450b1f6100 main (/work/w)\n\nE\n")
    fake.chmod(0o755)
    stacks = perfdiff.perf_stacks("unused.data", str(fake))
    assert [(s.comm, s.tid, s.time, [f.name for f in s.frames]) for s in stacks] == [
        ("w", 3396, 23668047620577, ["spin"]), ("w", 3394, 23668047877000, ["spin", "main"])]


def test_perfs_empty_call_chain_and_our_ip_frame_agree() -> None:
    """`--kernel-callchains` gives a user-mode sample an empty call chain: perf prints no
    frame, ours the sample's ip. Two frames of ours against none still differ."""
    spin = perfdiff.Frame("spin", "w", "/w")
    rep = perfdiff.compare("chain", [perfdiff.Stack(1, 5, "x", [spin]),
                                     perfdiff.Stack(1, 6, "x", [spin, spin])],
                           [perfdiff.Stack(1, 5, "x", []), perfdiff.Stack(1, 6, "x", [])],
                           _aliases({}))
    assert (rep.perf_no_chain, rep.agreeing, rep.identical) == (1, 1, 0)


def test_ours_stopping_at_hotspots_max_frames_agrees() -> None:
    """A stack deeper than hotspot's --max-frames: ours stops once more than 1024 frames exist,
    its kernel frames counted; perf (told --max-stack 1025) limits the user frames alone, so
    it may go on. Ours one frame short of the limit, or different on the way, still differs."""
    rec = perfdiff.Frame("rec", "deep", "/deep")
    kernel = perfdiff.Frame("irq", perfdiff.KERNEL, "")
    limit = perfdiff.MAX_FRAMES + 1
    ours = [kernel] * 4 + [rec] * (limit - 4)
    perf = [kernel] * 4 + [rec] * limit
    rep = perfdiff.compare("deep", [perfdiff.Stack(1, 5, "x", ours),
                                    perfdiff.Stack(1, 6, "x", ours[:-1]),
                                    perfdiff.Stack(1, 7, "x", ours[:-1] + [kernel])],
                           [perfdiff.Stack(1, t, "x", perf) for t in (5, 6, 7)], _aliases({}))
    assert (rep.ours_at_max_frames, rep.agreeing, rep.identical) == (1, 1, 0)
