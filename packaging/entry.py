"""Entry script frozen by PyInstaller: runs the perfparser command line."""

from perfparser_py.cli import entry

entry()
