"""StreamWriter, which the emit stage calls once per message, and the fast paths of its
hottest messages (Sample, Location): one struct pack per message instead of the schema walk
of layout.py, each checked against that layout at start-up.

Compiled (setup.py) with the C types of writer.pxd.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence

from ..tuples import TYPE_CHECKING
from .layout import _LAYOUTS, _U32LE, FLAVOURS, HEADER, _Layout

if TYPE_CHECKING:
    from typing import BinaryIO

    from .values import Features, Variant

_F32 = struct.Struct("<f")
_FLUSH_AT = 1 << 16


class OutputError(Exception):
    """The stream could not be written (ENOSPC, EIO, ...); the message is the system's."""


# ------------------------------------------------------------- Sample fast path (hot)

# (number of frames, number of values) -> (Struct.pack of the payload, its length prefix)
_SAMPLE_PACKERS: dict[tuple[int, int], tuple[Callable[..., bytes], bytes]] = {}


def _sample_frame(type_id: int, pid: int, tid: int, time: int, cpu: int,
                  frames: Sequence[int], guessed: int,
                  values: Sequence[tuple[int, int]]) -> bytes:
    """Sample message (length prefix included) without the schema walk: one struct pack per
    shape; struct.error when a value needs wrapping."""
    n = len(frames)
    nv = len(values)
    packer = _SAMPLE_PACKERS.get((n, nv))
    if packer is None:
        if len(_SAMPLE_PACKERS) >= 4096:  # frame counts come from the input: stay bounded
            _SAMPLE_PACKERS.clear()
        st = struct.Struct(f">BiiQII{n}iBI" + "iQ" * nv)
        packer = _SAMPLE_PACKERS[n, nv] = (st.pack, _U32LE.pack(st.size))
    pack, prefix = packer
    if nv == 1:
        (a, v), = values
        return prefix + pack(type_id, pid, tid, time, cpu, n, *frames, guessed, 1, a, v)
    return prefix + pack(type_id, pid, tid, time, cpu, n, *frames, guessed, nv,
                         *[x for pair in values for x in pair])


# sample_one's message, what _sample_frame packs, from its cached pieces: u32le size (4s) |
# type, pid, tid, time, cpu | frame count and frames (packed once per frames list, s) |
# guessed, value count, (attribute id, value); one Struct per frame count
_SAMPLE_ONE = ">4sBiiQI{}sBIiQ"
# the size a message of no frames says: the frame count counts, the size prefix does not
_SAMPLE_FIXED_SIZE = struct.calcsize(_SAMPLE_ONE.format(4)) - 4
_SAMPLE_ONE_PACKERS: dict[int, Callable[..., bytes]] = {}
# frames in sample_one's cache (each entry counting one more), which keeps the lists alive:
# the distinct stacks of a real program grow with its samples
_MAX_PACKED_FRAMES = 1 << 16


def _fast_sample_type(lay: _Layout | None) -> int | None:
    """The Sample type id if this flavour's layout encodes exactly like _sample_frame."""
    if lay is None:
        return None
    for probe in ((-1, 7, 1 << 40, 3, [0, -5, 9], 2, [(1, 1 << 63), (-1, 5)]),
                  (5, 6, 7, 0, [], 0, [(0, 3)])):
        if _sample_frame(lay.type_id, *probe) != lay.frame(probe):
            return None
    return lay.type_id


# ------------------------------------------------------------ Location fast path (hot)
# Every first resolution of an address writes a Location (Symbols and Strings are ~50x
# rarer and keep the schema path): one Struct call instead of the schema walk. The format
# is checked against the schema layout at start-up, so a flavour that encodes differently
# keeps the schema path. pid is packed as "i" although the field is a quint32: the same
# bytes for every value that fits, and a larger one raises struct.error, sending it to the
# schema path that wraps values.

# prefix (size, type), id, address, file, pid, line, column, parent, rel_addr
_LOCATION = struct.Struct(">5siQiiiiiQ")


def _fast_location_prefix(lay: _Layout | None) -> bytes | None:
    """The 5-byte prefix (size, type) for _LOCATION if it frames like this flavour's
    layout, else None."""
    if lay is None:
        return None
    prefix = _U32LE.pack(_LOCATION.size - 4) + bytes((lay.type_id,))
    for probe in ((0, 1 << 63, -1, -1, 0, 7, -1, 0), (5, 0, 3, 1 << 30, -2, 1 << 20, 4, 9)):
        if _LOCATION.pack(prefix, *probe) != lay.frame(probe):
            return None
    return prefix


# ----------------------------------------------------------- what the samples referenced

# What the stream has said of a location (the emitter keeps these bits per location id): it
# has a Symbol of its own; it has a name, its own or, for a location without a Symbol, its
# parent's (PROTOCOL §6.2)
HAS_SYMBOL, NAMED = 1, 2


