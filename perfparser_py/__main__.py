"""`python -m perfparser_py`: the perfparser command."""

from .cli import entry

entry()
