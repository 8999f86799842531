"""A saved QPERFSTREAM given as input: hotspot opens its own saved files (`*.perfparser`)
through its parser, as upstream passes them through. We write it in the flavour the launching
hotspot reads, which can differ from the one it was saved in (hotspot 1.3.0 rejects the
newer layouts)."""

from __future__ import annotations

from .perfdata.header import MAGIC_BE, MAGIC_LE


def is_saved_stream(path: str) -> bool:
    """Whether the file at `path` is a saved stream. Every run asks, before the protocol
    package is imported (~4 ms): a perf.data file is told by its own magic first."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError:
        return False  # the reader reports why it cannot open it
    if head[:8] in (MAGIC_LE, MAGIC_BE):
        return False
    from .protocol import MAGIC

    return head[:len(MAGIC)] == MAGIC


def pass_through(path: str, out, flavour: str) -> str | None:
    """Write the stream at `path` in `flavour`; returns a warning to print, or None. Messages
    the target flavour has no layout for are left out; an incomplete last message is dropped
    (hotspot would stop there)."""
    from .protocol import HEADER, ProtocolError
    from .protocol.reader import encode, read_stream

    with open(path, "rb") as f:
        data = f.read()
    stream = read_stream(data)  # ProtocolError: the caller reports it
    if stream.flavour == flavour and not stream.trailing_bytes:
        out.write(data)
        return None
    out.write(HEADER)
    dropped = 0
    for msg in stream.messages:
        try:
            out.write(encode(msg, flavour))
        except ProtocolError:
            dropped += 1
    notes = []
    if dropped:
        notes.append(f"{dropped} messages have no layout in protocol {flavour} and were left out")
    if stream.trailing_bytes:
        notes.append(f"the incomplete last message ({len(stream.trailing_bytes)} bytes) was "
                     "left out")
    return "; ".join(notes) or None
