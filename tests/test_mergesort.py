"""mergesort.stable_order against Python's stable sort: records in ascending runs or not, with
ties on every key, from none to many."""

from __future__ import annotations

import random
from array import array

import pytest

from perfparser_py.mergesort import stable_order


@pytest.mark.parametrize("n", [0, 1, 2, 3, 17, 1000])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_order_is_a_stable_sort_by_the_three_keys(n: int, seed: int) -> None:
    rng = random.Random(seed)
    spread = rng.choice([2, 10, 1 << 64])  # many ties, some, hardly any
    keys = [array("Q", (rng.randrange(min(spread, 1 << 64)) for _ in range(n)))
            for _ in range(3)]
    if seed == 3:  # ascending runs, as kallsyms' and .debug_aranges' records come
        for key in keys:
            key[:] = array("Q", sorted(key[: n // 2]) + sorted(key[n // 2:]))
    expected = sorted(range(n), key=lambda i: (keys[0][i], keys[1][i], keys[2][i]))
    assert list(stable_order(keys[0], keys[1], keys[2], n)) == expected


def test_one_key_given_three_times_keeps_equal_records_in_index_order() -> None:
    keys = array("Q", [5, 3, 5, 1, 3, 5])
    assert list(stable_order(keys, keys, keys, len(keys))) == [3, 1, 4, 0, 2, 5]
