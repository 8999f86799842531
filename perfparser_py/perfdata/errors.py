"""The one exception type of the perf.data layer, carrying perfparser's exit code (CLI.md §5)."""

TCP_SOCKET_ERROR = 1
CANNOT_OPEN = 2
HEADER_ERROR = 4
DATA_ERROR = 5
BUFFERING_ERROR = 8


class PerfDataError(Exception):
    """Bad or unreadable input. ``str(e)`` is a one-line message, ``e.exit_code`` the exit code."""

    def __init__(self, message: str, exit_code: int = DATA_ERROR) -> None:
        super().__init__(message.replace("\n", " "))
        self.exit_code = exit_code
