"""One run: reader events -> ordering -> session -> unwind -> symbolize -> emit.

`run()` wires the stages for the options of one command line. The reader's events go either
straight to the emitter (definitions that upstream sends at parse time: attributes,
features, progress, COMM strings) or through the time-ordering queue, whose sink (`Sink`)
applies mmaps and task events to the session and turns samples into frames and messages.
"""

from __future__ import annotations

import os
import sys

from .elf.image import ElfImage
from .emit import AttributeTable, Emitter
from .ordering import MMAP, SAMPLE, TASK, EventQueue
from .perfdata import events as ev
from .perfdata.attr import generated_name
from .perfdata.errors import PerfDataError
from .perfdata.fast import FusedSample
from .perfdata.tracing import parse_tracing_data
from .session import KERNEL_PID, MISC_COMM_EXEC, Mapping, Session, is_special
from .symbolize import Symbolizer
from .tracepoints import Tracepoints

CPUMODE_MASK, CPUMODE_USER = 7, 2
TRACEPOINT = 2


class Sink:
    """Receives time-ordered events from the queue and produces the messages."""

    def __init__(self, options, emitter: Emitter, attrs: AttributeTable, finder) -> None:
        self.options = options
        self.emit = emitter
        self.writer = emitter.writer
        self.attrs = attrs
        self.finder = finder
        self.session = Session()
        kallsyms = options.kallsyms
        if kallsyms is None:
            kallsyms = options.sysroot + "/proc/kallsyms"
        self.symbolizer = Symbolizer(emitter, kallsyms, options.perf_map_path)
        self.tracepoints = Tracepoints(emitter)
        self.arch = ""  # family of the recorded machine: set_arch()
        self.unwinder = None  # (unwind function, Cfi.for_image) where DWARF unwinding works
        self._arch_warned = False
        self._cfi: dict[int, object] = {}
        self._missing_reported: set[bytes] = set()

    # -- queue sink ----------------------------------------------------------------------
    def time_order_violation(self, time: int, max_time: int) -> None:
        self.writer.error(
            1,
            "Time order violation of MMAP event across buffer flush detected. Event time is "
            f"{time}, max time during last buffer flush was {max_time}. This potentially "
            "breaks the data analysis.",
        )

    def mmap(self, e) -> None:
        path = e.filename
        local = image = None
        bias = None
        if not is_special(path):
            if e.pid == KERNEL_PID:
                # kernel modules: only the sysroot copy, and only if it is an ELF
                local = self.options.sysroot + path.decode("utf-8", "surrogateescape")
                image = ElfImage.open(local)
                if image is None:
                    local = None
            else:
                local, image = self.finder.find(path)
                if image is None and not os.path.exists(local):
                    self._missing(path)
            if image is not None:
                bias = image.load_bias(e.addr, e.pgoff, e.prot)
                if bias is None:
                    image = None  # no PT_LOAD covers this piece: not code we can place
        proc = self.session.process(e.pid)
        base = proc.space.base_for(path, e.addr) if e.pgoff else e.addr
        self.session.add_mapping(
            e.pid, Mapping(e.addr, e.addr + e.len, e.pgoff, path, local, image, bias, base)
        )

    def _missing(self, path: bytes) -> None:
        # Once per file: upstream repeats it for every mmap of the file (every process that
        # maps libc in a -a recording), which only buries the message.
        if path in self._missing_reported:
            return
        self._missing_reported.add(path)
        message = (
            f"Could not find ELF file for {path.decode('utf-8', 'replace')}. "
            "This can break stack unwinding and lead to missing symbols."
        )
        print(f"PerfUnwind::MissingElfFile: {message}", file=sys.stderr)
        self.writer.error(2, message)

    def task(self, item) -> None:
        e = item[0]
        w = self.writer
        kind = type(e)
        if kind is ev.ForkEvent:
            self.session.fork(e.pid, e.ppid, e.time or e.record_time, e.misc)
            w.thread_start(e.pid, e.tid, e.time, e.cpu, e.ppid)
        elif kind is ev.ExitEvent:
            if e.pid == e.tid:
                self.session.exit(e.pid)
            w.thread_end(e.pid, e.tid, e.time, e.cpu)
        elif kind is ev.CommEvent:
            if e.misc & MISC_COMM_EXEC and e.pid == e.tid:
                self.session.exec(e.pid)
            w.command(e.pid, e.tid, e.time, e.cpu, item[1])
        elif kind is ev.LostEvent:
            w.lost(e.pid, e.tid, e.time, e.cpu, e.lost)
        elif kind is ev.SwitchEvent:
            w.context_switch(e.pid, e.tid, e.time, e.cpu, e.switch_out)

    def sample(self, e) -> None:
        if type(e) is not FusedSample:
            self._sample(e)
            return
        # the common frame-pointer case: what _sample does for an event without read values,
        # branch stack, user regs/stack or raw data
        pid, tid, time, cpu, ip, sid, period, callchain, misc, _size = e
        session = self.session
        proc = session.processes.get(pid)
        if proc is None:
            proc = session.process(pid)
        if callchain and proc.perf_map is False:
            # _recorded_frames without its calls (the common case: no perf map to refresh)
            klo, khi = session.kernel_range
            cpumode = misc & CPUMODE_MASK
            frames = self.symbolizer.callchain(
                proc, session.kernel, session.kernel_generation, callchain, ip,
                cpumode == CPUMODE_USER or (cpumode == 0 and not klo <= ip < khi), ())
        else:
            frames, _ = self._recorded_frames(proc, ip, callchain, (), misc)
        if not frames:
            klo, khi = session.kernel_range
            frames = [self._ip_frame(proc, ip, klo <= ip < khi)]
        self.writer.sample_one(pid, tid, time, cpu, frames, self.attrs.attribute_id(sid), period)

    def _recorded_frames(self, proc, ip: int, callchain, branch_stack, misc: int):
        """Frames of the kernel-recorded call chain / LBR stack (shared, do not append) and
        whether the sample ip is a kernel address."""
        session = self.session
        sym = self.symbolizer
        if proc.perf_map is not False:
            sym.prepare(proc)
        klo, khi = session.kernel_range
        in_kernel = klo <= ip < khi
        if not (callchain or branch_stack):
            return [], in_kernel
        cpumode = misc & CPUMODE_MASK
        ip_is_user = cpumode == CPUMODE_USER or (cpumode == 0 and not in_kernel)
        return sym.callchain(proc, session.kernel, session.kernel_generation, callchain, ip,
                             ip_is_user, branch_stack), in_kernel

    def _ip_frame(self, proc, ip: int, in_kernel: bool) -> int:
        """The only frame of a sample without a stack: its ip."""
        return self.symbolizer.frame(self.session.kernel if in_kernel else proc, ip, in_kernel)

    def _sample(self, e) -> None:
        pid = e.pid
        proc = self.session.process(pid)
        ip = e.ip
        frames, in_kernel = self._recorded_frames(proc, ip, e.callchain, e.branch_stack, e.misc)
        guessed = 0
        if e.regs_abi and e.stack is not None and len(e.stack):
            if self.unwinder is not None:
                frames = frames.copy()
                guessed = self._unwind(e, proc, frames)
            elif not self._arch_warned:
                # Upstream aborts (exit 6); we keep the frame-pointer part (expected_differences)
                self._arch_warned = True
                print(f"perfparser: no DWARF unwinding for architecture {self.arch!r}; "
                      "using the recorded call chains only", file=sys.stderr)
        if not frames:
            frames = [self._ip_frame(proc, ip, in_kernel)]
        attrs = self.attrs
        if e.read_values:
            values = [(attrs.attribute_id(i), v) for v, i in e.read_values]
        else:
            values = [(attrs.attribute_id(e.id or 0), e.period or 0)]
        attr = e.attr
        if attr.type == TRACEPOINT:
            format_id, trace_data = self.tracepoints.trace_data(attr.config, e.raw,
                                                                attr.big_endian)
            self.writer.tracepoint_sample(pid, e.tid, e.time, e.cpu, frames, guessed, values,
                                          format_id, trace_data)
        else:
            self.writer.sample(pid, e.tid, e.time, e.cpu, frames, guessed, values)

    def _unwind(self, e, proc, frames: list[int]) -> int:
        unwind, cfi_for = self.unwinder
        if proc.first_image is None:
            return 0
        space = proc.space

        def module_at(pc: int):
            m = space.find(pc)
            if m is None or m.image is None:
                return None
            key = id(m.image)
            cfi = self._cfi.get(key, False)
            if cfi is False:
                cfi = self._cfi[key] = cfi_for(m.image)
            return m.image, m.bias, cfi

        addrs, first_guessed = unwind(self.arch, e.regs_abi, e.regs, e.attr.sample_regs_user,
                                      e.stack, module_at, proc.history,
                                      self.options.max_frames, self.session.kernel_range,
                                      proc.unwind_steps)
        frames += self.symbolizer.unwound(proc, addrs)
        return min(255, max(0, len(addrs) - first_guessed))


    def set_arch(self, name: str) -> None:
        """The recorded machine's architecture (`uname -m` style, SEMANTICS §11.5)."""
        from .unwind.registers import arch_family

        family = arch_family(name)
        self.arch = family or name
        self.unwinder = None
        if family in ("x86", "aarch64", "arm"):
            from .elf.cfi import Cfi
            from .unwind.dwarf import unwind

            self.unwinder = unwind, Cfi.for_image


