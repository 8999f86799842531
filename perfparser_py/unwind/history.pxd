# C types of history.py when compiled (setup.py); the .py stays the source of truth.

cimport cython


cdef class History(dict):
    cdef public dict pending

    cpdef write(self, object base, object offsets, object values)
    cpdef object word(self, object addr)
    cpdef bound(self)
    @cython.locals(offsets=tuple, values=tuple, i=Py_ssize_t)
    cpdef settle(self)
