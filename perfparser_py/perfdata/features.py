"""Feature sections of file-mode perf.data (SEMANTICS §2.3): the reader of layout.FEATURES'
rows and the HeaderFeatures tuple made from them. A section the reader finds out of the
ordinary (cut short, a count too large for it...) is parsed again with its construct
declaration (declare.py), whose error names what is wrong, so that the common run does not
import construct."""

from __future__ import annotations

import struct
import sys

from ..tuples import named_tuple
from . import header as h
from . import layout as lay
from .abi import FEAT_COMPRESSED, FEAT_TRACING_DATA


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



class _Odd(Exception):
    """Bytes the reader leaves to the construct declaration to judge."""


def _read(rows: tuple, data: bytes, pos: int, e: str, outer: dict) -> tuple[dict, int]:
    """The values of rows read from data[pos:] (e: the struct byte order; outer: the values
    of the enclosing table) and the position after them; _Odd where construct would fail."""
    got: dict = {}
    start, end = pos, len(data)
    for name, code in rows:
        if code == lay.STRING:
            value, pos = _string(data, pos, e)
        elif code == lay.STRINGS:
            (n,) = _unpack(e + "I", data, pos)
            if n * 4 > end - pos - 4:
                raise _Odd
            pos += 4
            value = []
            for _ in range(n):
                s, pos = _string(data, pos, e)
                value.append(s)
        elif isinstance(code, lay.Items):
            if code.count == lay.PREFIXED:
                (n,) = _unpack(e + "I", data, pos)
                pos += 4
            else:
                n = got[code.count] if code.count in got else outer[code.count]
            if code.item == "s":
                value, pos = _bytes(data, pos, n)
            elif n * lay.least(code.item) > end - pos:
                raise _Odd
            elif isinstance(code.item, str):
                value = list(_unpack(f"{e}{n}{code.item}", data, pos))
                pos += n * struct.calcsize(e + code.item)
            else:
                value = []
                for _ in range(n):
                    item, pos = _read(code.item, data, pos, e, got)
                    value.append(item)
        elif isinstance(code, lay.Fill):
            value, pos = _bytes(data, pos, got[code.size] - (pos - start))
            value = value.rstrip(b"\0")
        elif isinstance(code, lay.Repeated):
            value = []
            while True:  # construct's GreedyRange: up to the first item that does not fit
                try:
                    item, pos = _read(code.item, data, pos, e, got)
                except _Odd:
                    break
                value.append(item)
        else:
            (value,) = _unpack(e + code, data, pos)
            pos += struct.calcsize(e + code)
        got[name] = value
    return got, pos


def _unpack(fmt: str, data: bytes, pos: int) -> tuple:
    if pos + struct.calcsize(fmt) > len(data):
        raise _Odd
    return struct.unpack_from(fmt, data, pos)


def _bytes(data: bytes, pos: int, n: int) -> tuple[bytes, int]:
    if n < 0 or pos + n > len(data):
        raise _Odd
    return data[pos:pos + n], pos + n


def _string(data: bytes, pos: int, e: str) -> tuple[bytes, int]:
    (n,) = _unpack(e + "I", data, pos)
    value, pos = _bytes(data, pos + 4, n)
    return value.rstrip(b"\0"), pos


def parse_feature(bit: int, data: bytes, big_endian: bool) -> dict:
    """A feature section's values by row name (layout.FEATURES[bit]): read here, or by
    construct when odd (then its errors are construct's)."""
    rows = lay.FEATURES[bit]
    try:
        return _read(rows, data, 0, ">" if big_endian else "<", {})[0]
    except _Odd:
        from .declare import feature_structs

        parsed = feature_structs(big_endian)[bit].parse(data)
        return parsed if len(rows) > 1 else {rows[0][0]: parsed}


def _frozen(value):
    return tuple(value) if isinstance(value, list) else value


def _picked(items, names: tuple[str, ...]) -> tuple:
    return tuple(tuple(_frozen(item[name]) for name in names) for item in items)


# the HeaderFeatures field of each value not named like it
_FIELD_OF = {"online": "nrcpus_online", "avail": "nrcpus_avail", "cores": "sibling_cores",
             "threads": "sibling_threads", "events": "event_desc"}
# the HeaderFeatures fields that hold items: the names of the values they keep of each
_KEPT = {
    "build_ids": ("pid", "build_id", "filename"),
    "event_desc": ("attr", "name", "ids"),
    "numa_nodes": tuple(row[0] for row in lay.NUMA_NODE),
    "pmu_mappings": tuple(row[0] for row in lay.PMU_MAPPING),
    "group_descs": tuple(row[0] for row in lay.GROUP_DESC),
}
_FIELDS = frozenset(HeaderFeatures._fields)


def _apply(f: dict, bit: int, v) -> None:
    """Put the values of feature `bit` (by row name) into f (HeaderFeatures' fields)."""
    if bit == FEAT_COMPRESSED:
        f["compressed"] = tuple(v[row[0]] for row in lay.FEATURES[bit])
        return
    for name, _code in lay.FEATURES[bit]:
        field = _FIELD_OF.get(name, name)
        if field in _KEPT:
            f[field] = _picked(v[name], _KEPT[field])
        elif field in _FIELDS:
            f[field] = _frozen(v[name])


def parse_features(buf, bits: list[int], table_offset: int, big_endian: bool) -> HeaderFeatures:
    """Read the feature sections whose descriptors start at table_offset. A feature that is
    missing or malformed only costs a warning, like upstream."""
    f: dict = {}
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
        offset, size = h.section(buf, at, big_endian)
        if size == 0:
            print(f"Feature announced in header but not present: {bit}", file=sys.stderr)
            continue
        if offset + size > len(buf):
            cut.append(bit)
            continue
        data = bytes(buf[offset:offset + size])
        if bit == FEAT_TRACING_DATA:
            f["tracing_data"] = data
        elif bit in lay.FEATURES:
            try:
                _apply(f, bit, parse_feature(bit, data, big_endian))
            except Exception as exc:  # construct's many error types: one bad feature is skipped
                print(f"feature {bit} not properly read: {str(exc).splitlines()[0]}",
                      file=sys.stderr)
    if cut:
        print("perfparser: the file ends before its feature sections "
              f"{', '.join(map(str, cut))}: they are ignored", file=sys.stderr)
    return HeaderFeatures(**f)
