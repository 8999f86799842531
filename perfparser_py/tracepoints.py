"""Tracepoint samples: the PERF_SAMPLE_RAW bytes of a sample -> (field name id, QVariant) pairs.

`Tracepoints` holds the formats of the run's tracing data, emits their TracePointFormat
messages (strings first, PROTOCOL §8 item 4) and decodes raw sample data field by field
(SEMANTICS §13.3) with a plan compiled once per format. Fields come out in format order, so
the bytes do not depend on a hash seed as upstream's do. Dynamic (`__data_loc`/`__rel_loc`)
arrays are decoded to their contents, not sent as the raw locator (tests/expected_differences.md).
"""

from __future__ import annotations

import struct
import sys

from .emit import Emitter
from .perfdata.tracing import (
    FIELD_ARRAY,
    FIELD_DYNAMIC,
    FIELD_RELATIVE,
    FIELD_SIGNED,
    FIELD_STRING,
    EventFormat,
    FormatField,
    TracingData,
)
from .protocol import INVALID_VARIANT, Variant

# QMetaType ids by (size, signed) — PROTOCOL §2.1
_TYPE_IDS = {(1, True): 40, (1, False): 37, (2, True): 33, (2, False): 36,
             (4, True): 2, (4, False): 3, (8, True): 4, (8, False): 5}
_CODES = {(1, True): "b", (1, False): "B", (2, True): "h", (2, False): "H",
          (4, True): "i", (4, False): "I", (8, True): "q", (8, False): "Q"}
LIST_TYPE = 9
BYTES_TYPE = 12

# plan kinds
_SCALAR, _BYTES, _LIST, _INVALID = range(4)

# Variants are immutable: the values a field keeps repeating (comms, priorities, states,
# pids) share one object per field, up to this many
_MEMO_MAX = 4096

# (kind, struct or None, type id, element size, memo) of the (possibly dynamic) field contents
Contents = tuple[int, "struct.Struct | None", int, int, dict]
# (name id, offset, size, locator struct or None, locator relative, contents)
FieldPlan = tuple[int, int, int, "struct.Struct | None", bool, Contents]


def _contents(f: FormatField, endian: str) -> Contents:
    if f.size < 0:
        return (_INVALID, None, 0, 0, {})
    signed = bool(f.flags & FIELD_SIGNED)
    if f.flags & FIELD_ARRAY:
        if f.flags & FIELD_STRING:
            return (_BYTES, None, BYTES_TYPE, 1, {})
        key = (f.elementsize, signed)
        if key not in _CODES:
            return (_INVALID, None, 0, 0, {})  # upstream loops forever on element size 0
        return (_LIST, struct.Struct(endian + _CODES[key]), _TYPE_IDS[key], f.elementsize, {})
    key = (f.size, signed)
    if key not in _CODES:
        return (_INVALID, None, 0, 0, {})
    return (_SCALAR, struct.Struct(endian + _CODES[key]), _TYPE_IDS[key], f.size, {})


def compile_plan(fields: list[FormatField], name_ids: list[int], big_endian: bool
                 ) -> tuple[FieldPlan, ...]:
    """A decoding plan for the event fields of one format in the given byte order."""
    endian = ">" if big_endian else "<"
    plan = []
    for f, nid in zip(fields, name_ids, strict=True):
        locator = None
        if f.flags & FIELD_DYNAMIC and f.flags & FIELD_ARRAY and (f.size, False) in _CODES:
            locator = struct.Struct(endian + _CODES[(f.size, False)])
        plan.append((nid, f.offset, f.size, locator, bool(f.flags & FIELD_RELATIVE),
                     _contents(f, endian)))
    return tuple(plan)


def decode_raw(plan: tuple[FieldPlan, ...], raw) -> list[tuple[int, Variant]]:
    """(name id, value) for every field of the plan, in format order."""
    out = []
    end = len(raw)
    for nid, offset, size, locator, relative, contents in plan:
        if offset < 0 or offset + size > end:
            out.append((nid, INVALID_VARIANT))
            continue
        if locator is not None:
            (loc,) = locator.unpack_from(raw, offset)
            base = offset + size if relative else 0
            offset, size = base + (loc & 0xFFFF), (loc >> 16) & 0xFFFF
            if offset + size > end:
                out.append((nid, INVALID_VARIANT))
                continue
        kind, st, type_id, elem, memo = contents
        if kind == _SCALAR:
            value = st.unpack_from(raw, offset)[0]
        elif kind == _BYTES:
            value = bytes(raw[offset:offset + size])
        elif kind == _LIST:
            values = [Variant(type_id, v) for (v,) in
                      st.iter_unpack(raw[offset:offset + size - size % elem])]
            out.append((nid, Variant(LIST_TYPE, values)))
            continue
        else:
            out.append((nid, INVALID_VARIANT))
            continue
        v = memo.get(value)
        if v is None:
            v = Variant(type_id, value)
            if len(memo) < _MEMO_MAX:
                memo[value] = v
        out.append((nid, v))
    return out


class Tracepoints:
    """The formats of one run and the per-(format, byte order) decoding plans."""

    __slots__ = ("emit", "formats", "_name_ids", "_plans", "_warned")

    def __init__(self, emitter: Emitter) -> None:
        self.emit = emitter
        self.formats: dict[int, EventFormat] = {}
        self._name_ids: dict[int, list[int]] = {}
        self._plans: dict[tuple[int, bool], tuple[FieldPlan, ...]] = {}
        self._warned: set[int] = set()

    def add(self, td: TracingData) -> None:
        """Register the formats of a tracing data blob and send their definitions, in
        ascending id order (upstream: hash order)."""
        for message in td.warnings:
            print(f"perfparser: {message}", file=sys.stderr)
        string = self.emit.string
        writer = self.emit.writer
        with_format = writer.flavour == "current"
        for fid in sorted(td.formats):
            fmt = td.formats[fid]
            system, name = string(fmt.system), string(fmt.name)
            for f in fmt.common_fields:
                string(f.name)
            self._name_ids[fid] = [string(f.name) for f in fmt.fields]
            self.formats[fid] = fmt
            self._plans.pop((fid, False), None)
            self._plans.pop((fid, True), None)
            print_fmt = string(fmt.print_fmt) if with_format else -1
            writer.tracepoint_format(fid, system, name, fmt.flags, print_fmt)

    def trace_data(self, config: int, raw, big_endian: bool) -> tuple[int, list[tuple[int, Variant]]]:
        """(format id, trace data) for a sample of the tracepoint attribute with `config`."""
        if config > 2**31 - 1:
            if config not in self._warned:
                self._warned.add(config)
                print(f"perfparser: tracepoint config {config:#x} is not a format id",
                      file=sys.stderr)
            return -1, []
        plan = self._plans.get((config, big_endian))
        if plan is None:
            fmt = self.formats.get(config)
            if fmt is None:
                return config, []
            plan = self._plans[(config, big_endian)] = compile_plan(
                fmt.fields, self._name_ids[config], big_endian)
        # no raw data: every field is out of bounds, as upstream has it
        return config, decode_raw(plan, b"" if raw is None else raw)
