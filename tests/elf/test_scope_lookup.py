"""The lookups of scopes.py (the subprogram holding an address, by an index of their ranges;
the scope nodes holding it inside one, by a pass over their arrays) give what a scan of every
subprogram and node in DIE order gives, on random units with overlapping, empty and unsorted
ranges, nodes without ranges, and more subprograms and nodes found after the first lookups (a
later walk of a pending subtree)."""

from __future__ import annotations

import random

from perfparser_py.elf.dwarf.scopes import _nodes_at, _subprogram_at
from perfparser_py.elf.dwarf.units import _Cu


def _contains(ranges, addr):
    return any(lo <= addr < hi for lo, hi in ranges)


def _first_holding(subprograms, addr):
    return next((off for off, ranges in subprograms if _contains(ranges, addr)), None)


def _scan(nodes, addr):
    included, found = [], []
    for i, (_off, parent, ranges, _inlined) in enumerate(nodes):
        ok = (parent < 0 or included[parent]) and (ranges is None or _contains(ranges, addr))
        included.append(ok)
        if ok:
            found.append(i)
    return found


def _ranges(rng, span):
    out = []
    for _ in range(rng.choice((0, 1, 1, 1, 2, 3))):
        lo = rng.randrange(span)
        out.append((lo, lo + rng.randrange(-4, 60)))  # some empty or reversed
    return out


def _unit():
    cu = _Cu()
    cu.subprograms, cu.nodes, cu.sub_index, cu.kids = [], {}, None, {}
    return cu


def _grow(rng, cu, span, count):
    for _ in range(count):
        off = 0x1000 + 16 * len(cu.subprograms)
        cu.subprograms.append((off, _ranges(rng, span)))
        nodes = cu.nodes[off] = []
        _add_nodes(rng, nodes, span, rng.randrange(30))


def _add_nodes(rng, nodes, span, count):
    for _ in range(count):
        parent = rng.randrange(-1, len(nodes)) if nodes else -1
        ranges = None if rng.random() < 0.2 else _ranges(rng, span)
        nodes.append((0x9000 + len(nodes), parent, ranges, rng.random() < 0.7))


def test_indexed_lookups_equal_a_scan_in_die_order():
    rng = random.Random(5)
    for _ in range(60):
        span = rng.choice((64, 400, 3000))
        cu = _unit()
        _grow(rng, cu, span, rng.randrange(1, 40))
        for _round in range(2):
            for addr in range(-2, span + 70, 3):
                sub = _subprogram_at(cu, addr)
                assert sub == _first_holding(cu.subprograms, addr), addr
                if sub is not None:
                    nodes = cu.nodes[sub]
                    assert _nodes_at(cu, sub, nodes, addr) == _scan(nodes, addr), addr
            # what a later walk adds: more subprograms, more nodes in a known one
            _grow(rng, cu, span, rng.randrange(1, 5))
            _add_nodes(rng, cu.nodes[rng.choice(cu.subprograms)[0]], span, 5)
