"""DWARF line tables and inline scopes of one ELF image, read lazily per compilation unit.

`DwarfInfo.for_image(image)` finds the debug sections; `line_at(vaddr)` gives the line-table
row for an address and `scopes_at(vaddr)` the enclosing subprogram plus the inlined
subroutines containing it (SEMANTICS §10.3-§10.5). DWARF 2-5 are read, including the DWARF 5
string/address/range indirections, split DWARF (.dwo, .dwp) and dwz's supplementary files. A
CU is parsed only when an address inside it is asked for; its DIE index, line table and
resolved scopes are cached. Malformed or hostile DWARF makes the affected lookup return None;
nothing raises. When the image carries a persistent cache record (`image.cache`), answers are
kept there and the DWARF is only decoded for addresses it lacks.

Its modules, in the order they build on each other:

- constants: the DW_TAG, DW_AT and DW_FORM numbers read, bounds against hostile input, DwarfError
- units: unit headers, abbreviation tables, unit DIEs, which unit holds an address or an offset
- dies: attribute values, reading a DIE, the walk over a unit's DIE tree
- ranges: the address ranges of a DIE (low/high pc, .debug_ranges, .debug_rnglists)
- lines: line programs and the line table built from one
- scopes: Scope; the subprogram and inlined scopes at an address, their names and types
- split: where a skeleton unit's split unit is (.dwo files, .dwp packages)
- supplement: the supplementary file dwz moves shared DIEs and strings to, and where it is
- info: DwarfInfo, made of the parts above; RecordedDwarf; prefetch_sections
"""

from __future__ import annotations

from .info import SECTIONS, DwarfInfo, RecordedDwarf, prefetch_sections
from .scopes import Scope, _gcc_numbers_lambdas_per_scope

__all__ = ["SECTIONS", "DwarfInfo", "RecordedDwarf", "Scope", "_gcc_numbers_lambdas_per_scope",
           "prefetch_sections"]
