# C types of leb128.py when compiled (setup.py); the compiled readers cimport them. uleb and
# sleb take any buffer and keep their numbers Python ints (LEB128 numbers of any size); only
# their bytes are C numbers.

cimport cython


@cython.locals(b=int)
cpdef tuple uleb(object data, Py_ssize_t pos)

@cython.locals(b=int)
cpdef tuple sleb(object data, Py_ssize_t pos)


@cython.locals(pos=Py_ssize_t)
cpdef Py_ssize_t uleb_end(const unsigned char[:] data, Py_ssize_t pos) except -1

@cython.locals(value="unsigned long long", shift=Py_ssize_t, b="unsigned long long")
cpdef long long uleb_value(const unsigned char[:] data, Py_ssize_t pos) except -1

@cython.locals(value="long long", shift=Py_ssize_t, b="long long")
cpdef long long sleb_value(const unsigned char[:] data, Py_ssize_t pos) except? -1

@cython.locals(value="unsigned long long", i=Py_ssize_t)
cpdef unsigned long long uint_at(const unsigned char[:] data, Py_ssize_t pos, int n,
                                 bint little) except? 0xFFFFFFFFFFFFFFFF
