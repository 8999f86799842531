# C types of fast.py when compiled (setup.py); the .py stays the source of truth. Offsets in
# the record and indices into the unpacked fields are C integers; array lengths and the stack
# size are u64 as recorded.

cimport cython


cdef class Fused:
    cdef object prefix, u64, new_array
    cdef dict arrays
    cdef Py_ssize_t head, tail, i_id, i_ip, i_pid, i_tid, i_time, i_cpu, i_period
    cdef bint chained

    @cython.locals(v=tuple, at=Py_ssize_t, nr="unsigned long long")
    cpdef decode(self, object buf, Py_ssize_t pos, Py_ssize_t end, object misc, object size)


cdef class Stacked:
    cdef object attr, prefix, regs_and_size, tail, i_tail, u64, new_array, sample
    cdef dict arrays
    cdef Py_ssize_t head, regs_size, tail_size
    cdef Py_ssize_t i_id, i_ip, i_pid, i_tid, i_time, i_addr, i_sid, i_cpu, i_period
    cdef bint chained

    @cython.locals(v=tuple, at=Py_ssize_t, nr="unsigned long long", n="unsigned long long",
                   values=tuple)
    cpdef decode(self, object buf, Py_ssize_t pos, Py_ssize_t end, object misc, object size)
