# C types of writer.py when compiled (setup.py); the .py stays the source of truth.

cimport cython


cdef class FrameCounts:
    cdef public bytearray location_state
    cdef public Py_ssize_t samples, frames
    cdef public set pids
    cdef public dict unnamed

    @cython.locals(state=bytearray, n=Py_ssize_t, f=Py_ssize_t, named=int, bits=int,
                   unnamed=dict)
    cpdef add(self, object frames, Py_ssize_t uses, object pid)


cpdef _append(object writer, object message)
