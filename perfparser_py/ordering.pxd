# C types of ordering.py when compiled (setup.py); the .py stays the source of truth. Sizes,
# byte counts and counters are C integers (the buffer sizes are 32-bit, SEMANTICS §6.1);
# times stay Python ints (any u64).

cimport cython


cdef class EventQueue:
    cdef public object sink
    cdef object _stats
    cdef Py_ssize_t _n_samples, _n_mmaps, _max_buffer_size
    cdef object _max_time, _max_reorder_time
    cdef list _events, _task_events
    cdef Py_ssize_t _seq, _bytes, _samples, _events_in_order, _tasks_in_order
    cdef Py_ssize_t _target, _last, _max
    cdef object _last_flush_max_time
    cdef bint _violated, _violating
    cdef list _counts
    cdef public bint tracepoints, broken
    cdef Py_ssize_t _round_samples, _round_mmaps, _round_tasks, _round_bytes
    cdef object _round_start_time

    cdef _set_target(self, Py_ssize_t size)
    cdef _set_max(self, Py_ssize_t size)
    cpdef add(self, int kind, object time, Py_ssize_t size, object event)
    cpdef add_sample(self, object time, Py_ssize_t size, object event)
    @cython.locals(seq=Py_ssize_t, n=Py_ssize_t)
    cdef _push(self, object time, int kind, Py_ssize_t size, object event)
    cdef _end_round(self)
    @cython.locals(events=list, tasks=list, start_bytes=Py_ssize_t, pending=Py_ssize_t,
                   released=Py_ssize_t, queued=Py_ssize_t, t=Py_ssize_t, n_tasks=Py_ssize_t,
                   sample_kind=int, i=Py_ssize_t, j=Py_ssize_t, item=tuple, other=tuple,
                   grown=Py_ssize_t)
    cdef _flush(self, Py_ssize_t desired)
    @cython.locals(kind=int, size=Py_ssize_t)
    cdef _release(self, tuple item, object limit)


@cython.locals(added=Py_ssize_t)
cdef _sort(list items, Py_ssize_t in_order)
