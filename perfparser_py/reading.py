"""The reading side of a run: the time-ordering queue's input (`Reading`) and every process's
address space with DWARF unwinding against it (`Spaces`), and what both sides of a split run
agree on about samples. A split run's reading process (parallel.py) imports this and not the
symbolizing and writing stages (pipeline.py), whose imports it would otherwise wait for;
pipeline.Sink extends Spaces on the writing side.
"""

from __future__ import annotations

import os
from functools import partial

from . import probes
from .elf.finder import ElfFinder
from .elf.vdso import VDSO_NAME
from .jitdump import JitDumps
from .kernel.symbols import of_running_kernel
from .ordering import MMAP, TASK, EventQueue
from .perfdata.abi import SAMPLE_REGS_USER, SAMPLE_STACK_USER, TYPE_TRACEPOINT
from .session import KERNEL_PID, Session, is_special
from .unwind.framepointer import callchain_frames
from .unwind.process import process_unwind

CPUMODE_MASK, CPUMODE_USER = 7, 2


def ip_is_user(misc: int, in_kernel: bool) -> bool:
    """Whether a sample's ip is a user-space address: its cpu mode says so, or says nothing
    and the ip lies outside the kernel's mapping."""
    cpumode = misc & CPUMODE_MASK
    return cpumode == CPUMODE_USER or (cpumode == 0 and not in_kernel)


# what Sink.full_sample reads of a SampleEvent it is given the outcome of
FULL_SAMPLE_READS = ("attr", "pid", "tid", "time", "cpu", "ip", "id", "period", "read_values",
                     "callchain", "raw", "branch_stack", "misc")


def recorded_frame_count(e, kernel_range: tuple[int, int]) -> int:
    """How many frames a full sample's recorded call chain and branch stack give (what
    Sink._recorded_frames resolves), without resolving them."""
    if not (e.callchain or e.branch_stack):
        return 0
    klo, khi = kernel_range
    return len(callchain_frames(e.callchain, e.ip, ip_is_user(e.misc, klo <= e.ip < khi),
                                e.branch_stack))


class Spaces:
    """Every process's address space, rebuilt from the time-ordered mmap and task events, and
    DWARF unwinding against it: what both the Sink and, in a split run, the reading process
    (parallel.py) need. It writes no messages."""

    def __init__(self, options, finder) -> None:
        self.options = options
        self.finder = finder
        self.session = Session()
        self.arch = ""  # family of the recorded machine: set_arch()
        self.unwindable = False  # set_arch(): a machine the DWARF unwinder knows
        self.unwinder = None  # (unwind function, rules.cfi_for_image), imported on first use
        self._cfi: dict[int, object] = {}

    def mmap(self, e) -> None:
        self.session.mmap(e, self._find_elf)

    def _find_elf(self, pid: int, path: bytes, build_id: bytes | None, ino: int):
        """The file behind a mapping of `path` (inode `ino`, 0 if not recorded) in process
        `pid`, for Session.mmap: (the local candidate path, its ElfImage), each None when
        there is none."""
        if path == VDSO_NAME:
            # the process's own files say which of the kernel's vDSOs it has (a 32-bit
            # process on a 64-bit kernel: the compat one)
            first = self.session.process(pid).first_image
            return self.finder.find_vdso(
                build_id, None if first is None else (first.is_64, first.e_machine))
        if is_special(path):
            return None, None
        if pid == KERNEL_PID:
            # kernel modules: only the sysroot copy, and only if it is an ELF
            local, image = self.finder.find_kernel_module(path)
            return (local, image) if image is not None else (None, None)
        if build_id and path not in self.finder.build_ids:
            # perf record --buildid-mmap: the mapping names its file's build id, which picks
            # the right copy as the header's build-id table does
            self.finder.build_ids[path] = build_id
        local, image = self.finder.find(path, pid, ino)
        if image is None and not probes.exists(local):
            self._missing(path)
        return local, image

    def _missing(self, path: bytes) -> None:
        """An mmapped file that is not on this machine (the Sink reports it)."""

    def task(self, e) -> None:
        self.session.task(e)

    def unwind_outcome(self, e, proc, recorded: int):
        """What DWARF unwinding of a full SampleEvent gives: None when it has no user stack,
        False when its architecture cannot be unwound, else (lookup addresses leaf first,
        packed as array "Q" bytes, index of the first guessed one). `recorded`: how many
        frames the sample has already (recorded_frame_count)."""
        if not (e.regs_abi and e.stack is not None and len(e.stack)):
            return None
        if not self.unwindable:
            return False
        limit = self.options.max_frames
        if limit != -1:
            # One frame list per sample, as upstream's: unwinding stops once more than
            # --max-frames frames exist, the recorded kernel frames included (SEMANTICS §11.3)
            limit -= recorded
            if limit < 0:
                return b"", 0
        if self.unwinder is None:
            # imported here: frame-pointer and LBR recordings never need the unwinder
            from .unwind.dwarf import unwind
            from .unwind.rules import cfi_for_image

            self.unwinder = unwind, cfi_for_image
        if proc.first_image is None:
            return b"", 0
        state = process_unwind(proc, self._cfi, self.unwinder[1])
        return self.unwinder[0](self.arch, e.regs_abi, e.regs, e.attr.sample_regs_user, e.stack,
                                state.module_at, state.history, limit,
                                self.session.kernel_range, state.steps)

    def set_arch(self, name: str) -> None:
        """The recorded machine's architecture (`uname -m` style, SEMANTICS §11.5)."""
        from .unwind.registers import arch_family, unwinds

        self.arch = arch_family(name) or name
        self.unwindable = unwinds(self.arch)


