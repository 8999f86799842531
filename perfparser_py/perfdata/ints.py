"""construct integer types for a given file byte order, so every declaration is written once."""

from types import SimpleNamespace

from construct import (
    Int8ub,
    Int8ul,
    Int16ub,
    Int16ul,
    Int32sb,
    Int32sl,
    Int32ub,
    Int32ul,
    Int64sb,
    Int64sl,
    Int64ub,
    Int64ul,
)

LE = SimpleNamespace(u8=Int8ul, u16=Int16ul, u32=Int32ul, s32=Int32sl, u64=Int64ul, s64=Int64sl)
BE = SimpleNamespace(u8=Int8ub, u16=Int16ub, u32=Int32ub, s32=Int32sb, u64=Int64ub, s64=Int64sb)


def ints(big_endian: bool) -> SimpleNamespace:
    return BE if big_endian else LE
