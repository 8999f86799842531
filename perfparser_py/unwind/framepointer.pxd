# C types of framepointer.py when compiled (setup.py); the .py stays the source of truth. A
# call chain entry is an unsigned 64-bit address or a context marker.

cimport cython

cdef unsigned long long CONTEXT_HV, CONTEXT_KERNEL, CONTEXT_MAX, CONTEXT_USER


@cython.locals(frames=list, kernel=bint, user_seen=bint, addr="unsigned long long")
cpdef list callchain_frames(object callchain, object ip, bint ip_is_user, object branch_stack)
