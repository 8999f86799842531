# C types of ranges.py when compiled (setup.py); the .py stays the source of truth. The DIE
# walk calls ranges_of as a C function; .debug_ranges is read through a typed memoryview
# (the addresses stay Python ints once a base is added: a base may come from any form).

cimport cython

from perfparser_py.elf.leb128 cimport uint_at, uleb_end, uleb_value


cpdef list ranges_of(object dw, object cu, dict attrs)

cpdef list pc_range(object low, object high, bint high_is_addr)

cpdef list listed_ranges(object dw, object cu, object value, bint indexed)

@cython.locals(data="const unsigned char[:]", little=bint, n=int, width=int, out=list,
               pos=Py_ssize_t, kind=int, a="long long", b="long long", i="long long",
               j="long long")
cpdef list rnglist(object dw, object cu, object value, bint indexed)

@cython.locals(data="const unsigned char[:]", n=int, little=bint, top="unsigned long long",
               out=list, pos=Py_ssize_t, a="unsigned long long", b="unsigned long long")
cpdef list _debug_ranges(object dw, object cu, object off)
