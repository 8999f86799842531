"""perfparser_py.tuples.named_tuple: the tuple typing.NamedTuple would make of the same class."""

from __future__ import annotations

import pytest

from perfparser_py.tuples import named_tuple


@named_tuple
class Point:
    """A point."""

    x: int
    y: int
    label: str = ""
    tags: tuple[str, ...] = ()


def test_fields_defaults_and_tuple_behaviour():
    p = Point(1, 2)
    assert p == (1, 2, "", ())
    assert Point._fields == ("x", "y", "label", "tags")
    assert Point(1, 2, "a", ("t",)).tags == ("t",)
    assert p._replace(y=5) == Point(1, 5)
    assert Point.__doc__ == "A point."
    assert Point.__module__ == __name__
    assert Point.__annotations__["label"] == "str"
    assert not hasattr(p, "__dict__")  # as compact as the tuple itself


def test_empty_class():
    @named_tuple
    class Marker:
        pass

    assert Marker() == () and Marker._fields == ()


def test_default_before_a_plain_field_is_refused():
    with pytest.raises(TypeError, match="without a default follows"):
        @named_tuple
        class Bad:
            a: int = 0
            b: int


def test_methods_are_refused():
    with pytest.raises(TypeError, match="only fields"):
        @named_tuple
        class WithMethod:
            a: int

            def double(self) -> int:
                return 2 * self.a
