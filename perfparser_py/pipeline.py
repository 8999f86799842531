"""One run: reader events -> ordering -> session -> unwind -> symbolize -> emit.

`Run` wires the stages for the options of one command line (run.py decides whether it is fed
serially, Run.read, or by a split run, parallel.py). Which handlers an event reaches is
dispatch.ROUTES: `Run` holds the writing side's handlers of events as read (definitions
that upstream sends at parse time: attributes, features, progress, COMM strings),
`Reading` the reading side's (into the time-ordering queue), `Spaces` the address spaces'
and `Sink` those that turn what the queue hands out into frames and messages.
"""

from __future__ import annotations

import os
import sys

from . import dispatch
from .diagnostics import end_of_run, incomplete_dwarf_lines, missing_sysroot, report
from .emit import AttributeTable, Emitter
from .jitdump import JitDumps
from .kernel.symbols import KernelSymbols, OwnCopy
from .ordering import EventQueue
from .perfdata.abi import TYPE_TRACEPOINT
from .perfdata.attr import generated_name
from .reading import CHAIN_IDS, Reading, Spaces, arch_name, features_arch, finder_for, ip_is_user
from .session import KERNEL_PID
from .symbolize import Symbolizer

_UNWIND_HERE = object()  # Sink.full_sample: no outcome given


