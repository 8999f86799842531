# C types of kallsyms.py when compiled (setup.py): the parse walks the text's bytes with C
# positions (unsigned: never below 0) and writes the addresses and line spans into u64 arrays.
# It reads the text and the class table through pointers, not bounds-checked views: every
# index is below `end` (or a byte's value, for the 256-byte table) by the loops' own tests,
# and the checks were a third of the parse (~26 M instructions on a 122 k-line kallsyms).

cimport cython

from perfparser_py.mergesort cimport stable_order

cdef int _END, _OTHER
cdef bytes _CLASS


@cython.locals(cap=size_t, out_addrs="unsigned long long[::1]", out_spans="unsigned long long[::1]",
               text="const unsigned char *", classes="const unsigned char *",
               end=size_t, n=size_t, pos=size_t, i=size_t,
               first=size_t, c="unsigned char", value="unsigned long long", plain=bint,
               digit=int, fields=int)
cpdef tuple _entries(bytes data)

@cython.locals(view="const unsigned long long[::1]", k=size_t)
cpdef bint _ascending(object addrs) except -1

@cython.locals(n=size_t, keys="const unsigned long long[::1]", order="const unsigned long long[::1]",
               k=size_t, j=size_t, spans_view="const unsigned long long[::1]",
               out_addrs="unsigned long long[::1]", out_spans="unsigned long long[::1]")
cpdef tuple _reordered(object addrs, object spans)