class Reading:
    """The reading side's handlers of events as read (dispatch.ROUTES' `read`): samples, mmaps
    and task events into the time-ordering queue, and what the others change in its flushing
    mode. `spaces`: the reading side's own address spaces (a split run's reading process,
    which unwinds), kept while `unwinds`; None where the writing side's are the only ones."""

    def __init__(self, queue: EventQueue, jit: JitDumps, spaces: Spaces | None = None,
                 arch_name: str = "") -> None:
        self.queue = queue
        self.jit = jit
        self.spaces = spaces
        self.arch_name = arch_name
        self.unwinds = spaces is not None
        self._attrs: list = []

    def fused_sample(self, e) -> None:
        self.queue.add_sample(e[2], e[9], e)  # time, size

    def sample(self, e) -> None:
        self.queue.add_sample(e.time, e.size, e)

    def mmap(self, e) -> None:
        """A jitdump's MMAP is the dump's functions, at their times, as perf inject --jit
        makes it."""
        code = self.jit.code_events(e) if e.filename.endswith(b".dump") else None
        for c in (e,) if code is None else code:
            self.queue.add(MMAP, c.time, c.size, c)

    def mapping(self, e) -> None:
        self.queue.add(MMAP, e.time, e.size, e)

    def task(self, e) -> None:
        self.queue.add(TASK, e.time, e.size, e)

    def finished_round(self, e) -> None:
        self.queue.finished_round()

    def time_conv(self, e) -> None:
        self.jit.time_conv(e)

    def attr(self, e) -> None:
        self.jit.attr(e.attr)  # the recording's clock
        if e.attr.type == TYPE_TRACEPOINT:
            self.queue.tracepoint_registered()
        self._attrs.append(e.attr)

    def features(self, e) -> None:
        self.queue.perf_version(e.features.version)
        if self.spaces is not None:
            self.arch_name = features_arch(e.features, self.arch_name, self.spaces.finder)

    def data_start(self, e) -> None:
        if self.spaces is not None:
            self.spaces.set_arch(self.arch_name)
            # file mode: every attribute is known before the first record
            self.unwinds = any(a.sample_type & (SAMPLE_REGS_USER | SAMPLE_STACK_USER)
                               for a in self._attrs)


# Split runs: call chains numbered before both processes start afresh (the numbers' tables
# there and Sink's here), and frames in them (deep stacks: 65 k chains of 50 frames would
# be ~130 MB in each process; 32 k frames are ~1.5 MB in each).
CHAIN_IDS = 1 << 16
CHAIN_FRAMES = 1 << 15


def features_arch(f, arch_name: str, finder) -> str:
    """The FEATURES section's part in finding and placing files: the recorded build ids go to
    the finder; returns the architecture name (the ARCH feature when present)."""
    finder.add_build_ids(f.build_ids)
    return f.arch.decode("ascii", "replace") if f.arch else arch_name


def finder_for(options) -> ElfFinder:
    """The finder of the ELF files of a run with `options` (a cli.Options); each process of a
    split run makes its own."""
    finder = ElfFinder(
        app=options.app,
        extra=[p for p in options.extra.split(":") if p],
        sysroot=options.sysroot,
        debug_paths=options.debug_paths(),
        build_ids={},
        use_cache=not options.no_cache,
    )
    finder.of_running_kernel = partial(of_running_kernel, options.kallsyms, options.sysroot)
    return finder


def arch_name(options) -> str:
    """The recorded machine's architecture until the recording says (pipe mode never does)."""
    return options.arch or os.uname().machine
