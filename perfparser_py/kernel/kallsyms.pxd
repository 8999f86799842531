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

# the in-place table (SortedKallsyms): a binary search over the text (bytes or an mmap), a few
# lines a lookup, through bounds-checked views
cdef bint _is_line_end(unsigned char c)

cdef size_t _line_from(const unsigned char[::1] text, size_t pos, size_t end) except? 0

cdef size_t _line_before(const unsigned char[::1] text, size_t pos, size_t lo) except? 0

@cython.locals(classes="const unsigned char *", i=size_t, value="unsigned long long", digit=int)
cdef (unsigned long long, size_t, int) _kernel_line(const unsigned char[::1] text, size_t pos,
                                                     size_t end)

@cython.locals(text="const unsigned char[::1]", left=size_t, right=size_t, mid=size_t, at=size_t,
               value="unsigned long long", end=size_t, kind=int)
cpdef tuple _last_entry(object data, size_t lo, size_t hi, unsigned long long addr)

@cython.locals(text="const unsigned char[::1]", at=size_t, value="unsigned long long", kind=int)
cpdef object _next_entry(object data, size_t end, size_t hi)
