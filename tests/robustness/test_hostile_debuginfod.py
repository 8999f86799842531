"""Issue 24 rule 3: a hostile debuginfod server (started here, on 127.0.0.1) costs little. A
body past the size cap (512 MB by default) is refused and nothing is stored; a trickling
server is given up after its first timeout, with one line, for the rest of the run; a redirect
to another host is not followed. Every request loop of the server is bounded in time."""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Iterator

import pytest

from perfparser_py.elf.debuginfod import DEFAULT_MAXSIZE, DebuginfodClient
from tests.local_server import LocalServer
from tests.robustness.hostile import (
    FEAT_BUILD_ID,
    FEAT_CMDLINE,
    PID,
    build_id_table,
    file_mode,
    recording,
    run,
    strings,
)

SERVE_SECONDS = 15  # no handler writes longer than this
BODY = b"\x7fELF" + bytes(4096)


class HostileServer(LocalServer):
    def __init__(self) -> None:
        super().__init__()
        self.mode = "normal"

    def _stream(self, h, chunk: bytes, pause: float) -> None:
        end = time.monotonic() + SERVE_SECONDS
        while time.monotonic() < end and not self.release.is_set():
            h.wfile.write(chunk)
            h.wfile.flush()
            if pause:
                self.release.wait(pause)

    def respond(self, h) -> None:
        mode = self.mode
        if h.path == "/served" or mode == "normal":
            h.send_response(200)
            h.send_header("Content-Length", str(len(BODY)))
            h.end_headers()
            h.wfile.write(BODY)
        elif mode == "huge-length":  # says 3 GiB, then sends zeros for as long as read
            h.send_response(200)
            h.send_header("Content-Length", str(3 << 30))
            h.end_headers()
            self._stream(h, bytes(1 << 20), 0)
        elif mode == "huge-unsized":  # no length: the end of the connection would end it
            h.send_response(200)
            h.end_headers()
            self._stream(h, bytes(1 << 20), 0)
        elif mode == "trickle":  # 200 KB at once, then one byte every 0.2 s
            h.send_response(200)
            h.end_headers()
            h.wfile.write(bytes(200_000))
            self._stream(h, b"\0", 0.2)
        elif mode in ("redirect-other", "redirect-same"):
            host = f"localhost:{self.port}" if mode == "redirect-other" else f"127.0.0.1:{self.port}"
            h.send_response(302)
            h.send_header("Location", f"http://{host}/served")
            h.send_header("Content-Length", "0")
            h.end_headers()


@pytest.fixture
def server() -> Iterator[HostileServer]:
    s = HostileServer()
    yield s
    s.stop()


def _files(root) -> list:
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def test_default_size_cap_refuses_a_3_gib_body(server, tmp_path):
    assert 100 << 20 <= DEFAULT_MAXSIZE <= 1 << 30  # "a few hundred MB"
    server.mode = "huge-length"
    client = DebuginfodClient([server.url], str(tmp_path / "c"))
    start = time.monotonic()
    assert client.find_executable(bytes(range(20))) is None
    assert time.monotonic() - start < 5
    assert not _files(tmp_path / "c")


def test_size_cap_stops_a_body_of_unknown_length(server, tmp_path):
    server.mode = "huge-unsized"
    client = DebuginfodClient([server.url], str(tmp_path / "c"), maxsize=8 << 20)
    start = time.monotonic()
    assert client.find_executable(bytes(range(20))) is None
    assert time.monotonic() - start < 5
    time.sleep(0.3)  # the abandoned transfer removes its temporary file
    assert not _files(tmp_path / "c")


def test_redirects_stay_on_the_server(server, tmp_path, capsys):
    server.mode = "redirect-same"
    client = DebuginfodClient([server.url], str(tmp_path / "same"))
    assert client.find_executable(bytes(range(20))) is not None
    assert server.requests[-1] == "/served"
    server.mode = "redirect-other"
    server.requests.clear()
    client = DebuginfodClient([server.url], str(tmp_path / "other"))
    assert client.find_executable(bytes(range(20))) is None
    assert "/served" not in server.requests
    assert "giving up on" in capsys.readouterr().err
    # another configured server is trusted as a target
    client = DebuginfodClient([server.url, f"http://localhost:{server.port}"],
                              str(tmp_path / "listed"))
    assert client.find_executable(bytes(range(20))) is not None


def test_trickling_server_costs_one_timeout_per_run(server, tmp_path):
    """20 missing files with build ids, a server that trickles: one timeout, one line."""
    server.mode = "trickle"
    names = [f"/nonexistent/lib{i}.so".encode() for i in range(20)]
    w, n = recording(names, samples_per_map=2)
    table = build_id_table([(PID, struct.pack("<I", i) * 5, name)
                            for i, name in enumerate(names)])
    data = file_mode(w.data(), {FEAT_BUILD_ID: table, FEAT_CMDLINE: strings([b"victim"])})
    (tmp_path / "perf.data").write_bytes(data)
    env = {"DEBUGINFOD_URLS": server.url, "DEBUGINFOD_MAXTIME": "2",
           "DEBUGINFOD_CACHE_PATH": str(tmp_path / "c")}
    for name in list(os.environ):
        if name.startswith("DEBUGINFOD_") and name not in env:
            env[name] = ""
    res = run(["--input", str(tmp_path / "perf.data"), "--kallsyms", "/dev/null",
               "--no-cache"], 20, env)
    assert res.code == 0 and res.samples == n
    assert res.seconds < 8  # one 2 s timeout, not 20 of them
    assert res.stderr.count("debuginfod: giving up on") == 1, res.stderr
    assert f"debuginfod: giving up on {server.url} (DEBUGINFOD_MAXTIME exceeded)" in res.stderr
    assert len(server.requests) == 1


def test_run_budget_ends_all_downloads(server, tmp_path):
    server.mode = "trickle"
    client = DebuginfodClient([server.url], str(tmp_path / "c"), maxtime=30, budget=1.5)
    start = time.monotonic()
    assert client.find_executable(bytes(range(20))) is None
    assert client.find_debuginfo(bytes(range(20))) is None
    assert time.monotonic() - start < 4
    assert len(server.requests) == 1
