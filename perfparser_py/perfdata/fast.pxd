# C types of fast.py when compiled (setup.py); the .py stays the source of truth. Offsets in
# the record and indices into the unpacked fields are C integers; array lengths and the stack
# size are u64 as recorded.

cimport cython


cdef class _Words:
    cdef object attr, new_array, sample, buf
    cdef dict arrays
    cdef const unsigned long long[::1] words  # of `buf`
    cdef Py_ssize_t w_id, w_ip, w_pid, w_time, w_addr, w_sid, w_cpu, w_period, head, tail
    cdef bint chained

    cdef bint _words_of(self, object buf, Py_ssize_t pos, Py_ssize_t end) except -1
    cdef inline unsigned long long _at(self, Py_ssize_t base, Py_ssize_t index)
    @cython.locals(w="unsigned long long", pid="unsigned long long", tid="unsigned long long",
                   cpu="unsigned long long")
    cdef inline (unsigned long long, unsigned long long, unsigned long long) _halves(
        self, Py_ssize_t p)


cdef class Fused(_Words):
    @cython.locals(p=Py_ssize_t, q=Py_ssize_t, last=Py_ssize_t, nr="unsigned long long",
                   pid="unsigned long long", tid="unsigned long long", cpu="unsigned long long")
    cpdef decode(self, object buf, Py_ssize_t pos, Py_ssize_t end, object misc, object size)
    cdef _general(self, object buf, Py_ssize_t pos, Py_ssize_t end, object misc, object size)


cdef class Stacked(_Words):
    cdef Py_ssize_t nregs, t_weight, t_data_src, t_transaction

    @cython.locals(p=Py_ssize_t, q=Py_ssize_t, last=Py_ssize_t, nr="unsigned long long",
                   n="unsigned long long", abi="unsigned long long", dyn="unsigned long long",
                   pid="unsigned long long", tid="unsigned long long", cpu="unsigned long long")
    cpdef decode(self, object buf, Py_ssize_t pos, Py_ssize_t end, object misc, object size)
