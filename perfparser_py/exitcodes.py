"""perfparser's exit codes (CLI.md §5), which hotspot maps to its messages: the command line
and the perf.data layer (PerfDataError) use these names."""

NO_ERROR, TCP_SOCKET_ERROR, CANNOT_OPEN, BAD_MAGIC, HEADER_ERROR = 0, 1, 2, 3, 4
DATA_ERROR, MISSING_DATA, INVALID_OPTION, BUFFERING_ERROR = 5, 6, 7, 8
