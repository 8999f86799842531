# C types of mergesort.py when compiled (setup.py): the indices and the records' keys are u64
# views.

cimport cython


@cython.locals(a="unsigned long long[::1]", b="unsigned long long[::1]",
               bound="unsigned long long[::1]", runs=Py_ssize_t, k=Py_ssize_t, r=Py_ssize_t,
               lo=Py_ssize_t, mid=Py_ssize_t, hi=Py_ssize_t, i=Py_ssize_t, j=Py_ssize_t,
               x=Py_ssize_t, y=Py_ssize_t)
cpdef object stable_order(const unsigned long long[::1] first,
                          const unsigned long long[::1] second,
                          const unsigned long long[::1] third, Py_ssize_t n)