def run(options, out) -> int:
    """Process one input according to `options`, writing to the binary stream `out`."""
    from .elf.finder import ElfFinder
    from .flavour import choose_flavour
    from .perfdata.reader import PerfReader
    from .protocol import StreamWriter
    from .source import open_source

    stats_mode = options.print_stats
    # someone at a terminal (not hotspot, which reads stderr through a pipe) sees progress
    terminal = sys.stderr if sys.stderr is not None and sys.stderr.isatty() else None
    writer = StreamWriter(out, choose_flavour(options.protocol, os.environ))
    if not stats_mode:
        writer.header()
        writer.flush()
    emitter = Emitter(writer)
    attrs = AttributeTable(None if stats_mode else emitter)
    debug_paths = options.debug
    if debug_paths is None:
        debug_paths = options.sysroot + "/usr/lib/debug:" + os.path.expanduser("~/.debug") + ":.debug"
    finder = ElfFinder(
        app=options.app,
        extra=[p for p in options.extra.split(":") if p],
        sysroot=options.sysroot,
        debug_paths=[p for p in debug_paths.split(":") if p],
        build_ids={},
        use_cache=not options.no_cache,
    )
    if not stats_mode:
        def debuginfo_progress(module: bytes, url: str, numerator: int, denominator: int) -> None:
            writer.debuginfo_progress(emitter.string(module), emitter.string(url), numerator,
                                      denominator)
            writer.flush()  # hotspot shows downloads while they run

        finder.progress = debuginfo_progress
    sink = Sink(options, emitter, attrs, finder)
    queue = EventQueue(None if stats_mode else sink, options.buffer_size, options.max_buffer_size)
    arch_name = options.arch or os.uname().machine  # pipe mode knows no other
    sink.set_arch(arch_name)
    code = 0
    try:
        source = open_source(options.input, options.host, options.port)
        reader = PerfReader(source, fused=True)
        for e in reader.events():
            kind = type(e)
            if kind is FusedSample:
                queue.add_sample(e[2], e[9], e)
            elif kind is ev.SampleEvent:
                queue.add(SAMPLE, e.time, e.size, e)
            elif kind is ev.MmapEvent:
                queue.add(MMAP, e.time, e.size, e)
            elif kind is ev.CommEvent:
                comm_id = -1 if stats_mode else emitter.string(e.comm)
                queue.add(TASK, e.time, e.size, (e, comm_id))
            elif kind in (ev.ForkEvent, ev.ExitEvent, ev.LostEvent, ev.SwitchEvent):
                queue.add(TASK, e.time, e.size, (e,))
            elif kind is ev.FinishedRoundEvent:
                queue.finished_round()
            elif kind is ev.ProgressEvent:
                if not stats_mode:
                    writer.progress(e.fraction)
                if terminal:
                    terminal.write(f"\rperfparser: reading {e.fraction:6.1%}")
                    terminal.flush()
            elif kind is ev.AttrEvent:
                attrs.register(e.attr, e.name or generated_name(e.attr), e.ids)
                if e.attr.type == TRACEPOINT:
                    queue.tracepoint_registered()
            elif kind is ev.TracingDataEvent:
                if not stats_mode:
                    sink.tracepoints.add(parse_tracing_data(e.data))
            elif kind is ev.FeaturesEvent:
                f = e.features
                if f.arch:
                    arch_name = f.arch.decode("ascii", "replace")
                finder.build_ids.update({fn: bid for _pid, bid, fn in f.build_ids})
                if options.kallsyms is None:
                    _kallsyms_from_build_id(sink.symbolizer, finder, f.build_ids)
                queue.perf_version(f.version)
                if not stats_mode:
                    writer.features(_features_message(f, arch_name))
            elif kind is ev.DataStartEvent:
                sink.set_arch(arch_name)  # the ARCH feature, read before any record
    except PerfDataError as err:
        print(f"perfparser: {err}", file=sys.stderr)
        code = err.exit_code
    queue.finish()
    if terminal:
        terminal.write("\rperfparser: done" + " " * 10 + "\n" if code == 0 else "\n")
    finder.save_cache()
    if stats_mode:
        out.write(queue.stats.render().encode())
    writer.flush()
    out.flush()
    return code


def _kallsyms_from_build_id(symbolizer, finder, build_ids) -> None:
    """Without --kallsyms, prefer perf's build-id cache copy of the recording kernel's kallsyms
    (SEMANTICS §10.6) over the sysroot's /proc/kallsyms, which may be another kernel's."""
    from .kernel import Kallsyms

    for _pid, bid, filename in build_ids:
        if filename == b"[kernel.kallsyms]":
            cached = Kallsyms.cached_path(finder.debug_paths, bid)
            if cached:
                symbolizer.kallsyms_path = cached
            return


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
