"""PerfReader: turns a Source into the event sequence of SEMANTICS §2 (file and pipe mode,
compressed data, sample-id attr lookup, progress), raising PerfDataError after yielding
everything decodable before a fault."""

from __future__ import annotations

import struct
import sys
from collections.abc import Iterator

from . import events as ev
from . import header as h
from .abi import (
    EVENT_UPDATE__NAME,
    FEAT_EVENT_DESC,
    RECORD_CALLCHAIN_DEFERRED,
    RECORD_COMPRESSED,
    RECORD_COMPRESSED2,
    RECORD_EVENT_UPDATE,
    RECORD_FINISHED_INIT,
    RECORD_FINISHED_ROUND,
    RECORD_HEADER_ATTR,
    RECORD_HEADER_FEATURE,
    RECORD_HEADER_TRACING_DATA,
    RECORD_KSYMBOL,
    RECORD_LOST,
    RECORD_LOST_SAMPLES,
    RECORD_SWITCH,
    RECORD_SWITCH_CPU_WIDE,
    RECORD_TIME_CONV,
)
from .attr import PerfEventAttr, parse_attr
from .compressed import ZstdStream, check_feature
from .errors import DATA_ERROR, HEADER_ERROR, PerfDataError
from .fast import make_decoders, trailer_for
from .features import parse_feature, parse_features

# a record's content errors; construct's too once records.py is in use (_records_module)
_MALFORMED: tuple = (struct.error, ValueError, IndexError, OverflowError)
_FINISHED_ROUND = ev.FinishedRoundEvent()
_FINISHED_INIT = ev.FinishedInitEvent()
_CONSTRUCT_DECODED = frozenset((RECORD_LOST_SAMPLES, RECORD_KSYMBOL, RECORD_TIME_CONV,
                                RECORD_CALLCHAIN_DEFERRED))
_TOO_SMALL = "File is too small to hold perf data."
# Mapped input before the read position minus this is released (Source.release): enough for
# the events of the rounds still queued, so their stacks are rarely faulted back in (on
# --call-graph dwarf recordings of sqlite3 and g++, 8 MB kept and released every 4 took
# ~7 MB more RSS than 2 MB every 1 for the same number of page faults; 1 MB every 0.5 took
# ~1.5 MB less again, with as many faults, on rust and system-wide ones at 5-30 k samples).
_KEEP_MAPPED = 1 << 20
_RELEASE_EVERY = 1 << 19
_F32 = struct.Struct("f")
# header + u32 size of the tracing data that follows the record; newer perf pads it to 16
_TRACING_DATA_SIZE = 12


def _records_module():
    """records.py, the rare records' construct declarations, imported on the first of them
    (construct costs ~40 M instructions to import): from then on construct's errors are a
    record's content errors too."""
    global _MALFORMED
    from . import records
    from .declare import ConstructError

    _MALFORMED = (struct.error, ValueError, IndexError, OverflowError, ConstructError)
    return records


def _f32(x: float) -> float:
    return _F32.unpack(_F32.pack(x))[0]


def _warn_unfinished(pos: int | None, end: int) -> None:
    """The one warning for a file whose header perf record never finalised: perf's words,
    what was read, and what to do."""
    cut = (f"; it ends inside a record at offset {pos} ({end - pos} bytes ignored)"
           if pos is not None and pos < end else "")
    print("WARNING: The perf.data file's data size field is 0 which is unexpected.\n"
          "Was the 'perf record' command properly terminated?\n"
          "perfparser: the file looks unfinished (perf record still writing it, or killed): "
          f"its records were read up to the end of the file{cut}. Stop perf record with "
          "Ctrl-C or let it finish, and read the file once it has exited.", file=sys.stderr)


def _reason(exc: Exception) -> str:
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__


def _header_error(message: str) -> PerfDataError:
    return PerfDataError(message, HEADER_ERROR)


def _data_error(message: str) -> PerfDataError:
    return PerfDataError(message, DATA_ERROR)


