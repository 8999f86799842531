"""Where a run's unresolved frames are, why, and what makes them resolve: the causes and fixes
stream2text's summary shows (reports.py), and the parser's own end-of-run report, as Error
messages hotspot lists and, at a terminal, as a summary on stderr (issue 22)."""

from __future__ import annotations

import os
from . import probes
from .tuples import named_tuple
UNMAPPED = "[unknown]"  # the "library" of addresses outside every mapping
KERNEL_BINARY = "[kernel.kallsyms]"  # perf's name of the kernel's code
REPORTED = 10  # libraries named in the report, most unresolved frames first
PREFIX = "Unresolved frames: "  # of the report's Error messages
INCOMPLETE_PREFIX = "Debug info incomplete: "  # of those about split DWARF and dwz files


# named tuples, not dataclasses: every run imports this module, and a dataclass costs ~2-4 M
# instructions of the start to make
@named_tuple
class Cause:
    """Why frames have no name, and what makes them resolve."""

    cause: str
    fix: str


KERNEL = Cause("no kernel symbols for the recording's kernel",
               "record as root (or lower kernel.kptr_restrict), or pass the recording "
               "machine's /proc/kallsyms with --kallsyms")
KERNEL_HIDDEN = Cause("the kallsyms read has every address hidden (kernel.kptr_restrict)",
                      "run as root, or pass a /proc/kallsyms read as root on the recording "
                      "machine with --kallsyms")
KERNEL_OTHER = Cause("the recording is of another kernel than this machine's (the build ids "
                     "differ)",
                     "copy /proc/kallsyms from the recording machine (same boot) and pass it "
                     "with --kallsyms")
KERNEL_UNREADABLE = Cause("the kallsyms file could not be read",
                          "pass a readable copy of the recording machine's /proc/kallsyms with "
                          "--kallsyms")
OUTSIDE_MAPPINGS = Cause("address outside every mapping (JIT code or a map recorded too late)",
                         "for JIT runtimes, enable their perf map (e.g. node --perf-basic-prof) "
                         "and pass --perf-map-path if it is not in /tmp")
NOT_FOUND = Cause("file not found on this machine",
                  "pass its directory with --app or --extra, or the recording machine's root "
                  "with --sysroot")
NO_SYMBOLS = Cause("found, without symbols or debug info for these addresses",
                   "install its debug package (-dbgsym / -debuginfo) or set DEBUGINFOD_URLS")
_KERNEL_CAUSES = {"hidden": KERNEL_HIDDEN, "other kernel": KERNEL_OTHER,
                  "unreadable": KERNEL_UNREADABLE}


def is_position_name(name: str) -> bool:
    """Whether `name` only says where its code is: SEMANTICS §10.8's `<section+address>`, also
    a stripped program's function by its start (`<.text+1149>`). Such a frame counts as
    unresolved, in the parser's report and in stream2text's."""
    section, plus, address = name[1:-1].rpartition("+")
    return (name[:1] == "<" and name[-1:] == ">" and bool(section) and bool(plus)
            and bool(address) and all(c in "0123456789abcdef" for c in address))


def cause_of(library: str, kernel: bool, found: bool, kernel_because: str | None = None) -> Cause:
    """Why the frames of one library have no name. `kernel_because`: what the parser knows of
    its kernel symbols (kernel.symbols.KernelSymbols.unnamed_because)."""
    if kernel:
        return _KERNEL_CAUSES.get(kernel_because or "", KERNEL)
    if not library:
        return OUTSIDE_MAPPINGS
    return NO_SYMBOLS if found else NOT_FOUND


def missing_sysroot(sysroot: str) -> str | None:
    """The one warning for a --sysroot that is not a directory (every library would be
    missing, each said on its own line)."""
    if sysroot in ("", "/") or probes.isdir(sysroot):
        return None
    return (f"--sysroot {sysroot} is not a directory: no file of the recording is looked for "
            "there (give the directory holding the recording machine's root file system)")


@named_tuple
class Unresolved:
    """The unresolved frames of one library."""

    library: str  # the binary's name, "" outside every mapping
    path: str  # as recorded
    kernel: bool
    frames: int
    cause: Cause


