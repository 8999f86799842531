"""Feature sections of file-mode perf.data (SEMANTICS §2.3): construct declarations and the
HeaderFeatures tuple the reader makes from them."""

from __future__ import annotations

import struct
import sys
from functools import cache

from construct import (
    Bytes,
    Construct,
    ConstructError,
    ExprAdapter,
    GreedyRange,
    ListContainer,
    Struct,
    this,
)
from construct.core import stream_read, stream_seek, stream_size, stream_tell, stream_write

from ..tuples import named_tuple
from . import header as h
from .ints import ints

FEAT_HOSTNAME = 3
FEAT_OSRELEASE = 4
FEAT_VERSION = 5
FEAT_ARCH = 6
FEAT_NRCPUS = 7
FEAT_CPUDESC = 8
FEAT_CPUID = 9
FEAT_TOTAL_MEM = 10
FEAT_CPU_TOPOLOGY = 13
FEAT_NUMA_TOPOLOGY = 14
FEAT_PMU_MAPPINGS = 16
FEAT_GROUP_DESC = 17
FEAT_DIR_FORMAT = 24  # perf.data directory (perf record --threads): u64 layout version


def _string(i) -> Construct:
    """u32 length + bytes, trailing NULs removed."""
    raw = Struct("len" / i.u32, "data" / Bytes(this.len))
    return ExprAdapter(raw, lambda obj, _: obj.data.rstrip(b"\0"), None)


def _remaining(stream, path) -> int:
    return stream_size(stream) - stream_tell(stream, path)


class _Counted(Construct):
    """An array whose count (a prefix, or a context field: this.nr) must fit the bytes left,
    `least` bytes per element at least: a count of 2^32-1 in a small section fails at once
    instead of parsing to the end of it."""

    def __init__(self, count, element: Construct, least: int) -> None:
        super().__init__()
        self.count, self.element, self.least = count, element, least

    def _parse(self, stream, context, path):
        if isinstance(self.count, Construct):
            n = self.count._parsereport(stream, context, path)
        else:
            n = self.count(context)
        if n * self.least > _remaining(stream, path):
            raise ConstructError(f"count {n} does not fit the section", path=path)
        return ListContainer(self.element._parsereport(stream, context, path)
                             for _ in range(n))

    def _build(self, obj, stream, context, path):
        if isinstance(self.count, Construct):
            self.count._build(len(obj), stream, context, path)
        for item in obj:
            self.element._build(item, stream, context, path)
        return obj


class _Strings(Construct):
    """A perf string list (u32 count, then u32 length + NUL-padded bytes each), decoded
    directly: construct took 6 s per MB of empty strings (issue 24)."""

    def __init__(self, big_endian: bool) -> None:
        super().__init__()
        self.u32 = struct.Struct(">I" if big_endian else "<I")

    def _parse(self, stream, context, path):
        data = stream_read(stream, _remaining(stream, path), path)
        (n,), pos = self.u32.unpack_from(data, 0) if len(data) >= 4 else (0,), 4
        if len(data) < 4 or n * 4 > len(data) - 4:
            raise ConstructError(f"string count {n} does not fit the section", path=path)
        unpack, out = self.u32.unpack_from, []
        for _ in range(n):
            if pos + 4 > len(data):
                raise ConstructError("string list cut short", path=path)
            (size,) = unpack(data, pos)
            pos += 4 + size
            if pos > len(data):
                raise ConstructError("string runs past the section", path=path)
            out.append(data[pos - size:pos].rstrip(b"\0"))
        stream_seek(stream, pos - len(data), 1, path)  # what follows the list is not ours
        return ListContainer(out)

    def _build(self, obj, stream, context, path):
        parts = [self.u32.pack(len(obj))]
        for v in obj:
            v += b"\0" * (-(len(v) + 1) % 8 + 1)
            parts += (self.u32.pack(len(v)), v)
        out = b"".join(parts)
        stream_write(stream, out, len(out), path)
        return obj


@cache
def feature_structs(big_endian: bool) -> dict[int, Construct]:
    i = ints(big_endian)
    s = _string(i)
    strings = _Strings(big_endian)
    return {
        h.FEAT_BUILD_ID: GreedyRange(Struct(
            "type" / i.u32, "misc" / i.u16, "size" / i.u16, "pid" / i.s32,
            "build_id" / Bytes(20), "pad" / Bytes(4),
            "filename" / ExprAdapter(Bytes(this.size - 36), lambda obj, _: obj.rstrip(b"\0"), None),
        )),
        FEAT_HOSTNAME: s,
        FEAT_OSRELEASE: s,
        FEAT_VERSION: s,
        FEAT_ARCH: s,
        FEAT_NRCPUS: Struct("online" / i.u32, "avail" / i.u32),
        FEAT_CPUDESC: s,
        FEAT_CPUID: s,
        FEAT_TOTAL_MEM: i.u64,
        h.FEAT_CMDLINE: strings,
        h.FEAT_EVENT_DESC: Struct(
            "nr" / i.u32,
            "attr_size" / i.u32,
            "events" / _Counted(this.nr, Struct(
                "attr" / Bytes(this._.attr_size),
                "nr_ids" / i.u32,
                "name" / s,
                "ids" / _Counted(this.nr_ids, i.u64, 8),
            ), 8),
        ),
        FEAT_CPU_TOPOLOGY: Struct("cores" / strings, "threads" / strings),
        FEAT_NUMA_TOPOLOGY: _Counted(i.u32, Struct(
            "node" / i.u32, "mem_total" / i.u64, "mem_free" / i.u64, "cpus" / s), 24),
        FEAT_PMU_MAPPINGS: _Counted(i.u32, Struct("type" / i.u32, "name" / s), 8),
        FEAT_GROUP_DESC: _Counted(i.u32, Struct(
            "name" / s, "leader_idx" / i.u32, "nr_members" / i.u32), 12),
        FEAT_DIR_FORMAT: i.u64,
        h.FEAT_COMPRESSED: Struct(
            "version" / i.u32, "type" / i.u32, "level" / i.u32, "ratio" / i.u32,
            "mmap_len" / i.u32),
    }