class Sink(Spaces):
    """Receives time-ordered events from the queue and produces the messages."""

    def __init__(self, options, emitter: Emitter, attrs: AttributeTable, finder,
                 kallsyms_worker=None) -> None:
        super().__init__(options, finder)
        self.emit = emitter
        self.writer = emitter.writer
        self.attrs = attrs
        self.kernel_symbols = KernelSymbols(
            emitter.writer, options.kallsyms, options.sysroot, finder.debug_paths,
            kallsyms_worker, OwnCopy.of_running_kernel(finder.cache, options.kallsyms,
                                                       options.sysroot))
        self.symbolizer = Symbolizer(emitter, self.kernel_symbols, options.perf_map_path)
        self._tracepoints = None
        self._arch_warned = False
        self._read_totals: dict[int, int] = {}  # a PERF_SAMPLE_READ counter's last value, by id
        self.missing_files: set[bytes] = set()  # recorded paths of the files not found
        self._no_sysroot = missing_sysroot(options.sysroot)
        if self._no_sysroot:  # said once, not as one "could not find" line per file
            print(f"perfparser: {self._no_sysroot}", file=sys.stderr)
        self._chain_by_id: dict[int, tuple[int, ...]] = {}  # split runs: define_chain()
        # cid -> (process generation, kernel generation, frames): numbered_sample()
        self._frames_by_id: dict[int, tuple[int, int, list[int]]] = {}
        self.symbolizer.memo_dependents.append(self._frames_by_id)

    @property
    def tracepoints(self):
        """The run's tracepoint formats (a tracepoints.Tracepoints), imported and made on
        first use: most recordings have none."""
        if self._tracepoints is None:
            from .tracepoints import Tracepoints

            self._tracepoints = Tracepoints(self.emit)
        return self._tracepoints

    # -- queue sink ----------------------------------------------------------------------

    def time_order_violation(self, time: int, max_time: int) -> None:
        self.writer.error(
            1,
            "Time order violation of MMAP event across buffer flush detected. Event time is "
            f"{time}, max time during last buffer flush was {max_time}. This potentially "
            "breaks the data analysis.",
        )

    def kernel_mmap(self, e) -> None:
        """An MMAP of the kernel or a kernel module (not a KSYMBOL's or a JIT's)."""
        if e.pid == KERNEL_PID:
            self.kernel_symbols.kernel_mmap(e.filename, e.addr, e.addr + e.len, e.pgoff,
                                           e.build_id)

    def _missing(self, path: bytes) -> None:
        # Once per file: upstream repeats it for every mmap of the file (every process that
        # maps libc in a -a recording), which only buries the message.
        if path in self.missing_files:
            return
        self.missing_files.add(path)
        message = (
            f"Could not find ELF file for {path.decode('utf-8', 'replace')}. "
            "This can break stack unwinding and lead to missing symbols."
        )
        if not self._no_sysroot:
            print(f"PerfUnwind::MissingElfFile: {message}", file=sys.stderr)
        self.writer.error(2, message)

    def thread_start(self, e) -> None:
        self.writer.thread_start(e.pid, e.tid, e.time, e.cpu, e.ppid)

    def thread_end(self, e) -> None:
        self.writer.thread_end(e.pid, e.tid, e.time, e.cpu)

    def command(self, e) -> None:
        # the name's string was defined when the COMM was read (Run.comm)
        self.writer.command(e.pid, e.tid, e.time, e.cpu, self.emit.string(e.comm))

    def lost(self, e) -> None:
        self.writer.lost(e.pid, e.tid, e.time, e.cpu, e.lost)

    def context_switch(self, e) -> None:
        self.writer.context_switch(e.pid, e.tid, e.time, e.cpu, e.switch_out)

    def sample(self, e) -> None:
        """A FusedSample (a plain tuple): the common frame-pointer case, what full_sample
        does for an event without read values, branch stack, user regs/stack or raw data."""
        pid, tid, time, cpu, ip, sid, period, callchain, misc, _size = e
        frames = self._fused_frames(self.session.process(pid), ip, callchain, misc)
        self.writer.sample_one(pid, tid, time, cpu, frames, 0, self.attrs.attribute_id(sid),
                               period)

    def _fused_frames(self, proc, ip: int, callchain, misc: int) -> list[int]:
        frames, in_kernel = self._recorded_frames(proc, ip, callchain, (), misc)
        return frames or [self._ip_frame(proc, ip, in_kernel)]

    def define_chain(self, cid: int, callchain: tuple[int, ...]) -> None:
        """Split runs: the reading process numbered a (pid, call chain, ip, cpu mode) `cid`;
        numbers restart their tables at every multiple of CHAIN_IDS (the reading process
        forgets too, and skips to the next multiple once CHAIN_FRAMES are numbered)."""
        if cid % CHAIN_IDS == 0:
            self._chain_by_id.clear()
            self._frames_by_id.clear()
        self._chain_by_id[cid] = callchain

    def numbered_sample(self, pid: int, tid: int, time: int, cpu: int, ip: int, sid: int,
                        period: int, cid: int, misc: int) -> None:
        """sample() for a fused sample whose non-empty call chain was numbered (define_chain).
        A repeat skips hashing the chain while the frames it gave are valid: neither the
        process's space nor the kernel's has a new generation, and no perf map names them."""
        session = self.session
        proc = session.process(pid)
        hit = self._frames_by_id.get(cid)
        state = proc.symbols
        if (hit is not None and hit[0] == proc.generation
                and hit[1] == session.kernel.generation
                and state is not None and state.perf_map is False):
            frames = hit[2]
        else:
            frames = self._fused_frames(proc, ip, self._chain_by_id[cid], misc)
            self._frames_by_id[cid] = (proc.generation, session.kernel.generation, frames)
        self.writer.sample_one(pid, tid, time, cpu, frames, 0, self.attrs.attribute_id(sid),
                               period)

    def _recorded_frames(self, proc, ip: int, callchain, branch_stack, misc: int):
        """Frames of the kernel-recorded call chain / LBR stack (shared, do not append) and
        whether the sample ip is a kernel address."""
        session = self.session
        sym = self.symbolizer
        state = proc.symbols
        if state is None or state.perf_map is not False:
            sym.prepare(proc)
        klo, khi = session.kernel_range
        in_kernel = klo <= ip < khi
        if proc.before_exec is not None and ip_is_user(misc, in_kernel):
            proc.exec_done()
        if not (callchain or branch_stack):
            return [], in_kernel
        return sym.callchain(proc, session.kernel, callchain, ip, ip_is_user(misc, in_kernel),
                             branch_stack), in_kernel

    def _ip_frame(self, proc, ip: int, in_kernel: bool) -> int:
        """The only frame of a sample without a stack: its ip."""
        return self.symbolizer.frame(self.session.kernel if in_kernel else proc, ip, in_kernel)

    def full_sample(self, e, outcome=_UNWIND_HERE) -> None:
        """A SampleEvent; `outcome` is its unwind_outcome(), computed here unless the reading
        process of a split run did. Given an outcome, it reads no fields but FULL_SAMPLE_READS
        (a split run sends no others)."""
        pid = e.pid
        proc = self.session.process(pid)
        ip = e.ip
        frames, in_kernel = self._recorded_frames(proc, ip, e.callchain, e.branch_stack, e.misc)
        if outcome is _UNWIND_HERE:
            outcome = self.unwind_outcome(e, proc, len(frames))
        guessed = 0
        if outcome is False:
            if not self._arch_warned:
                # Upstream aborts (exit 6); we keep the frame-pointer part (expected_differences)
                self._arch_warned = True
                print(f"perfparser: no DWARF unwinding for architecture {self.arch!r}; "
                      "using the recorded call chains only", file=sys.stderr)
        elif outcome is not None:
            addrs, first_guessed = outcome
            recorded = len(frames)
            frames = self.symbolizer.unwound(proc, frames, addrs)  # one list a stack
            guessed = min(255, max(0, len(frames) - recorded - first_guessed))
        if not frames:
            frames = [self._ip_frame(proc, ip, in_kernel)]
        attrs = self.attrs
        attr = e.attr
        if not e.read_values and attr.type != TYPE_TRACEPOINT:
            self.writer.sample_one(pid, e.tid, e.time, e.cpu, frames, guessed,
                                   attrs.attribute_id(e.id or 0), e.period or 0)
            return
        if e.read_values:
            values = self._read_deltas(e.read_values)
        else:
            values = [(attrs.attribute_id(e.id or 0), e.period or 0)]
        if attr.type == TYPE_TRACEPOINT:
            format_id, trace_data = self.tracepoints.trace_data(attr.config, e.raw,
                                                                attr.big_endian)
            self.writer.tracepoint_sample(pid, e.tid, e.time, e.cpu, frames, guessed, values,
                                          format_id, trace_data)
        else:
            self.writer.sample(pid, e.tid, e.time, e.cpu, frames, guessed, values)


    def _read_deltas(self, read_values) -> list[tuple[int, int]]:
        """(attribute id, value) per PERF_SAMPLE_READ value (`-e '{a,b}:S'`): how much its
        counter (one per event, cpu and thread: its id) grew since the counter's previous
        sample, as perf script and perf report count it. hotspot adds up a sample's values
        as its costs; the counter's running total, which upstream sends, counts every
        earlier sample's share again. A counter that went back (a restart) counts from 0."""
        totals = self._read_totals
        attribute_id = self.attrs.attribute_id
        out = []
        for value, rid in read_values:
            before = totals.get(rid, 0)
            totals[rid] = value
            out.append((attribute_id(rid), value - before if value >= before else value))
        return out


