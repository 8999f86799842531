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

# the in-place table (SortedKallsyms): a binary search over the text (bytes or an mmap), the
# heads of a few lines a lookup, through bounds-checked views
@cython.locals(at=Py_ssize_t)
cdef Py_ssize_t _line_from(object data, Py_ssize_t pos, Py_ssize_t end) except -1

@cython.locals(at=Py_ssize_t)
cdef Py_ssize_t _line_end(object data, Py_ssize_t pos, Py_ssize_t end) except -1

@cython.locals(text="const unsigned char[::1]", classes="const unsigned char *", i=Py_ssize_t,
               value="unsigned long long", digit=int)
cdef (unsigned long long, int) _kernel_line(object data, Py_ssize_t pos, Py_ssize_t end)

@cython.locals(left=Py_ssize_t, right=Py_ssize_t, mid=Py_ssize_t, at=Py_ssize_t,
               value="unsigned long long", kind=int, end=Py_ssize_t)
cpdef tuple _last_entry(object data, Py_ssize_t lo, Py_ssize_t hi, unsigned long long addr)

@cython.locals(at=Py_ssize_t, value="unsigned long long", kind=int)
cpdef object _next_entry(object data, Py_ssize_t end, Py_ssize_t hi)

cdef bint _plain(object data, Py_ssize_t start, Py_ssize_t end) except -1