@named_tuple
class HeaderFeatures:
    """The feature sections of a file-mode recording that the pipeline uses. (A named tuple:
    a dataclass of these fields cost ~4 M instructions of every start to make.)"""

    hostname: bytes | None = None
    osrelease: bytes | None = None
    version: bytes | None = None
    arch: bytes | None = None
    nrcpus_online: int | None = None
    nrcpus_avail: int | None = None
    cpudesc: bytes | None = None
    cpuid: bytes | None = None
    total_mem: int | None = None
    cmdline: tuple[bytes, ...] = ()
    build_ids: tuple[tuple[int, bytes, bytes], ...] = ()
    sibling_cores: tuple[bytes, ...] = ()
    sibling_threads: tuple[bytes, ...] = ()
    numa_nodes: tuple[tuple[int, int, int, bytes], ...] = ()
    pmu_mappings: tuple[tuple[int, bytes], ...] = ()
    group_descs: tuple[tuple[bytes, int, int], ...] = ()
    compressed: tuple[int, int, int, int, int] | None = None  # version, type, level, ratio, mmap_len
    tracing_data: bytes | None = None
    dir_format: int | None = None  # DIR_FORMAT's version: 1 = records also in data.N files
    # raw EVENT_DESC entries: (attr bytes, name, ids); the reader turns them into AttrEvents
    event_desc: tuple[tuple[bytes, bytes, tuple[int, ...]], ...] = ()


_STRINGS = {FEAT_HOSTNAME: "hostname", FEAT_OSRELEASE: "osrelease", FEAT_VERSION: "version",
            FEAT_ARCH: "arch", FEAT_CPUDESC: "cpudesc", FEAT_CPUID: "cpuid"}


def _apply(f: dict, bit: int, v) -> None:
    """Put the fields of feature `bit`'s parsed value `v` into f (HeaderFeatures' by name)."""
    if bit in _STRINGS:
        f[_STRINGS[bit]] = v
    elif bit == h.FEAT_BUILD_ID:
        f["build_ids"] = tuple((r.pid, r.build_id, r.filename) for r in v)
    elif bit == FEAT_NRCPUS:
        f["nrcpus_online"], f["nrcpus_avail"] = v.online, v.avail
    elif bit == FEAT_TOTAL_MEM:
        f["total_mem"] = v
    elif bit == h.FEAT_CMDLINE:
        f["cmdline"] = tuple(v)
    elif bit == h.FEAT_EVENT_DESC:
        f["event_desc"] = tuple((e.attr, e.name, tuple(e.ids)) for e in v.events)
    elif bit == FEAT_CPU_TOPOLOGY:
        f["sibling_cores"], f["sibling_threads"] = tuple(v.cores), tuple(v.threads)
    elif bit == FEAT_NUMA_TOPOLOGY:
        f["numa_nodes"] = tuple((n.node, n.mem_total, n.mem_free, n.cpus) for n in v)
    elif bit == FEAT_PMU_MAPPINGS:
        f["pmu_mappings"] = tuple((m.type, m.name) for m in v)
    elif bit == FEAT_GROUP_DESC:
        f["group_descs"] = tuple((g.name, g.leader_idx, g.nr_members) for g in v)
    elif bit == FEAT_DIR_FORMAT:
        f["dir_format"] = v
    elif bit == h.FEAT_COMPRESSED:
        f["compressed"] = (v.version, v.type, v.level, v.ratio, v.mmap_len)


def parse_features(buf, bits: list[int], table_offset: int, big_endian: bool) -> HeaderFeatures:
    """Read the feature sections whose descriptors start at table_offset. A feature that is
    missing or malformed only costs a warning, like upstream."""
    f: dict = {}
    structs = feature_structs(big_endian)
    sec = h.section_struct(big_endian)
    cut: list[int] = []  # features a file cut short lost: one warning names them all
    for n, bit in enumerate(bits):
        if bit > h.LAST_FEATURE:
            break
        at = table_offset + 16 * n
        if at + 16 > len(buf):
            # the table follows the data section: cut before it, the data is cut too, and the
            # reader's error about that says what happened
            if table_offset <= len(buf):
                cut.extend(b for b in bits[n:] if b <= h.LAST_FEATURE)
            break
        s = sec.parse(bytes(buf[at:at + 16]))
        if s.size == 0:
            print(f"Feature announced in header but not present: {bit}", file=sys.stderr)
            continue
        if s.offset + s.size > len(buf):
            cut.append(bit)
            continue
        data = bytes(buf[s.offset:s.offset + s.size])
        if bit == h.FEAT_TRACING_DATA:
            f["tracing_data"] = data
        elif bit in structs:
            try:
                _apply(f, bit, structs[bit].parse(data))
            except Exception as exc:  # construct's many error types: one bad feature is skipped
                print(f"feature {bit} not properly read: {str(exc).splitlines()[0]}",
                      file=sys.stderr)
    if cut:
        print("perfparser: the file ends before its feature sections "
              f"{', '.join(map(str, cut))}: they are ignored", file=sys.stderr)
    return HeaderFeatures(**f)
