# C types of dies.py when compiled (setup.py); the .py stays the source of truth. The walk
# reads .debug_info through a typed memoryview, its positions, abbreviation slots, tags and
# open-DIE stack are C integers, and the abbreviation table is C arrays; only the DIEs it
# keeps are decoded into Python objects.

cimport cython

from perfparser_py.elf.dwarf.ranges cimport listed_ranges, pc_range, ranges_of
from perfparser_py.elf.leb128 cimport uint_at, uleb_end, uleb_value

# the tags the walk tests, C numbers
cdef int _TAG_SUBPROGRAM, _TAG_INLINED, _TAG_LEXICAL_BLOCK, _MAX_DEPTH, _ENTRY
cdef int _UNSKIPPABLE, _ADDR_SIZED, _OFFSET_SIZED, _REF_ADDR_SIZED, _SKIP_VARIABLE


cdef class _Table:
    cdef public int[:] slots, tags, sibling_at, steps_at, low_at, high_at, ranges_at
    cdef public signed char[:] children, fast, high_size, high_addr
    cdef public long long[:] size, steps
    cdef public dict sparse

    cdef Py_ssize_t slot(self, long long code) except? -2


@cython.locals(dense=bint, slots="int[:]", forms="signed char[:]",
               tag="long long", fixed=Py_ssize_t, sibling_at=Py_ssize_t, variable=bint,
               spec=tuple, form="long long", skip=int, attr="long long",
               low_at=Py_ssize_t, high_at=Py_ssize_t, ranges_at=Py_ssize_t, high_size=int,
               high_addr=bint, seen=int, quick=int, n=Py_ssize_t, k=Py_ssize_t, t=_Table)
cpdef _Table make_table(dict abbrevs, Py_ssize_t addr, Py_ssize_t offset, Py_ssize_t ref_addr)

@cython.locals(steps="long long[:]", kind="long long", n="long long")
cdef Py_ssize_t _skip(const unsigned char[:] info, _Table t, Py_ssize_t at, Py_ssize_t pos,
                      bint little) except -1

@cython.locals(level=Py_ssize_t, code="long long", i=Py_ssize_t, sibling="long long",
               size="long long")
cdef Py_ssize_t _subtree_end(const unsigned char[:] info, _Table t, Py_ssize_t pos,
                             Py_ssize_t end, Py_ssize_t depth, Py_ssize_t base,
                             Py_ssize_t unit_end, bint little)

@cython.locals(code="long long", pos=Py_ssize_t, little=bint, base=Py_ssize_t, off4=bint,
               addr8=bint, form="long long", attrs=dict, spec=tuple, specs=list)
cpdef tuple read_die(object dw, object cu, const unsigned char[:] info, object sec,
                     dict abbrevs, Py_ssize_t off, bint ranged)

@cython.locals(info="const unsigned char[:]", t=_Table, tags="int[:]", kids="signed char[:]",
               sizes="long long[:]", sibling_at="int[:]", parents=dict, little=bint,
               unit_end=Py_ssize_t, base=Py_ssize_t, depth=Py_ssize_t,
               frames="long long[:]", off=Py_ssize_t, code="long long", i=Py_ssize_t,
               tag=int, children=bint, parent_off="long long", sub="long long",
               node="long long", sibling="long long", size="long long", has_pc=bint,
               nodes=list, abbrevs=dict, kept=bint, fast="signed char[:]",
               low_at="int[:]", high_at="int[:]", ranges_at="int[:]",
               high_size="signed char[:]", high_addr="signed char[:]", addr_size=int,
               at=Py_ssize_t, prefixes=list, pending=dict, deferred="long long[:]",
               nd=Py_ssize_t, shared=Py_ssize_t)
cpdef walk_dies(object dw, object cu, Py_ssize_t pos, Py_ssize_t end, object stack)

@cython.locals(deferred="const long long[:]", lo=Py_ssize_t, hi=Py_ssize_t, a=Py_ssize_t,
               b=Py_ssize_t, m=Py_ssize_t, k=Py_ssize_t)
cpdef Py_ssize_t pending_around(object cu, long long off) except -2


