"""Kernel symbols from a kallsyms file (SEMANTICS §10.6), plain or gzip-compressed."""

from __future__ import annotations

import bisect
import gzip
import os
import zlib


class KallsymsError(Exception):
    """The kallsyms file cannot be used; the message is upstream's text."""


class Kallsyms:
    """Sorted kernel symbol table: address -> (name, module)."""

    def __init__(self, addrs: list[int], names: list[str], modules: list[str]) -> None:
        self._addrs = addrs
        self._names = names
        self._modules = modules

    def __len__(self) -> int:
        return len(self._addrs)

    @staticmethod
    def cached_path(debug_paths: list[str], build_id: bytes) -> str | None:
        """First `D/[kernel.kallsyms]/<hex id>/kallsyms` (perf's build-id cache) that exists."""
        for d in debug_paths:
            cand = os.path.join(d, "[kernel.kallsyms]", build_id.hex(), "kallsyms")
            if d and os.path.isfile(cand):
                return cand
        return None

    @staticmethod
    def load(path: str) -> Kallsyms:
        """Parse `path`; raises KallsymsError with upstream's message on failure."""
        try:
            with open(path, "rb") as f:
                data = f.read()
            if data[:2] == b"\x1f\x8b":
                data = gzip.decompress(data)
        except OSError as e:
            raise KallsymsError(e.strerror or str(e)) from None
        except (EOFError, zlib.error, gzip.BadGzipFile) as e:
            raise KallsymsError(f"corrupt gzip data: {e}") from None
        entries: list[tuple[int, str, str]] = []
        for line in data.splitlines():
            main, _, module = line.partition(b"\t")
            fields = main.split()
            if not fields:
                continue
            token = fields[0]
            if token == b"(null)":
                addr = 0
            else:
                try:
                    addr = int(token, 16)
                except ValueError:
                    raise KallsymsError(
                        "Invalid address: " + token.decode("utf-8", "replace")
                    ) from None
            if addr == 0 or len(fields) < 3:
                continue
            entries.append((
                addr,
                b" ".join(fields[2:]).decode("utf-8", "surrogateescape"),
                module.strip().decode("utf-8", "surrogateescape"),
            ))
        if not entries:
            raise KallsymsError("Mapping is empty.")
        entries.sort(key=lambda e: e[0])
        return Kallsyms([e[0] for e in entries], [e[1] for e in entries], [e[2] for e in entries])

    def lookup(self, addr: int) -> tuple[int, str, str] | None:
        """(symbol start, name, module or "") of the last symbol at or below `addr`."""
        i = bisect.bisect_right(self._addrs, addr) - 1
        if i < 0:
            return None
        return (self._addrs[i], self._names[i], self._modules[i])
