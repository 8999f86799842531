#!/usr/bin/env python3
"""Embed protocol/schema.toml into perfparser_py/protocol/schema.py.

The package (and a frozen PyInstaller build) then needs no data file at run time.
Run after editing schema.toml; tests/protocol checks the embedded copy is current.
"""

import pprint
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCHEMA = HERE / "schema.toml"
TARGET = HERE.parent / "perfparser_py" / "protocol" / "schema.py"


def render(schema: dict) -> str:
    return (
        '"""QPERFSTREAM message layouts, generated from protocol/schema.toml by'
        ' protocol/generate.py.\n\nDo not edit by hand."""\n\n'
        f"SCHEMA = {pprint.pformat(schema, width=100, sort_dicts=False)}\n"
    )


def main() -> int:
    text = render(tomllib.loads(SCHEMA.read_text()))
    if "--check" in sys.argv[1:]:
        return 0 if TARGET.exists() and TARGET.read_text() == text else 1
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
