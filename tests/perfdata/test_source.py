"""Input sources: TCP connect retries and reading a pipe-mode stream over a socket."""

from __future__ import annotations

import socket
import threading

import pytest

from perfparser_py import source
from perfparser_py.perfdata.errors import PerfDataError
from tests.perfdata.perfdata_corpus import CORPUS, read_file, read_until_error


def test_tcp_connect_retries_then_exit_code_1(monkeypatch):
    delays: list[float] = []
    monkeypatch.setattr(source.time, "sleep", delays.append)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(PerfDataError) as exc:
        source.open_source(None, "127.0.0.1", port)
    assert exc.value.exit_code == 1
    assert [round(d * 1000) for d in delays] == [2 << k for k in range(11)]


def test_tcp_stream_decodes_like_the_file():
    path = CORPUS / "recorded/pipe/pipe.data"
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            conn.sendall(path.read_bytes())
        server.close()

    threading.Thread(target=serve, daemon=True).start()
    events, err = read_until_error(source.open_source(None, "127.0.0.1", port))
    assert err is None
    assert events == read_file(path)
