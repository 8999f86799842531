"""The one exception type of the perf.data layer, carrying perfparser's exit code (CLI.md §5)."""

from ..exitcodes import BUFFERING_ERROR, CANNOT_OPEN, DATA_ERROR, HEADER_ERROR, TCP_SOCKET_ERROR

__all__ = ["BUFFERING_ERROR", "CANNOT_OPEN", "DATA_ERROR", "HEADER_ERROR", "TCP_SOCKET_ERROR",
           "PerfDataError"]


class PerfDataError(Exception):
    """Bad or unreadable input. ``str(e)`` is a one-line message, ``e.exit_code`` the exit code."""

    def __init__(self, message: str, exit_code: int = DATA_ERROR) -> None:
        super().__init__(message.replace("\n", " "))
        self.exit_code = exit_code
