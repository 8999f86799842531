# C types of leb128.py when compiled (setup.py); uleb and sleb stay Python-level (their
# callers pass any buffer); the compiled DWARF readers cimport the two below.

cimport cython


@cython.locals(pos=Py_ssize_t)
cpdef Py_ssize_t uleb_end(const unsigned char[:] data, Py_ssize_t pos) except -1

@cython.locals(value="unsigned long long", shift=Py_ssize_t, b="unsigned long long")
cpdef long long uleb_value(const unsigned char[:] data, Py_ssize_t pos) except -1

@cython.locals(value="unsigned long long", i=Py_ssize_t)
cpdef unsigned long long uint_at(const unsigned char[:] data, Py_ssize_t pos, int n,
                                 bint little) except? 0xFFFFFFFFFFFFFFFF
