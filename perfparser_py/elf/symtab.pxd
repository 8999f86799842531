# C types of symtab.py when compiled (setup.py); the .py stays the source of truth: a symbol
# table's rows are sorted and its aliases ranked once per image, ~30 M instructions for
# libc's 10 k rows when interpreted.

cimport cython

cdef int STB_GLOBAL, STB_WEAK


@cython.locals(raw=object)
cpdef object _column(object rows, Py_ssize_t n, Py_ssize_t entsize, Py_ssize_t offset,
                     Py_ssize_t width, bint swap)

@cython.locals(strings=list, values=list, sizes=list, offsets=list, bindings=list,
               base=Py_ssize_t, last=Py_ssize_t, off=Py_ssize_t, joined=bytes, n=Py_ssize_t,
               order=list, i=Py_ssize_t, out_values=list, out_sizes=list, out_names=list,
               lo=Py_ssize_t, hi=Py_ssize_t, value="unsigned long long",
               size="unsigned long long")
cpdef tuple sorted_table(list tables)

@cython.locals(best=Py_ssize_t, best_rank=int, tied=Py_ssize_t, i=Py_ssize_t, rank=int,
               off=Py_ssize_t, under=Py_ssize_t, length=Py_ssize_t, best_under=Py_ssize_t,
               best_len=Py_ssize_t)
cpdef Py_ssize_t _best_alias(bytes strings, list names, list bindings, Py_ssize_t lo,
                             Py_ssize_t hi)

cdef int _rank(bytes strings, Py_ssize_t offset, int binding)