class FrameCounts:
    """What the samples written so far referenced: their number, their pids and frames, and
    per location id without a name the frames in them (for diagnostics.py). Compiled with
    the C types of writer.pxd: add() looks at every frame of a DWARF-unwound sample."""

    def __init__(self) -> None:
        self.location_state = bytearray()  # per location id, HAS_SYMBOL | NAMED bits
        self.samples = 0
        self.frames = 0
        self.pids: set = set()
        self.unnamed: dict = {}  # location id -> frames

    def add(self, frames, uses: int, pid) -> None:
        """`uses` samples of process `pid` with these frames (location ids)."""
        self.samples += uses
        self.frames += len(frames) * uses
        self.pids.add(pid)
        state = self.location_state
        n = len(state)
        unnamed = self.unnamed
        named = NAMED  # a C int when compiled, as are f and bits: the test stays in C
        for frame in frames:
            f = frame
            if 0 <= f < n:
                bits = state[f]
                if bits & named:
                    continue
            unnamed[frame] = unnamed.get(frame, 0) + uses


# -------------------------------------------------------------------------------- writer


def _append(writer: StreamWriter, message: bytes) -> None:
    """Buffer one framed message; the buffer goes out when it is full (a C call when
    compiled: writer.pxd)."""
    buf = writer._buf
    buf += message
    if len(buf) >= _FLUSH_AT:
        writer.flush()


