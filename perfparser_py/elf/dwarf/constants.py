"""The DWARF numbers the package reads (DW_TAG, DW_AT, DW_FORM), its bounds against hostile
input, and what malformed DWARF raises while being decoded."""

from __future__ import annotations

import struct

# Tags
_TAG_COMPILE_UNIT = 0x11
_TAG_PARTIAL_UNIT = 0x3C
_TAG_SKELETON_UNIT = 0x4A
_TAG_SUBPROGRAM = 0x2E
_TAG_INLINED = 0x1D
_TAG_LEXICAL_BLOCK = 0x0B
# Tags the names of inlined functions are spelled from
_TAG_NAMESPACE = 0x39
_TAG_FORMAL_PARAMETER = 0x05
_TAG_UNSPECIFIED_PARAMETERS = 0x18
_TAG_TEMPLATE_TYPE_PARAM = 0x2F
_TAG_BASE_TYPE = 0x24
_TAG_TYPEDEF = 0x16
_TAG_SUBROUTINE_TYPE = 0x15
_CLASS_TAGS = frozenset((0x02, 0x04, 0x13, 0x17))  # class, enumeration, structure, union
_TAG_POINTER = 0x0F
_POINTERS = {_TAG_POINTER: "*", 0x10: "&", 0x42: "&&"}
_QUALIFIERS = {0x26: " const", 0x35: " volatile", 0x37: " restrict"}
# Types (array, class, enumeration, structure, subroutine, union): subtrees without scopes.
_TYPE_TAGS = frozenset((0x01, 0x02, 0x04, 0x13, 0x15, 0x17))
# Attributes
_AT_SIBLING = 0x01
_AT_NAME = 0x03
_AT_STMT_LIST = 0x10
_AT_LOW_PC = 0x11
_AT_HIGH_PC = 0x12
_AT_COMP_DIR = 0x1B
_AT_ABSTRACT_ORIGIN = 0x31
_AT_DECL_COLUMN = 0x39
_AT_DECL_FILE = 0x3A
_AT_DECL_LINE = 0x3B
_AT_SPECIFICATION = 0x47
_AT_ENTRY_PC = 0x52
_AT_RANGES = 0x55
_AT_CALL_COLUMN = 0x57
_AT_CALL_FILE = 0x58
_AT_CALL_LINE = 0x59
_AT_LINKAGE_NAME = 0x6E
_AT_STR_OFFSETS_BASE = 0x72
_AT_ADDR_BASE = 0x73
_AT_RNGLISTS_BASE = 0x74
_AT_DWO_NAME = 0x76
_AT_MIPS_LINKAGE_NAME = 0x2007
_AT_LANGUAGE = 0x13
_AT_PRODUCER = 0x25
_AT_ARTIFICIAL = 0x34
_AT_EXTERNAL = 0x3F
_AT_TYPE = 0x49
_AT_OBJECT_POINTER = 0x64
_AT_GNU_ADDR_BASE = 0x2133
_AT_GNU_RANGES_BASE = 0x2132
_AT_GNU_DWO_NAME = 0x2130
_AT_GNU_DWO_ID = 0x2131
# Forms whose values are addresses (everything else with a number is a constant/offset).
_ADDR_FORMS = frozenset((0x01, 0x1B, 0x29, 0x2A, 0x2B, 0x2C, 0x1F01))

# DIE offsets in the supplementary file (supplement.py) are this plus its own: told from the
# file's own, and from where a bad reference may point (beyond every unit of either).
_SUP = 1 << 62
# Attributes whose value is a DIE reference (DWARF 5 §7.5.5: class reference only): those of
# a DIE read from the supplementary file are made supplementary offsets.
_REF_ATTRS = (0x31, 0x47, 0x49, 0x64)  # abstract_origin, specification, type, object_pointer

# Bounds against hostile input.
_MAX_REF_CHAIN = 16
_MAX_RANGES = 100_000
_MAX_DEPTH = 1000
_MAX_ABBREV_TABLES = 1024  # parsed abbreviation tables kept for units to share (~50 KB each)

# Attribute sizes for skipping the DIEs the scope walk does not look into: fixed-size forms,
# forms as long as an offset, and forms whose length is read from the data.
_FIXED_FORMS = {0x0B: 1, 0x11: 1, 0x0C: 1, 0x05: 2, 0x12: 2, 0x06: 4, 0x13: 4, 0x07: 8,
                0x14: 8, 0x20: 8, 0x25: 1, 0x26: 2, 0x27: 3, 0x28: 4, 0x29: 1, 0x2A: 2,
                0x2B: 3, 0x2C: 4, 0x19: 0, 0x21: 0, 0x1E: 16, 0x1C: 4, 0x24: 8}
_OFFSET_FORMS = frozenset((0x0E, 0x1F, 0x17, 0x1D, 0x1F20, 0x1F21))
_LEB_FORMS = frozenset((0x0F, 0x15, 0x0D, 0x1A, 0x1F02, 0x1B, 0x1F01, 0x22, 0x23))

# Key in a DIE's attribute dict holding (high_pc is an address, entry_pc is an address,
# ranges is a rnglistx index) when any of those attributes is present.
_FLAGS = -1


class DwarfError(Exception):
    """Internal: malformed DWARF (never leaves this package)."""


# What malformed DWARF raises while being decoded (a mutated form can also turn a number
# into a tuple or a huge value): the lookup then answers None instead of failing the run.
_MALFORMED = (DwarfError, IndexError, struct.error, ValueError, KeyError, RecursionError,
              TypeError, OverflowError)