class PerfReader:
    def __init__(self, source, fused: bool = False) -> None:
        """fused: SAMPLEs whose attr allows it come as fast.FusedSample, not SampleEvent."""
        self.source = source
        # id(attr) -> fused decoder or None; an attr that _sample_attr returns lives as long
        # as the reader (global attr or registered by id), so its id is not reused
        self._fused: dict[int, object] | None = {} if fused else None
        self.mode: str | None = None
        self.big_endian = False
        self._global: PerfEventAttr | None = None
        self._trailer = None
        self._attrs_by_id: dict[int, PerfEventAttr] = {}
        self._zstd: ZstdStream | None = None
        self._mmap_len: int | None = None
        self._leftover = b""
        self.skipped = 0  # records skipped for a malformed content (_skip)
        # pipe mode: [attr, name, ids] of the HEADER_ATTRs read, held back until the records
        # after them (EVENT_UPDATE names, tracing data) are; None once released (file mode)
        self._held: list[list] | None = None

    # ---------------------------------------------------------------- setup

    def _set_byte_order(self, big_endian: bool) -> None:
        self.big_endian = big_endian
        e = ">" if big_endian else "<"
        self._dec = make_decoders(big_endian)
        self._record_header = struct.Struct(e + "IHH").unpack_from
        self._e = e

    def _set_global(self, attr: PerfEventAttr) -> None:
        self._global = attr
        self._trailer = trailer_for(attr)

    def _register(self, attr: PerfEventAttr, ids) -> None:
        for i in ids:
            self._attrs_by_id.setdefault(i, attr)

    def _u64s(self, buf, offset: int, nbytes: int) -> tuple[int, ...]:
        if offset < 0 or nbytes < 0 or offset + nbytes > len(buf):
            raise _data_error(f"id section at {offset} (+{nbytes}) lies outside the file")
        return struct.unpack_from(f"{self._e}{nbytes // 8}Q", buf, offset)

    # ---------------------------------------------------------------- entry

    def events(self) -> Iterator[object]:
        src = self.source
        head = bytes(src.read(16))
        if len(head) < 16 and (len(head) < 8 or head[:8] in (h.MAGIC_LE, h.MAGIC_BE)):
            raise _header_error("File is too small for perf header." if not src.is_stream else
                                "Input closed before the perf header was complete.")
        magic = head[:8]
        if magic not in (h.MAGIC_LE, h.MAGIC_BE):
            if magic == b"PERFFILE":
                raise _header_error("we don't support V1 perf data")
            raise _header_error(h.not_a_recording(magic))
        self._set_byte_order(magic == h.MAGIC_BE)
        size = h.pipe_header_size(head, self.big_endian)
        if size < h.PIPE_HEADER_SIZE:
            raise _header_error("Header claims to be smaller than magic + size")
        if size > h.MAX_HEADER_SIZE:
            raise _header_error(f"Header size {size} is too large")
        if size == h.PIPE_HEADER_SIZE:
            self.mode = "pipe"
            self._held = []
            if src.is_stream:
                records = self._pipe_stream(src)
            else:
                records = self._finish(self._records(src.buffer(), 16, len(src.buffer()),
                                                     release=src.release))
            yield from self._named_attrs_first(records)
        else:
            self.mode = "file"
            spooled = src.spool(head)
            yield from self._file(spooled.buffer(), size, spooled.release)

    # ---------------------------------------------------------------- file mode

    def _file(self, buf: memoryview, header_size: int, release) -> Iterator[object]:
        n = len(buf)
        if n < h.FILE_HEADER_SIZE:
            raise _header_error("File is too small for perf header.")
        hdr = h.file_header(buf, self.big_endian)
        if header_size > h.FILE_HEADER_SIZE:
            print("Header not completely read.", file=sys.stderr)
        data_offset, data_size = hdr.data_offset, hdr.data_size
        # perf record writes the data size (and the feature sections after the data) when it
        # exits: 0 means it is still running or was killed. Like perf report, the records up
        # to the end of the file are read (there are no feature sections yet).
        unfinished = data_size == 0 and h.FILE_HEADER_SIZE <= data_offset < n
        data_end = data_offset + data_size
        truncated = data_end > n
        if truncated and (data_offset >= n or hdr.attrs_offset + hdr.attrs_size > n):
            raise _header_error(f"{_TOO_SMALL} (data ends at {data_end}, file has {n} bytes)")
        try:
            yield from self._file_body(buf, hdr, truncated, unfinished, release)
        except PerfDataError as exc:
            if truncated:
                raise _header_error(f"{_TOO_SMALL} ({exc})") from None
            raise
        if truncated:
            raise _header_error(f"{_TOO_SMALL} (data ends at {data_end}, file has {n} bytes)")

    def _attr_section(self, buf: memoryview, hdr) -> list[tuple[PerfEventAttr, tuple[int, ...]]]:
        attr_size, off, size = hdr.attr_size, hdr.attrs_offset, hdr.attrs_size
        if attr_size < h.MIN_ATTR_ENTRY:
            raise _data_error(f"Failed to read attributes: attr_size is {attr_size}")
        if off + size > len(buf):
            raise _data_error("Failed to read attributes: section lies outside the file")
        entries = []
        for k in range(size // attr_size):
            at = off + k * attr_size
            attr = parse_attr(buf, at, self.big_endian)
            ids_at = at + attr.size
            if ids_at + 16 > len(buf):
                raise _data_error("Failed to read attributes: id section outside the file")
            ids_offset, ids_size = h.section(buf, ids_at, self.big_endian)
            entries.append((attr, self._u64s(buf, ids_offset, ids_size)))
        if not entries:
            raise _data_error("Failed to read attributes: the attribute section is empty")
        return entries

    def _file_body(self, buf: memoryview, hdr, truncated: bool, unfinished: bool,
                   release) -> Iterator[object]:
        entries = self._attr_section(buf, hdr)
        self._set_global(entries[0][0])
        data_offset, data_size = hdr.data_offset, hdr.data_size
        if unfinished:
            data_size = len(buf) - data_offset
        bits = [] if unfinished else h.feature_bits(
            [hdr.features0, hdr.features1, hdr.features2, hdr.features3], self.big_endian)
        features = parse_features(buf, bits, data_offset + data_size, self.big_endian)
        check_feature(features.compressed)
        if features.compressed is not None:
            self._mmap_len = features.compressed[4]  # perf's bound for one record's output
        if features.tracing_data is not None:
            yield ev.TracingDataEvent(features.tracing_data)
        for attr_bytes, name, ids in features.event_desc:
            try:
                attr = parse_attr(memoryview(attr_bytes), 0, self.big_endian)
            except PerfDataError as exc:
                print(f"skipping EVENT_DESC entry {name!r}: {exc}", file=sys.stderr)
                continue
            self._register(attr, ids)
            yield ev.AttrEvent(attr, name.decode("utf-8", "replace"), ids)
        yield ev.FeaturesEvent(features)
        for attr, ids in entries:
            self._register(attr, ids)
            if features.event_desc:
                for i in ids:
                    yield ev.AttrEvent(attr, None, (i,))
            else:
                yield ev.AttrEvent(attr, None, ids)
        yield ev.DataStartEvent(data_offset, data_size)
        yield ev.ProgressEvent(0.0)
        end = min(data_offset + data_size, len(buf))
        progress = (data_offset, data_size)
        if not unfinished:
            records = self._records(buf, data_offset, end, progress, release=release)
            if features.dir_format:
                records = self._directory(records, data_size, features.dir_format)
            yield from self._finish(records)
            return
        pos = None  # where the records stopped; None when reading them failed
        try:
            pos = yield from self._records(buf, data_offset, end, progress, partial=True,
                                           release=release)
            yield from self._finish(iter(()))
        finally:
            _warn_unfinished(pos, end)

    def _directory(self, records: Iterator[object], data_size: int, version: int):
        """A perf.data directory's data section merged with its data.N files (directory.py)."""
        if version != 1:
            raise _header_error(f"perf.data directory of unknown layout version {version}")
        files = self.source.parts()
        if not files:
            print("perfparser: the recording is a perf.data directory whose data.N files, "
                  "which hold its samples, are not beside its header file", file=sys.stderr)
            return records
        from .directory import merged

        streams = [records, *(self._part_records(f) for f in files)]
        return merged(streams, [data_size, *(f.size for f in files)])

    def _part_records(self, source) -> Iterator[object]:
        """A data.N file's records (from offset 0, no header), decoded with this reader's
        attributes and with a decompression state of their own, as perf has one per file."""
        import copy  # only for perf.data directories: ~0.7 ms of the reading process's start

        part = copy.copy(self)
        part._zstd, part._leftover = None, b""
        buf = source.buffer()
        try:
            yield from part._finish(part._records(buf, 0, len(buf), (0, len(buf)),
                                                  release=source.release))
        except PerfDataError as exc:
            raise PerfDataError(f"{source.name}: {exc}", exc.exit_code) from None

    # ---------------------------------------------------------------- pipe mode

    def _named_attrs_first(self, events: Iterator[object]) -> Iterator[object]:
        """Pipe mode: perf sends each attr's name after it (HEADER_ATTRs, then an EVENT_UPDATE
        NAME per event, then the tracing data whose formats name tracepoints): the attrs go
        out with their names just before the first other event, or at the end."""
        for e in events:
            if self._held and type(e) is not ev.TracingDataEvent:
                yield from self._release_held()
            yield e
            if self._held is None:
                break
        yield from events
        yield from self._release_held()

    def _release_held(self) -> Iterator[object]:
        held, self._held = self._held or (), None
        for attr, name, ids in held:
            yield ev.AttrEvent(attr, name, ids)

    def _pipe_stream(self, src) -> Iterator[object]:
        unpack = self._record_header
        while True:
            head = src.read(8)
            if len(head) < 8:
                break  # EOF, possibly inside a record header: ignored like upstream
            rtype, misc, size = unpack(head, 0)
            if size < 8:
                raise _data_error(f"Invalid record of type {rtype} with size {size} < 8")
            body = src.read(size - 8)
            if len(body) < size - 8:
                raise _data_error(f"Unexpected end of input inside a record of type {rtype} "
                                  f"(size {size}, got {len(body) + 8} bytes)")
            if rtype == RECORD_HEADER_TRACING_DATA and size >= _TRACING_DATA_SIZE:
                (n,) = struct.unpack_from(self._e + "I", body, 0)
                data = src.read(n)
                if len(data) < n:
                    raise _data_error("Unexpected end of input inside the tracing data")
                yield ev.TracingDataEvent(bytes(data))
                continue
            yield from self._records(memoryview(head + body), 0, size)
        yield from self._finish(iter(()))

    # ---------------------------------------------------------------- records

    def _finish(self, records: Iterator[object]) -> Iterator[object]:
        yield from records
        if self.skipped > 1:
            print(f"perfparser: {self.skipped} malformed records skipped", file=sys.stderr)
        if self._leftover:
            print(f"compressed data ends inside a record ({len(self._leftover)} bytes dropped)",
                  file=sys.stderr)

    def _sample_attr(self, buf, pos: int, end: int) -> PerfEventAttr:
        g = self._global
        if g is None:
            raise _data_error("SAMPLE record before any attribute")
        id_pos = g.plan.id_pos
        if id_pos >= 0 and self._attrs_by_id and pos + id_pos + 8 <= end:
            return self._attrs_by_id.get(self._dec.peek_u64(buf, pos + id_pos), g)
        return g

    def _records(self, buf, pos: int, end: int, progress: tuple[int, int] | None = None,
                 partial: bool = False, release=None):
        """Decode the records in buf[pos:end]. partial: stop quietly at an incomplete record and
        return its offset (decompressed chunks). progress: (data_offset, data_size).
        release(offset): the source's hint that the bytes before offset are done with."""
        unpack = self._record_header
        dec = self._dec
        sample, mmap2, mmap, comm, fork, exit_ = (dec.sample, dec.mmap2, dec.mmap, dec.comm,
                                                  dec.fork, dec.exit)
        fused = self._fused
        # periodic work (one comparison per record): progress events, releasing consumed input
        next_progress = end + 1
        if progress is not None:
            p_off, p_size = progress
            step = p_size // 100
            next_progress = p_off + step
            f_size = _f32(p_size)
        next_at = next_progress if release is None else min(next_progress, pos + _RELEASE_EVERY)
        rtype = rend = -1
        while True:  # once, and again after each skipped record
            try:
                while pos < end:
                    if pos + 8 > end:
                        if partial:
                            break
                        raise _data_error(f"Truncated record header at offset {pos}")
                    rtype, misc, size = unpack(buf, pos)
                    if size < 8:
                        raise _data_error(f"Invalid record of type {rtype} at offset {pos}: "
                                          f"size {size} < 8")
                    rend = pos + size
                    if rend > end:
                        if partial:
                            break
                        raise _data_error(f"Record of type {rtype} at offset {pos} (size {size}) "
                                          f"runs past the end of the data at {end}")
                    body = pos + 8
                    # the hottest types as literals (abi.RECORD_*), which the compiled loop
                    # compares as C constants; test_layout checks they are abi's numbers
                    if rtype == 9:  # RECORD_SAMPLE
                        attr = self._sample_attr(buf, body, rend)
                        decode = None if fused is None else fused.get(id(attr), False)
                        if decode is False:
                            decode = fused[id(attr)] = dec.fused(attr)
                        if decode is not None:
                            yield decode(buf, body, rend, misc, size)
                        else:
                            yield sample(buf, body, rend, misc, size, attr)
                    elif rtype == 10:  # RECORD_MMAP2
                        yield mmap2(buf, body, rend, misc, size, self._trailer)
                    elif rtype == 3:  # RECORD_COMM
                        yield comm(buf, body, rend, misc, size, self._trailer)
                    elif rtype == 7:  # RECORD_FORK
                        yield fork(buf, body, rend, misc, size, self._trailer)
                    elif rtype == 4:  # RECORD_EXIT
                        yield exit_(buf, body, rend, misc, size, self._trailer)
                    elif rtype == 1:  # RECORD_MMAP
                        yield mmap(buf, body, rend, misc, size, self._trailer)
                    elif rtype == RECORD_SWITCH or rtype == RECORD_SWITCH_CPU_WIDE:
                        yield dec.switch(buf, body, rend, misc, size, self._trailer,
                                         rtype == RECORD_SWITCH_CPU_WIDE)
                    elif rtype == RECORD_LOST:
                        yield dec.lost(buf, body, rend, misc, size, self._trailer)
                    elif rtype == RECORD_FINISHED_ROUND:
                        yield _FINISHED_ROUND
                    elif rtype == RECORD_HEADER_TRACING_DATA and size >= _TRACING_DATA_SIZE:
                        (n,) = dec.u32(buf, body)
                        if rend + n > end:
                            raise _data_error(f"Tracing data at offset {rend} runs past the end")
                        yield ev.TracingDataEvent(bytes(buf[rend:rend + n]))
                        rend += n
                    else:
                        yield from self._cold(buf, body, rend, rtype, misc, size)
                    pos = rend
                    if pos >= next_at:
                        if pos >= next_progress:
                            yield ev.ProgressEvent(_f32(_f32(pos - p_off) / f_size))
                            next_progress += step
                        next_at = next_progress
                        if release is not None:
                            release(pos - _KEEP_MAPPED)
                            next_at = min(next_at, pos + _RELEASE_EVERY)
                break
            except _MALFORMED as exc:
                if rend <= pos:  # the record's framing itself is in doubt
                    raise _data_error(f"Malformed record of type {rtype} at offset {pos}: "
                                      f"{_reason(exc)}") from None
                # Its size is sound but its content is not (a call chain or array running
                # past the record): perf skips such a record and counts it; so do we
                self._skip(rtype, pos, exc)
                pos = rend
        return pos

    def _skip(self, rtype: int, pos: int, exc: Exception) -> None:
        """Count a record whose content is malformed; the first one is reported."""
        self.skipped += 1
        if self.skipped == 1:
            print(f"perfparser: skipping malformed record of type {rtype} at offset {pos} "
                  f"({_reason(exc)}); such records are counted", file=sys.stderr)

    def _cold(self, buf, pos: int, end: int, rtype: int, misc: int, size: int):
        if rtype in _CONSTRUCT_DECODED:
            yield _records_module().decode_record(rtype, misc, size, bytes(buf[pos:end]), None,
                                                  self._global)
        elif rtype == RECORD_FINISHED_INIT:
            yield _FINISHED_INIT
        elif rtype == RECORD_HEADER_ATTR:
            attr = parse_attr(buf[:end], pos, self.big_endian)
            ids = self._u64s(buf[:end], pos + attr.size, (end - pos - attr.size) // 8 * 8)
            if self._global is None:
                self._set_global(attr)
            self._register(attr, ids)
            if self._held is None:
                yield ev.AttrEvent(attr, None, ids)
            else:
                self._held.append([attr, None, ids])
        elif rtype == RECORD_EVENT_UPDATE:
            self._event_update(buf, pos, end)
        elif rtype == RECORD_HEADER_FEATURE and self._held:
            self._feature_event_desc(buf, pos, end)
        elif rtype == RECORD_HEADER_TRACING_DATA:
            print(f"HEADER_TRACING_DATA record of unexpected size {size} skipped", file=sys.stderr)
        elif rtype == RECORD_COMPRESSED:
            yield from self._decompress(buf[pos:end])
        elif rtype == RECORD_COMPRESSED2:
            n = self._dec.peek_u64(buf, pos)
            if pos + 8 + n > end:
                raise _data_error(f"COMPRESSED2 payload of {n} bytes exceeds its record")
            yield from self._decompress(buf[pos + 8:pos + 8 + n])

    def _name_held(self, sample_id: int, name: bytes) -> None:
        """Name the held attr of `sample_id`; a later record's name wins, as in perf."""
        for entry in self._held or ():
            if sample_id in entry[2]:
                entry[1] = name.decode("utf-8", "replace")

    def _event_update(self, buf, pos: int, end: int) -> None:
        """An EVENT_UPDATE of type NAME names the held attr of its id (perf's evsel name,
        e.g. `cpu-clock:ppp`); other types (unit, scale, cpus) say nothing we send."""
        if end - pos >= 16 and self._held:
            kind, eid = struct.unpack_from(self._e + "QQ", buf, pos)
            if kind == EVENT_UPDATE__NAME:
                self._name_held(eid, bytes(buf[pos + 16:end]).split(b"\0", 1)[0])

    def _feature_event_desc(self, buf, pos: int, end: int) -> None:
        """Pipe mode's EVENT_DESC feature (a HEADER_FEATURE record) names held attrs by id."""
        if end - pos < 8 or self._dec.peek_u64(buf, pos) != FEAT_EVENT_DESC:
            return
        try:
            desc = parse_feature(FEAT_EVENT_DESC, bytes(buf[pos + 8:end]), self.big_endian)
        except Exception as exc:  # construct's many error types, as for file-mode features
            print(f"pipe-mode EVENT_DESC feature not read: {str(exc).splitlines()[0]}",
                  file=sys.stderr)
            return
        for e in desc["events"]:
            for i in e["ids"]:
                self._name_held(i, e["name"])

    def _decompress(self, payload) -> Iterator[object]:
        if self._zstd is None:
            self._zstd = ZstdStream(self._mmap_len)
        for chunk in self._zstd.feed(payload):
            data = self._leftover + chunk if self._leftover else chunk
            view = memoryview(data)
            pos = yield from self._records(view, 0, len(view), partial=True)
            self._leftover = bytes(view[pos:])
