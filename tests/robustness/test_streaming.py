"""End-to-end stream input through the CLI: pipe-mode data trickled into stdin, file-mode data
on stdin (spooled), and --host/--port against a local TCP server, including one that closes
early. (The reader alone is covered by tests/perfdata/test_streams.py.)"""

from __future__ import annotations

import random
import socket
import subprocess
import tempfile
import threading

import pytest

from tests.robustness.cli_run import FP, PIPE, assert_clean, env, options, parser_cmd
from tests.robustness.fuzzer import layout

TIMEOUT = 60


def _from_file(path, app) -> bytes:
    res = subprocess.run([*parser_cmd(), *options(app), "--input", str(path)],
                         capture_output=True, timeout=TIMEOUT, env=env())
    assert res.returncode == 0, res.stderr.decode()
    return res.stdout


def _trickled(data: bytes, app, seed: int) -> subprocess.CompletedProcess:
    """Run the parser with `data` written to its stdin in random 1..4096-byte pieces, flushed each time."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([*parser_cmd(), *options(app)], stdin=subprocess.PIPE,
                                stdout=out, stderr=err, env=env())
        rng = random.Random(seed)
        pos = 0
        while pos < len(data):
            n = rng.choice((1, 3, 7, 8, 9, 512, 4096))
            proc.stdin.write(data[pos:pos + n])
            proc.stdin.flush()
            pos += n
        proc.stdin.close()
        proc.wait(TIMEOUT)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out.read(), err.read())


@pytest.mark.parametrize("seed", [1, 2])
def test_trickled_pipe_data_on_stdin_equals_file(seed):
    path = PIPE / "pipe.data"
    res = _trickled(path.read_bytes(), PIPE, seed)
    assert res.returncode == 0, res.stderr.decode()
    assert res.stdout == _from_file(path, PIPE)


def test_file_format_on_stdin_is_buffered_and_equals_file():
    path = FP / "perf.data"
    res = _trickled(path.read_bytes(), FP, 3)
    assert res.returncode == 0, res.stderr.decode()
    assert b"requires buffering" in res.stderr
    assert res.stdout == _from_file(path, FP)


class _Server:
    """Serves `data` to one client on a local port, then closes the connection."""

    def __init__(self, data: bytes) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, args=(data,), daemon=True)
        self.thread.start()

    def _serve(self, data: bytes) -> None:
        conn, _ = self.sock.accept()
        with conn:
            for pos in range(0, len(data), 1000):
                conn.sendall(data[pos:pos + 1000])
        self.sock.close()


def _via_tcp(data: bytes) -> subprocess.CompletedProcess:
    server = _Server(data)
    res = subprocess.run([*parser_cmd(), *options(PIPE), "--host", "127.0.0.1",
                          "--port", str(server.port)], capture_output=True, timeout=TIMEOUT,
                         env=env())
    server.thread.join(5)
    return res


def test_tcp_input_equals_file():
    path = PIPE / "pipe.data"
    res = _via_tcp(path.read_bytes())
    assert res.returncode == 0, res.stderr.decode()
    assert res.stdout == _from_file(path, PIPE)


def test_tcp_server_closing_at_a_record_boundary_ends_the_input(tmp_path):
    data = (PIPE / "pipe.data").read_bytes()
    off = layout(data).records[300][0]
    res = _via_tcp(data[:off])
    assert res.returncode == 0, res.stderr.decode()
    cut = tmp_path / "cut.data"
    cut.write_bytes(data[:off])
    assert res.stdout == _from_file(cut, PIPE)


def test_tcp_server_closing_inside_a_record_keeps_what_came_before(tmp_path):
    data = (PIPE / "pipe.data").read_bytes()
    off = layout(data).records[300][0]
    res = _via_tcp(data[:off + 20])
    assert res.returncode == 5  # stream ends inside a record body (CLI.md §5)
    assert_clean(res.returncode, res.stderr, res.stdout)
    cut = tmp_path / "cut.data"
    cut.write_bytes(data[:off])
    assert res.stdout == _from_file(cut, PIPE)
