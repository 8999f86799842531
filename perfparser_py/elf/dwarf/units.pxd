# C types of units.py when compiled (setup.py); the .py stays the source of truth. The
# abbreviation tables are parsed through a typed memoryview with C positions and numbers.

cimport cython

from perfparser_py.elf.leb128 cimport sleb, uint_at, uleb, uleb_end, uleb_value
from perfparser_py.mergesort cimport stable_order


@cython.locals(data="const unsigned char[:]", table=dict, tag="long long", children=bint,
               specs=list, ranged=bint, high_addr=bint, entry_addr=bint, rnglistx=bint,
               attr="long long", form="long long")
cpdef dict parse_abbrevs(object sec, Py_ssize_t pos, long long until=*)

@cython.locals(data="const unsigned char[:]", n=Py_ssize_t, out=dict, off=Py_ssize_t,
               length="unsigned long long", version=int, cu_off=object, addr_size=int,
               seg_size=int, pos=Py_ssize_t, end=Py_ssize_t, ranges=list, pair=Py_ssize_t,
               stop=Py_ssize_t, lo=object, size="unsigned long long")
cpdef dict read_aranges(object sec, bint little)

@cython.locals(n=Py_ssize_t, k=Py_ssize_t, j=Py_ssize_t, ranges=list,
               lo_view="unsigned long long[::1]", hi_view="unsigned long long[::1]",
               off_view="unsigned long long[::1]", order="const unsigned long long[::1]",
               s_view="unsigned long long[::1]", e_view="unsigned long long[::1]",
               u_view="unsigned long long[::1]")
cpdef tuple _sorted_ranges(dict listed)
