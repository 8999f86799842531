"""dispatch.ROUTES, the one table of where each event goes: every handler it names exists on
the stage object of its column, and a split run's wire (parallel.WIRE) has an entry for every
writing-side call the table can make, so a row added there needs nothing else."""

from __future__ import annotations

from perfparser_py import parallel, pipeline, reading
from perfparser_py.dispatch import ROUTES, Route

COLUMNS = {"now": pipeline.Run, "read": reading.Reading, "spaces": reading.Spaces,
           "write": pipeline.Sink, "ahead": parallel._Ahead}


def test_every_named_handler_is_a_method_of_its_column():
    assert set(COLUMNS) == set(Route._fields)
    missing = [(kind.__name__, column, getattr(route, column))
               for kind, route in ROUTES.items() for column, owner in COLUMNS.items()
               if getattr(route, column) is not None
               and not callable(getattr(owner, getattr(route, column), None))]
    assert missing == []


def test_the_wire_carries_every_writing_side_call():
    for kind, route in ROUTES.items():
        if route.now is not None:
            assert ("now", kind) in parallel.WIRE
        if route.ahead is None and (route.spaces or route.write):
            assert ("out", kind) in parallel.WIRE
        else:  # a sample: sent in short, or an event with nothing handed out
            assert ("out", kind) not in parallel.WIRE
    assert len(set(parallel.WIRE)) == len(parallel.WIRE)