class Run:
    """One run's stages, and the writing side's handlers of events as read (dispatch.ROUTES'
    `now`). The serial path feeds it the reader's events; a split run (parallel.py) feeds it
    what the reading process forwards, in the same order."""

    def __init__(self, options, out, kallsyms_worker=None) -> None:
        from .flavour import choose_flavour
        from .protocol import StreamWriter

        self.options = options
        self.out = out
        self.stats_mode = options.print_stats
        # someone at a terminal (not hotspot, which reads stderr through a pipe) sees progress
        self.terminal = sys.stderr if sys.stderr is not None and sys.stderr.isatty() else None
        self.writer = writer = StreamWriter(out, choose_flavour(options.protocol, os.environ))
        if not self.stats_mode:
            writer.header()
            writer.flush()
        self.emitter = emitter = Emitter(writer)
        self.attrs = AttributeTable(None if self.stats_mode else emitter)
        self.finder = finder = finder_for(options)
        if not self.stats_mode:
            finder.prefetch = True

            def debuginfo_progress(module: bytes, url: str, numerator: int,
                                   denominator: int) -> None:
                writer.debuginfo_progress(emitter.string(module), emitter.string(url),
                                          numerator, denominator)
                writer.flush()  # hotspot shows downloads while they run

            finder.progress = debuginfo_progress
        self.sink = sink = Sink(options, emitter, self.attrs, finder, kallsyms_worker)
        self.queue = EventQueue(
            None if self.stats_mode else dispatch.HandOut(dispatch.on_hand_out(sink, sink),
                                                          sink.time_order_violation),
            options.buffer_size, options.max_buffer_size)
        self.arch_name = arch_name(options)
        self.jit = JitDumps(options.perf_map_path, options.input)
        sink.set_arch(self.arch_name)
        self._on_read = dispatch.on_read(self, Reading(self.queue, self.jit))

    def read(self, source) -> None:
        """Serial path: every event of `source` (a source.py source) as the reader yields it."""
        from .perfdata.reader import PerfReader

        reader_event = self.reader_event
        for e in PerfReader(source, fused=True).events():
            reader_event(e)

    def reader_event(self, e) -> None:
        """Serial path: one event as the reader yields it."""
        handler = self._on_read.get(type(e))
        if handler is not None:
            handler(e)

    def comm(self, e) -> None:
        """A COMM's name is defined when it is read, before the queue hands the COMM out."""
        if not self.stats_mode:
            self.emitter.string(e.comm)

    def progress(self, e) -> None:
        if not self.stats_mode:
            self.writer.progress(e.fraction)
        if self.terminal:
            self.terminal.write(f"\rperfparser: reading {e.fraction:6.1%}")
            self.terminal.flush()

    def attr(self, e) -> None:
        self.attrs.register(e.attr, e.name or self._generated_name(e.attr), e.ids)

    def tracing_data(self, e) -> None:
        if not self.stats_mode:
            from .perfdata.tracing import parse_tracing_data

            self.sink.tracepoints.add(parse_tracing_data(e.data))

    def features(self, e) -> None:
        f = e.features
        self.arch_name = features_arch(f, self.arch_name, self.finder)
        self.sink.kernel_symbols.build_ids(f.build_ids)
        if not self.stats_mode:
            self.writer.features(_features_message(f, self.arch_name))
            self.finder.open_listed(f.build_ids)

    def data_start(self, e) -> None:
        self.sink.set_arch(self.arch_name)  # the ARCH feature, read before any record

    def _generated_name(self, attr) -> str:
        """perf's name for an attr that came without one; a tracepoint's is `system:name`
        from the tracing data (pipe mode sends it before the attrs' first use)."""
        tracepoint = None
        if attr.type == TYPE_TRACEPOINT and not self.stats_mode:
            fmt = self.sink.tracepoints.formats.get(attr.config)
            if fmt is not None:
                tracepoint = (fmt.system + b":" + fmt.name).decode("utf-8", "replace")
        return generated_name(attr, tracepoint)

    def finish(self, code: int) -> int:
        """End of input (or of what could be decoded): flush the queue, write the rest."""
        self.queue.finish()
        if self.terminal:
            self.terminal.write("\rperfparser: done" + " " * 10 + "\n" if code == 0 else "\n")
        self.finder.save_cache()
        if self.stats_mode:
            self.out.write(self.queue.stats.render().encode())
        else:
            counts = self.writer.frame_counts()
            sink = self.sink
            libraries = end_of_run(counts, self.emitter, sink.missing_files,
                                   sink.kernel_symbols.unnamed_because)
            incomplete = incomplete_dwarf_lines(sink.symbolizer.incomplete_dwarf())
            report(self.writer, counts, libraries, self.terminal, self.options.output,
                   incomplete)
        self.writer.flush()
        self.out.flush()
        return code

    def done(self) -> None:
        """The run is over: its handlers of events as read go, and the finder's pending
        debug-file searches. Both are cycles (some handlers are this Run's methods) that only
        the collector would free, and never in a process that runs main() again after
        gc.freeze() (the fuzzer)."""
        self._on_read = None
        self.finder.done()

    def salvage(self) -> None:
        """After an internal error (a bug of ours): write everything decoded before it. The
        queued events go out unless the error broke a flush of the queue; a second error
        while they do only ends that part (the caller reports the first)."""
        if not self.stats_mode:
            if not self.queue.broken:
                try:
                    self.queue.finish()
                except Exception:  # noqa: BLE001 - the same bug again: keep what is out
                    pass
            self.writer.flush()
        self.out.flush()


def _features_message(f, arch_name: str):
    from .protocol import BuildId, Features, GroupDesc, NumaNode, Pmu

    return Features(
        host_name=f.hostname,
        os_release=f.osrelease,
        version=f.version,
        arch=f.arch if f.arch is not None else arch_name.encode(),
        nr_cpus_online=f.nrcpus_online or 0,
        nr_cpus_available=f.nrcpus_avail or 0,
        cpu_desc=f.cpudesc,
        cpu_id=f.cpuid,
        total_mem=f.total_mem or 0,
        cmdline=list(f.cmdline),
        build_ids=[BuildId(*b) for b in f.build_ids],
        sibling_cores=list(f.sibling_cores),
        sibling_threads=list(f.sibling_threads),
        numa_topology=[NumaNode(*n) for n in f.numa_nodes],
        pmu_mappings=[Pmu(*p) for p in f.pmu_mappings],
        group_descs=[GroupDesc(*g) for g in f.group_descs],
    )
