# C types of symtab.py when compiled (setup.py); the .py stays the source of truth: a symbol
# table's rows are sorted and its aliases ranked once per image, ~30 M instructions for
# libc's 10 k rows when interpreted. The rows' columns are u64 views.

cimport cython

cdef int STB_GLOBAL, STB_WEAK
cdef bint _HOST_BIG


@cython.locals(raw=object, k=Py_ssize_t, j=Py_ssize_t)
cpdef object _column(object rows, Py_ssize_t n, Py_ssize_t entsize, Py_ssize_t offset,
                     Py_ssize_t width, bint big_endian)

@cython.locals(keys="const unsigned long long[::1]", a="unsigned long long[::1]",
               b="unsigned long long[::1]", count="unsigned long long[::1]",
               differ="unsigned long long", k=Py_ssize_t, shift=int, at="unsigned long long",
               x=Py_ssize_t, digit=Py_ssize_t)
cpdef object _address_order(object values, Py_ssize_t n)

@cython.locals(k=Py_ssize_t, off="unsigned long long")
cpdef Py_ssize_t _append_kept(unsigned long long[::1] values, unsigned long long[::1] sizes,
                              unsigned long long[::1] offsets, unsigned char[::1] infos,
                              Py_ssize_t n, const unsigned long long[::1] t_values,
                              const unsigned long long[::1] t_sizes,
                              const unsigned long long[::1] t_names,
                              const unsigned char[::1] t_infos, const unsigned char[::1] keep,
                              unsigned long long base, unsigned long long last) except -1

@cython.locals(out_values=list, out_sizes=list, out_names=list, lo=Py_ssize_t, hi=Py_ssize_t,
               i=Py_ssize_t, value="unsigned long long", size="unsigned long long")
cpdef tuple _merged(const unsigned long long[::1] values, const unsigned long long[::1] sizes,
                    const unsigned long long[::1] offsets, const unsigned char[::1] infos,
                    const unsigned long long[::1] order, Py_ssize_t n, bytes strings)

@cython.locals(best=Py_ssize_t, best_rank=int, tied=Py_ssize_t, k=Py_ssize_t, i=Py_ssize_t,
               rank=int, off=Py_ssize_t, under=Py_ssize_t, length=Py_ssize_t,
               best_under=Py_ssize_t, best_len=Py_ssize_t)
cpdef Py_ssize_t _best_alias(bytes strings, const unsigned long long[::1] names,
                             const unsigned char[::1] infos,
                             const unsigned long long[::1] order, Py_ssize_t lo, Py_ssize_t hi)

@cython.locals(binding=int)
cdef int _rank(bytes strings, Py_ssize_t offset, int info)
