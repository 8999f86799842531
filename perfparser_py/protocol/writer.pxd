# C types of writer.py when compiled (setup.py); the .py stays the source of truth. The
# emitter (emit.pxd) calls a StreamWriter's per-message methods as C functions, and they
# reach the buffer, the fast paths' packers and the frame counts as C fields.

cimport cython


cdef class FrameCounts:
    cdef public bytearray location_state
    cdef public Py_ssize_t samples, frames
    cdef public set pids
    cdef public dict unnamed

    @cython.locals(state=bytearray, n=Py_ssize_t, f=Py_ssize_t, named=int, bits=int,
                   unnamed=dict)
    cpdef add(self, object frames, Py_ssize_t uses, object pid)


cdef class StreamWriter:
    cdef public object out, flavour
    cdef bytearray _buf
    cdef object _thread_start, _thread_end, _command, _location, _symbol, _string, _lost
    cdef object _features, _error, _progress, _tracepoint_format, _attributes
    cdef object _context_switch, _sample, _tracepoint_sample, _debuginfo_progress
    cdef public object _sample_type, _location_prefix  # tests look at the fast paths
    cdef public dict _packed_frames
    cdef Py_ssize_t _packed_count
    cdef FrameCounts _counts

    cdef _put(self, object lay, object values)
    cpdef location(self, object id, object address, object file, object pid, object line,
                   object column, object parent, object rel_addr)
    cpdef symbol(self, object id, object name, object binary, object path, object is_kernel,
                 object rel_addr, object size, object actual_path, object is_inline)
    cpdef string(self, object id, object data)
    cdef _fold(self, list entry)
    cpdef sample(self, object pid, object tid, object time, object cpu, object frames,
                 object guessed, object values)
    cdef _sample_uncounted(self, object pid, object tid, object time, object cpu,
                           object frames, object guessed, object values)
    @cython.locals(cached=list)
    cpdef sample_one(self, object pid, object tid, object time, object cpu, object frames,
                     object guessed, object attribute_id, object value)
    @cython.locals(cache=dict, n=Py_ssize_t)
    cdef list _pack_frames(self, object frames, object pid)


@cython.locals(buf=bytearray)
cdef _append(StreamWriter writer, object message)
