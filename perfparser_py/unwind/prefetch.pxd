# prefetch.py's `lines` in C (prefetch.py says why), for the compiled modules that cimport
# this module: one __builtin_prefetch (gcc, clang) a 64-byte cache line, on the buffer of a
# memoryview or bytes the caller holds, read in place: no buffer is acquired. Anything else is
# left alone. A prefetch never faults; `n` is bounded by the buffer's length all the same.

cdef extern from *:
    """
    static CYTHON_INLINE void perfparser_prefetch_lines(PyObject *stack, Py_ssize_t n) {
        const char *start;
        Py_ssize_t len;
        if (PyMemoryView_Check(stack)) {
            start = (const char *)PyMemoryView_GET_BUFFER(stack)->buf;
            len = PyMemoryView_GET_BUFFER(stack)->len;
        } else if (PyBytes_Check(stack)) {
            start = PyBytes_AS_STRING(stack);
            len = PyBytes_GET_SIZE(stack);
        } else {
            return;
        }
        if (n > len)
            n = len;
        for (Py_ssize_t k = 0; k < n; k += 64)
            __builtin_prefetch(start + k);
    }
    """
    void lines "perfparser_prefetch_lines" (object stack, Py_ssize_t n)
