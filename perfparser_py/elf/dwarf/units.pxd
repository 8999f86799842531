# C types of units.py when compiled (setup.py); the .py stays the source of truth. The
# abbreviation tables are parsed through a typed memoryview with C positions and numbers.

cimport cython

from perfparser_py.elf.leb128 cimport sleb, uint_at, uleb, uleb_end, uleb_value


@cython.locals(data="const unsigned char[:]", table=dict, tag="long long", children=bint,
               specs=list, ranged=bint, high_addr=bint, entry_addr=bint, rnglistx=bint,
               attr="long long", form="long long")
cpdef dict parse_abbrevs(object sec, Py_ssize_t pos, long long until=*)

@cython.locals(data="const unsigned char[:]", n=Py_ssize_t, out=dict, off=Py_ssize_t,
               length="unsigned long long", version=int, cu_off=object, addr_size=int,
               seg_size=int, pos=Py_ssize_t, end=Py_ssize_t, ranges=list, pair=Py_ssize_t,
               stop=Py_ssize_t, lo=object, size="unsigned long long")
cpdef dict read_aranges(object sec, bint little)