def end_of_run(counts, emitter, missing: set[bytes], kernel_because: str | None) -> list[Unresolved]:
    """The unresolved frames of a run by library, most first. `counts`: the writer's
    FrameCounts; `missing`: the recorded paths of the files not found."""
    by_key: dict = {}
    for lid, n in counts.unnamed.items():
        key = emitter.unnamed.get(lid)  # None: no Symbol, outside every mapping
        by_key[key] = by_key.get(key, 0) + n
    text = emitter.string_text(i for key in by_key if key is not None for i in key[:2])
    out = []
    for key, n in by_key.items():
        binary, path, kernel = key if key is not None else (-1, -1, False)
        recorded = text.get(path, b"")
        if kernel:
            name = text.get(binary, b"").decode("utf-8", "replace") or KERNEL_BINARY
        else:
            name = (text.get(binary) or os.path.basename(recorded)).decode("utf-8", "replace")
        out.append(Unresolved(name, recorded.decode("utf-8", "replace"), kernel, n,
                              cause_of(name, kernel, recorded not in missing, kernel_because)))
    out.sort(key=lambda u: (-u.frames, u.library))
    return out


def _percent(part: int, whole: int) -> str:
    if not whole:
        return "0.0%"
    share = 100.0 * part / whole
    return "<0.1%" if 0 < share < 0.05 else f"{share:.1f}%"


def library_line(u: Unresolved, frames: int) -> str:
    where = u.library or UNMAPPED
    if u.path and u.path != u.library and not u.kernel:
        where += f" ({u.path})"
    return f"{_percent(u.frames, frames)} of the frames are in {where}: {u.cause.cause}; " \
           f"{u.cause.fix}"


def incomplete_dwarf_lines(incomplete: list[tuple[str, list[bytes], str | None]]) -> list[str]:
    """What the files whose DWARF lacked split units or its supplementary file miss, and
    where those files are looked for (Symbolizer.incomplete_dwarf)."""
    lines = []
    for path, dwos, supplementary in incomplete:
        name = os.path.basename(path)
        if dwos:
            first = os.fsdecode(dwos[0]) + (", ..." if len(dwos) > 1 else "")
            lines.append(f"{name} ({path}): no inline frames in {len(dwos)} of its units: their "
                         f"split DWARF files were not found ({first}); put them beside it or in "
                         "the directory it was built in, pass a directory that has them with "
                         f"--debug, or package them as {name}.dwp (dwp, llvm-dwp)")
        if supplementary:
            lines.append(f"{name} ({path}): no inline frames: the supplementary DWARF file its "
                         f"debug info refers to was not found ({supplementary}); install the "
                         "debug package that has it, or pass the directory it is under with "
                         "--debug")
    return lines


def report(writer, counts, libraries: list[Unresolved], terminal, output: str | None,
           incomplete: list[str] = ()) -> None:
    """Error messages for hotspot (code 2, MissingElfFile's, for libraries, 3 for the kernel)
    and, with `terminal` (stderr at a terminal), one summary line and the same lines.
    `incomplete`: incomplete_dwarf_lines, sent as code 2 too."""
    lines = [(3 if u.kernel else 2, library_line(u, counts.frames))
             for u in libraries[:REPORTED]]
    for code, line in lines:
        writer.error(code, PREFIX + line)
    for line in incomplete:
        writer.error(2, INCOMPLETE_PREFIX + line)
    if terminal is None:
        return
    unresolved = sum(u.frames for u in libraries)
    where = f"stream written to {output}" if output else "stream written to stdout"
    terminal.write(f"perfparser: {counts.samples} samples in {len(counts.pids)} processes, "
                   f"{_percent(unresolved, counts.frames)} of {counts.frames} frames unresolved; "
                   f"{where}\n")
    for _code, line in lines:
        terminal.write(f"perfparser:   {line}\n")
    if len(libraries) > REPORTED:
        terminal.write(f"perfparser:   ... and {len(libraries) - REPORTED} more libraries "
                       "(perfparser-stream2text --summary lists them all)\n")
    for line in incomplete:
        terminal.write(f"perfparser: {INCOMPLETE_PREFIX}{line}\n")
    terminal.flush()
