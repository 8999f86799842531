"""Kernel symbols (SEMANTICS §10.6): `kallsyms` reads and parses a kallsyms file, `worker`
parses the likely one in a process forked at start-up, and `symbols` chooses the recording's
kernel's file by build id and places its addresses where that kernel was."""
