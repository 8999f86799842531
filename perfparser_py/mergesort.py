"""A stable sort of records that come in ascending runs, by the indices: kallsyms' lines (the
core kernel's symbols, then each module's) and .debug_aranges' ranges (one run per unit).
Written for the compiled core (mergesort.pxd: C loops over u64 views), where the tuples and
list.sort it replaced cost ~1 k instructions a record. The comparison is written out where
it is made: a C call taking the three views cost as much as the rest of the merge."""

from __future__ import annotations

from array import array


def stable_order(first, second, third, n: int) -> array:
    """The indices 0..n-1 of records sorted by (first[i], second[i], third[i]) (u64 arrays
    or views of at least n), equal records in index order: rounds that merge the ascending
    runs the records come in pairwise, each ending in a copy."""
    src = array("Q", bytes(8 * n))  # the indices in the order of the last round
    dst = array("Q", bytes(8 * n))
    bounds = array("Q", bytes(8 * (n + 1)))  # where each run starts, and n
    a = src
    b = dst
    bound = bounds
    runs = 0
    k = 0
    while k < n:  # a run ends where a record goes before its predecessor
        a[k] = k
        if k == 0 or first[k] < first[k - 1] or (first[k] == first[k - 1] and (
                second[k] < second[k - 1] or (second[k] == second[k - 1]
                                              and third[k] < third[k - 1]))):
            bound[runs] = k
            runs += 1
        k += 1
    bound[runs] = n
    while runs > 1:  # each round merges runs 2r and 2r + 1 into run r
        r = 0
        while r < runs:
            lo = bound[r]
            mid = bound[r + 1]
            hi = bound[min(r + 2, runs)]
            i = lo
            j = mid
            k = lo
            while i < mid and j < hi:
                x = a[j]
                y = a[i]
                if first[x] < first[y] or (first[x] == first[y] and (
                        second[x] < second[y] or (second[x] == second[y]
                                                  and third[x] < third[y]))):
                    b[k] = x
                    j += 1
                else:  # the left run's first on a tie: stable
                    b[k] = a[i]
                    i += 1
                k += 1
            while i < mid:
                b[k] = a[i]
                i += 1
                k += 1
            while j < hi:
                b[k] = a[j]
                j += 1
                k += 1
            bound[r // 2] = lo
            r += 2
        runs = (runs + 1) // 2
        bound[runs] = n
        a, b = b, a
        src, dst = dst, src
    return src
