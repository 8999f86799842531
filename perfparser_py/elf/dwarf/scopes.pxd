# C types of scopes.py when compiled (setup.py); the .py stays the source of truth. The pass over
# a subprogram's scope nodes reads their parents and ranges through typed views; the names and
# Scope objects stay Python's.

cimport cython


@cython.locals(m=Py_ssize_t, n=Py_ssize_t, k=Py_ssize_t, i=Py_ssize_t, ranges=list,
               parents="long long[::1]", first="long long[::1]", ranged="unsigned char[::1]",
               starts="unsigned long long[::1]", ends="unsigned long long[::1]")
cpdef tuple _node_table(list nodes)

@cython.locals(m=Py_ssize_t, parents="const long long[::1]", first="const long long[::1]",
               ranged="const unsigned char[::1]", starts="const unsigned long long[::1]",
               ends="const unsigned long long[::1]", outside=bint, a="unsigned long long",
               included="unsigned char[::1]", found=list, i=Py_ssize_t, p="long long",
               r=Py_ssize_t, stop=Py_ssize_t)
cpdef list _scan_nodes(tuple table, object addr)