class StreamWriter:
    """Writes messages of one flavour into a buffer and the buffer to `out` in big chunks.

    Signed and unsigned values are accepted for every integer field (-1 as a quint32 pid
    becomes 0xFFFFFFFF). A message the flavour does not know is dropped. BrokenPipeError
    from `out` propagates.
    """

    def __init__(self, out: BinaryIO, flavour: str = "current") -> None:
        if flavour not in FLAVOURS:
            raise ValueError(f"unknown protocol flavour {flavour!r} (one of {FLAVOURS})")
        self.out = out
        self.flavour = flavour
        self._buf = bytearray()
        (self._thread_start, self._thread_end, self._command, self._location, self._symbol,
         self._string, self._lost, self._features, self._error, self._progress,
         self._tracepoint_format, self._attributes, self._context_switch, self._sample,
         self._tracepoint_sample, self._debuginfo_progress) = _LAYOUTS[flavour]
        self._sample_type = _fast_sample_type(self._sample)
        self._location_prefix = _fast_location_prefix(self._location)
        # id(frames) -> [frames, message size prefix, packed frame array or None, samples
        # written with it since the last fold, their pid, the message's Struct.pack]
        # (sample_one)
        self._packed_frames: dict[int, list] = {}
        self._packed_count = 0  # frames in _packed_frames (_MAX_PACKED_FRAMES)
        self._counts = FrameCounts()

    def _put(self, lay: _Layout | None, values: Sequence) -> None:
        if lay is not None:
            _append(self, lay.frame(values))

    def header(self) -> None:
        self._buf += HEADER

    def thread_start(self, pid: int, tid: int, time: int, cpu: int, ppid: int) -> None:
        self._put(self._thread_start, (pid, tid, time, cpu, ppid))

    def thread_end(self, pid: int, tid: int, time: int, cpu: int) -> None:
        self._put(self._thread_end, (pid, tid, time, cpu))

    def command(self, pid: int, tid: int, time: int, cpu: int, comm: int) -> None:
        self._put(self._command, (pid, tid, time, cpu, comm))

    def location(self, id: int, address: int, file: int, pid: int, line: int, column: int,
                 parent: int, rel_addr: int) -> None:
        if self._location_prefix is not None:
            try:
                message = _LOCATION.pack(self._location_prefix, id, address, file, pid, line,
                                         column, parent, rel_addr)
            except struct.error:  # values to wrap: the schema path knows how
                pass
            else:
                _append(self, message)
                return
        self._put(self._location, (id, address, file, pid, line, column, parent, rel_addr))

    def symbol(self, id: int, name: int, binary: int, path: int, is_kernel: bool,
               rel_addr: int, size: int, actual_path: int, is_inline: bool) -> None:
        self._put(self._symbol, (id, name, binary, path, is_kernel, rel_addr, size,
                                 actual_path, is_inline))

    def string(self, id: int, data: bytes) -> None:
        self._put(self._string, (id, data))

    def lost(self, pid: int, tid: int, time: int, cpu: int, lost: int) -> None:
        self._put(self._lost, (pid, tid, time, cpu, lost))

    def features(self, f: Features) -> None:
        lay = self._features
        self._put(lay, [getattr(f, n) for n in lay.names])

    def error(self, code: int, message: str) -> None:
        self._put(self._error, (code, message))

    def progress(self, fraction: float) -> None:
        # upstream sends a C++ float, which QDataStream widens to double
        self._put(self._progress, _F32.unpack(_F32.pack(fraction)))

    def tracepoint_format(self, id: int, system: int, name: int, flags: int,
                          format: int = -1) -> None:
        self._put(self._tracepoint_format, (id, system, name, flags, format))

    def attributes(self, id: int, attr_type: int, config: int, name: int,
                   uses_frequency: bool, frequency_or_period: int) -> None:
        self._put(self._attributes, (id, attr_type, config, name, uses_frequency,
                                     frequency_or_period))

    def context_switch(self, pid: int, tid: int, time: int, cpu: int, switch_out: bool) -> None:
        self._put(self._context_switch, (pid, tid, time, cpu, switch_out))

    def count_unresolved(self, location_state: bytearray) -> None:
        """Count, per location id without the NAMED bit in `location_state` (emit.py keeps
        it), the frames of the samples written (frame_counts())."""
        self._counts.location_state = location_state

    def frame_counts(self) -> FrameCounts:
        """The FrameCounts of every sample written so far."""
        for entry in self._packed_frames.values():
            self._fold(entry)
        return self._counts

    def _fold(self, entry: list) -> None:
        uses = entry[3]
        if uses:
            entry[3] = 0
            self._counts.add(entry[0], uses, entry[4])

    def sample(self, pid: int, tid: int, time: int, cpu: int, frames: Sequence[int],
               guessed: int, values: Sequence[tuple[int, int]]) -> None:
        self._counts.add(frames, 1, pid)
        self._sample_uncounted(pid, tid, time, cpu, frames, guessed, values)

    def _sample_uncounted(self, pid: int, tid: int, time: int, cpu: int, frames: Sequence[int],
                          guessed: int, values: Sequence[tuple[int, int]]) -> None:
        if self._sample_type is not None:
            try:
                frame = _sample_frame(self._sample_type, pid, tid, time, cpu, frames, guessed,
                                      values)
            except struct.error:  # values to wrap: the schema-driven path knows how
                pass
            else:
                _append(self, frame)
                return
        self._put(self._sample, (pid, tid, time, cpu, frames, guessed, values))

    def sample_one(self, pid: int, tid: int, time: int, cpu: int, frames: list[int],
                   guessed: int, attribute_id: int, value: int) -> None:
        """sample() with the one value (attribute_id, value).

        The packed frame array is cached per frames list: the symbolizer hands out one list
        per distinct stack, so most samples re-use it instead of packing every frame again.
        The cache holds the list itself, so its id() cannot be reused while cached."""
        if self._sample_type is not None:
            cached = self._packed_frames.get(id(frames))
            if cached is None or cached[0] is not frames:
                cached = self._pack_frames(frames, pid)
            cached[3] += 1  # counted per list: the frames are looked at when it is folded
            if cached[2] is not None:
                try:
                    message = cached[5](cached[1], self._sample_type, pid, tid, time, cpu,
                                        cached[2], guessed, 1, attribute_id, value)
                except struct.error:  # values to wrap: sample() knows how
                    pass
                else:
                    _append(self, message)
                    return
            self._sample_uncounted(pid, tid, time, cpu, frames, guessed,
                                   ((attribute_id, value),))
            return
        self.sample(pid, tid, time, cpu, frames, guessed, ((attribute_id, value),))

    def _pack_frames(self, frames: list[int], pid: int) -> list:
        """A new entry of sample_one's cache (see _packed_frames). A frames list comes from
        one process's memo (symbolize.py), so its entry keeps the pid it was first seen in."""
        cache = self._packed_frames
        n = len(frames)
        self._packed_count += n + 1
        if self._packed_count > _MAX_PACKED_FRAMES:
            for entry in cache.values():
                self._fold(entry)
            cache.clear()
            self._packed_count = n + 1
        try:
            packed = struct.pack(f">I{n}i", n, *frames)
        except struct.error:  # an id out of range: the schema path reports it
            packed = None
        pack = _SAMPLE_ONE_PACKERS.get(n)
        if pack is None:
            if len(_SAMPLE_ONE_PACKERS) >= 4096:  # frame counts come from the input
                _SAMPLE_ONE_PACKERS.clear()
            pack = _SAMPLE_ONE_PACKERS[n] = struct.Struct(_SAMPLE_ONE.format(4 + 4 * n)).pack
        entry = cache[id(frames)] = [frames, _U32LE.pack(_SAMPLE_FIXED_SIZE + 4 * n), packed,
                                     0, pid, pack]
        return entry

    def tracepoint_sample(self, pid: int, tid: int, time: int, cpu: int, frames: Sequence[int],
                          guessed: int, values: Sequence[tuple[int, int]], format_id: int,
                          trace_data: Sequence[tuple[int, Variant]]) -> None:
        self._counts.add(frames, 1, pid)
        self._put(self._tracepoint_sample, (pid, tid, time, cpu, frames, guessed, values,
                                            format_id, trace_data))

    def debuginfo_progress(self, module: int, url: int, numerator: int,
                           denominator: int) -> None:
        self._put(self._debuginfo_progress, (module, url, numerator, denominator))

    def flush(self) -> None:
        """Write out what is buffered; OutputError when the output cannot take it (a full
        disk); BrokenPipeError as it is (the reader left: cli ends quietly)."""
        try:
            if self._buf:
                view = memoryview(self._buf)
                while view:  # a pipe whose reader left takes a partial write, then EPIPE
                    n = self.out.write(view)
                    if not n:
                        break
                    view = view[n:]
                view.release()
                self._buf = bytearray()
            flush = getattr(self.out, "flush", None)
            if flush is not None:
                flush()
        except BrokenPipeError:
            raise
        except OSError as err:
            raise OutputError(err.strerror or str(err)) from None
