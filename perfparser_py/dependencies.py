"""The libraries a run needs, with the oldest versions the suite passes with (pyproject.toml's
[project] dependencies and CI's tests/oldest-constraints.txt say the same, which
tests/test_dependencies.py checks), and the one line that names one missing or too old.

Nothing here is on the way of a working run (no version is parsed at start): the command line
asks `problem()` only after an unexpected error, which is what an absent library (ImportError)
or an older one without an API the parser calls (AttributeError, TypeError) raises, so the
line replaces "internal error"."""

from __future__ import annotations

import importlib

# import name -> (distribution name, oldest version)
MINIMUM = {
    "construct": ("construct", "2.10.68"),
    "zstandard": ("zstandard", "0.19"),
    "lz4": ("lz4", "4.0.2"),
}


def release(version: str) -> tuple[int, ...]:
    """The numeric release of a version string: "0.22.0" -> (0, 22, 0); "4.4.5.dev1" and
    "2.10.68rc1" compare by 4.4.5 and 2.10.68."""
    parts = []
    for part in version.split("."):
        digits = part[:len(part) - len(part.lstrip("0123456789"))]
        if not digits:
            break
        parts.append(int(digits))
        if digits != part:
            break
    return tuple(parts)


def problem() -> str | None:
    """The first library of MINIMUM that is missing or older than its minimum, as one line
    that says how to fix it; None if all are there."""
    for module, (dist, oldest) in MINIMUM.items():
        need = f"needs {dist} >= {oldest}"
        try:
            found = getattr(importlib.import_module(module), "__version__", None)
        except ImportError:
            return f"{need} (not installed): pip install '{dist}>={oldest}'"
        except Exception as err:  # noqa: BLE001 - a broken install: name the library anyway
            return f"{need} (its import fails: {type(err).__name__}: {err}): " \
                   f"pip install --force-reinstall '{dist}>={oldest}'"
        if not isinstance(found, str) or release(found) < release(oldest):
            return f"{need} (found {found or 'no version'}): pip install -U '{dist}>={oldest}'"
    return None
