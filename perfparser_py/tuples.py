"""Named tuple types declared the way typing.NamedTuple declares them (a class with annotated
fields, trailing defaults and a docstring), built by collections.namedtuple; and typing's
TYPE_CHECKING, for the imports only annotations name. Neither imports typing.

typing.NamedTuple turns every annotation string into a compiled ForwardRef: ~100 compile()
calls for the record types every run builds at start-up, which with the import of typing
itself cost ~5 ms of each start (~3 % of a 10k-sample file). The tuples are the same.
"""

from __future__ import annotations

from collections import namedtuple

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing


def named_tuple(cls: type) -> type:
    """The namedtuple of `cls`'s annotated fields, in order; class attributes named like
    fields are their defaults and must be the last fields, as for typing.NamedTuple."""
    body = vars(cls)
    fields = tuple(body.get("__annotations__", {}))
    defaults = [body[name] for name in fields if name in body]
    if any(name in body for name in fields[:len(fields) - len(defaults)]):
        raise TypeError(f"{cls.__name__}: a field without a default follows one with it")
    extra = [name for name in body if not name.startswith("__") and name not in fields]
    if extra:
        raise TypeError(f"{cls.__name__}: only fields are supported, not {extra}")
    made = namedtuple(cls.__name__, fields, defaults=defaults, module=cls.__module__)
    made.__qualname__ = cls.__qualname__
    made.__annotations__ = body.get("__annotations__", {})
    if cls.__doc__:
        made.__doc__ = cls.__doc__
    return made
