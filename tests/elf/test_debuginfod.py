"""debuginfod client and its use by ElfFinder, against a local HTTP server on 127.0.0.1.

The served debug file is built here (gcc + objcopy --only-keep-debug). Covered: download with
progress and the shared cache layout, cache hit without a server, 404, stalling and
trickling servers (bounded time), several URLs with the first ones failing, no network when
DEBUGINFOD_URLS is unset, the finder's last-resort lookups, and one `perf record` run
through the CLI whose frames get file:line only from the served debug file.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from perfparser_py.elf import debuginfod as di
from perfparser_py.elf.debuginfod import DebuginfodClient, default_cache_dir
from perfparser_py.elf.finder import ElfFinder
from perfparser_py.elf.image import ElfImage
from tests.local_server import LocalServer

RECORDED = b"/tmp/debuginfod-gone/prog"


class Server(LocalServer):
    """debuginfod stand-in: `files` maps request paths to bodies; `mode` misbehaves."""

    def __init__(self) -> None:
        super().__init__()
        self.files: dict[str, bytes] = {}
        self.mode = "normal"  # or "no-length", "no-headers", "no-body", "trickle", "slow"

    def respond(self, h) -> None:
        body = self.files.get(h.path)
        if body is None:
            h.send_error(404)
            return
        if self.mode == "no-headers":
            self.release.wait(10)
            return
        h.send_response(200)
        if self.mode != "no-length":  # else the end of the connection ends it
            h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if self.mode == "no-body":
            h.wfile.flush()
            self.release.wait(10)
            return
        if self.mode == "slow":  # alive, but 128 KiB per 0.3 s
            for i in range(0, len(body), 128 * 1024):
                h.wfile.write(body[i:i + 128 * 1024])
                h.wfile.flush()
                if self.release.wait(0.3):
                    return
            return
        if self.mode == "trickle":
            for i in range(len(body)):
                h.wfile.write(body[i:i + 1])
                h.wfile.flush()
                if self.release.wait(0.05):
                    return
            return
        h.wfile.write(body)

    def serve(self, build_id: bytes, kind: str, body: bytes) -> str:
        path = f"/buildid/{build_id.hex()}/{kind}"
        self.files[path] = body
        return self.url + path


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.stop()


@pytest.fixture(autouse=True)
def no_debuginfod_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests choose their own servers; the machine's DEBUGINFOD_* must not leak in."""
    for name in list(os.environ):
        if name.startswith("DEBUGINFOD_"):
            monkeypatch.delenv(name)


def build_id(path: Path) -> bytes:
    image = ElfImage.open(str(path))
    assert image is not None and image.build_id is not None
    return image.build_id


def refused_url() -> str:
    """A local URL nobody listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


# ---------------------------------------------------------------------------- client


def test_fetch_progress_cache_layout_then_cache_hit_without_server(
    built: dict[str, Path], server: Server, tmp_path: Path
) -> None:
    bid = build_id(built["pie"])
    body = built["debug"].read_bytes()
    url = server.serve(bid, "debuginfo", body)
    cache = tmp_path / "cache"
    calls: list[tuple[str, int, int]] = []
    client = DebuginfodClient([server.url + "/"], str(cache))
    path = client.find_debuginfo(bid, lambda u, n, d: calls.append((u, n, d)))
    assert path == str(cache / bid.hex() / "debuginfo")
    assert Path(path).read_bytes() == body
    assert os.listdir(cache / bid.hex()) == ["debuginfo"]  # no temporary left behind
    assert calls[0] == (url, 0, len(body)) and calls[-1] == (url, len(body), len(body))
    assert len(calls) == len(set(calls))  # each step once
    assert server.requests == [f"/buildid/{bid.hex()}/debuginfo"]
    server.stop()
    calls.clear()
    again = DebuginfodClient([server.url], str(cache)).find_debuginfo(
        bid, lambda u, n, d: calls.append((u, n, d)))
    assert again == path and calls == [] and len(server.requests) == 1


def test_unknown_length(built: dict[str, Path], server: Server, tmp_path: Path) -> None:
    bid = build_id(built["pie"])
    body = built["debug"].read_bytes()
    url = server.serve(bid, "debuginfo", body)
    server.mode = "no-length"
    calls: list[tuple[str, int, int]] = []
    client = DebuginfodClient([server.url], str(tmp_path / "c"))
    path = client.find_debuginfo(bid, lambda u, n, d: calls.append((u, n, d)))
    assert path is not None and Path(path).read_bytes() == body
    assert calls[0] == (url, 0, 0) and calls[-1] == (url, len(body), len(body))


def test_404_is_a_miss_remembered_for_the_run(built: dict[str, Path], server: Server,
                                              tmp_path: Path) -> None:
    bid = build_id(built["pie"])
    client = DebuginfodClient([server.url], str(tmp_path / "c"))
    assert client.find_debuginfo(bid) is None
    assert client.find_debuginfo(bid) is None
    assert client.find_executable(bid) is None
    assert len(server.requests) == 2  # one per kind, none repeated
    assert not (tmp_path / "c" / bid.hex() / "debuginfo").exists()


@pytest.mark.parametrize(("mode", "timeout", "maxtime"), [
    ("no-headers", 0.5, 5.0),
    ("no-body", 0.5, 5.0),
    ("trickle", 0.5, 5.0),  # too slow to deliver the first 100 KiB in time
    ("trickle", 5.0, 1.0),  # progress, but over the total budget
    ("no-headers", 5.0, 1.0),  # the total budget holds while the request itself blocks
])
def test_stalling_server_is_given_up_in_bounded_time(
    built: dict[str, Path], server: Server, tmp_path: Path, mode: str, timeout: float,
    maxtime: float,
) -> None:
    bid = build_id(built["pie"])
    server.serve(bid, "debuginfo", built["debug"].read_bytes())
    server.serve(bid, "executable", built["pie"].read_bytes())
    server.mode = mode
    client = DebuginfodClient([server.url], str(tmp_path / "c"), timeout=timeout,
                              maxtime=maxtime)
    start = time.monotonic()
    assert client.find_debuginfo(bid) is None
    assert time.monotonic() - start < min(timeout, maxtime) + 5  # bounded, not forever
    # The server is now known dead: another file is not asked for at all.
    assert client.find_executable(bid) is None
    assert len(server.requests) == 1
    # The abandoned transfer removes its temporary file soon (at once unless it is blocked).
    end = time.monotonic() + timeout + 1
    while any(p.is_file() for p in (tmp_path / "c").rglob("*")) and time.monotonic() < end:
        time.sleep(0.05)
    assert not any(p.is_file() for p in (tmp_path / "c").rglob("*"))


def test_slow_server_is_given_up_after_its_first_timeout(server: Server, tmp_path: Path,
                                                         capsys) -> None:
    """Even one that delivers (issue 24: 20 build ids at 30 s each kept hotspot waiting)."""
    bid = bytes(range(20))
    server.serve(bid, "debuginfo", b"x" * (1 << 20))
    server.serve(bid, "executable", b"y" * (1 << 20))
    server.mode = "slow"
    client = DebuginfodClient([server.url], str(tmp_path / "c"), timeout=5.0, maxtime=0.8)
    start = time.monotonic()
    assert client.find_debuginfo(bid) is None
    assert client.find_executable(bid) is None
    assert time.monotonic() - start < 3  # one capped transfer
    assert len(server.requests) == 1
    assert capsys.readouterr().err == (
        f"debuginfod: giving up on {server.url} (DEBUGINFOD_MAXTIME exceeded)\n")


def test_progress_callback_errors_propagate_and_leave_no_file(
    built: dict[str, Path], server: Server, tmp_path: Path
) -> None:
    bid = build_id(built["pie"])
    server.serve(bid, "debuginfo", built["debug"].read_bytes())

    def broken(url: str, numerator: int, denominator: int) -> None:
        raise BrokenPipeError("hotspot went away")

    with pytest.raises(BrokenPipeError):
        DebuginfodClient([server.url], str(tmp_path / "c")).find_debuginfo(bid, broken)
    # The transfer may still complete into the cache, but no temporary file stays behind.
    end = time.monotonic() + 2
    while list((tmp_path / "c").rglob(".download.*")) and time.monotonic() < end:
        time.sleep(0.05)
    assert not list((tmp_path / "c").rglob(".download.*"))


def test_timeouts_from_the_environment_bound_a_stall(
    built: dict[str, Path], server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bid = build_id(built["pie"])
    server.serve(bid, "debuginfo", built["debug"].read_bytes())
    server.mode = "no-body"
    monkeypatch.setenv("DEBUGINFOD_URLS", server.url)
    monkeypatch.setenv("DEBUGINFOD_CACHE_PATH", str(tmp_path / "c"))
    monkeypatch.setenv("DEBUGINFOD_TIMEOUT", "0.5")
    client = DebuginfodClient.from_env()
    assert client is not None and client.timeout == 0.5 and client.maxtime == di.DEFAULT_MAXTIME
    start = time.monotonic()
    assert client.find_debuginfo(bid) is None
    assert time.monotonic() - start < 6  # bounded by the 0.5 s stall timeout, not forever


def test_several_urls_first_ones_failing(built: dict[str, Path], server: Server,
                                         tmp_path: Path) -> None:
    bid = build_id(built["pie"])
    body = built["debug"].read_bytes()
    other = Server()  # answers 404
    try:
        url = server.serve(bid, "debuginfo", body)
        calls: list[str] = []
        client = DebuginfodClient(["no scheme", refused_url(), other.url, server.url],
                                  str(tmp_path / "c"))
        path = client.find_debuginfo(bid, lambda u, n, d: calls.append(u))
        assert path is not None and Path(path).read_bytes() == body
        assert other.requests == [f"/buildid/{bid.hex()}/debuginfo"]
        assert set(calls) == {url}
    finally:
        other.stop()


def test_maxsize_rejects_big_files(built: dict[str, Path], server: Server,
                                   tmp_path: Path) -> None:
    bid = build_id(built["pie"])
    body = built["debug"].read_bytes()
    server.serve(bid, "debuginfo", body)
    client = DebuginfodClient([server.url], str(tmp_path / "c"), maxsize=len(body) - 1)
    assert client.find_debuginfo(bid) is None
    client = DebuginfodClient([server.url], str(tmp_path / "c"), maxsize=len(body))
    assert client.find_debuginfo(bid) is not None


def test_elfutils_negative_cache_entry_is_honoured(built: dict[str, Path], server: Server,
                                                   tmp_path: Path) -> None:
    bid = build_id(built["pie"])
    server.serve(bid, "debuginfo", built["debug"].read_bytes())
    cache = tmp_path / "c"
    miss = cache / bid.hex() / "debuginfo"
    miss.parent.mkdir(parents=True)
    miss.touch(mode=0)
    assert DebuginfodClient([server.url], str(cache)).find_debuginfo(bid) is None
    assert server.requests == []
    old = time.time() - di.DEFAULT_CACHE_MISS_S - 10
    os.utime(miss, (old, old))  # expired: ask again and replace it
    assert DebuginfodClient([server.url], str(cache)).find_debuginfo(bid) == str(miss)
    assert miss.stat().st_size > 0


def test_unset_urls_means_no_client_and_no_network(
    built: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("network used without DEBUGINFOD_URLS")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    assert DebuginfodClient.from_env() is None
    for value in ("", "   ", "ima:enforcing"):
        assert DebuginfodClient.from_env({"DEBUGINFOD_URLS": value}) is None
    app = tmp_path / "app"
    app.mkdir()
    shutil.copy(built["stripped"], app / "prog")
    finder = ElfFinder(str(app), [], "/nonexistent-sysroot/", [],
                       {RECORDED: build_id(built["pie"])})
    assert finder.debuginfod is None
    _, image = finder.find(RECORDED)
    assert image is not None and image.debug is None


def test_file_urls(built: dict[str, Path], tmp_path: Path) -> None:
    """libdebuginfod accepts file:// servers; a missing file there is only a miss."""
    bid = build_id(built["pie"])
    root = tmp_path / "srv"
    (root / "buildid" / bid.hex()).mkdir(parents=True)
    shutil.copy(built["debug"], root / "buildid" / bid.hex() / "debuginfo")
    client = DebuginfodClient([root.as_uri()], str(tmp_path / "c"))
    assert client.find_executable(bid) is None
    path = client.find_debuginfo(bid)
    assert path is not None and Path(path).read_bytes() == built["debug"].read_bytes()


def test_environment_defaults() -> None:
    env = {"DEBUGINFOD_URLS": "http://a/ ima:enforcing https://b", "HOME": "/nonexistent-home",
           "DEBUGINFOD_TIMEOUT": "x", "DEBUGINFOD_MAXTIME": "-1", "DEBUGINFOD_MAXSIZE": "1000"}
    client = DebuginfodClient.from_env(env)
    assert client is not None and client.urls == ["http://a", "https://b"]
    assert client.cache_dir == "/nonexistent-home/.cache/debuginfod_client"
    assert (client.timeout, client.maxtime, client.maxsize) == (
        di.DEFAULT_TIMEOUT, di.DEFAULT_MAXTIME, 1000)
    assert default_cache_dir({"HOME": "/h", "XDG_CACHE_HOME": "/x"}) == "/x/debuginfod_client"
    assert default_cache_dir({"HOME": "/h", "DEBUGINFOD_CACHE_PATH": "/p"}) == "/p"


# ---------------------------------------------------------------------------- finder


def test_finder_downloads_missing_debug_file_and_reports_progress(
    built: dict[str, Path], server: Server, tmp_path: Path
) -> None:
    bid = build_id(built["pie"])
    url = server.serve(bid, "debuginfo", built["debug"].read_bytes())
    app = tmp_path / "app"
    app.mkdir()
    shutil.copy(built["stripped"], app / "prog")  # its debuglink target is not here
    finder = ElfFinder(str(app), [], "/nonexistent-sysroot/", [], {RECORDED: bid})
    finder.debuginfod = DebuginfodClient([server.url], str(tmp_path / "c"))
    progress: list[tuple[bytes, str, int, int]] = []
    finder.progress = lambda *a: progress.append(a)
    path, image = finder.find(RECORDED)
    assert path == str(app / "prog") and image is not None
    assert image.debug is not None and image.section(".debug_info") is not None
    assert image.debug.path == str(tmp_path / "c" / bid.hex() / "debuginfo")
    assert progress and {(m, u) for m, u, _n, _d in progress} == {(b"prog", url)}


def test_finder_downloads_missing_main_file(built: dict[str, Path], server: Server,
                                            tmp_path: Path) -> None:
    bid = build_id(built["pie"])
    server.serve(bid, "executable", built["pie"].read_bytes())
    finder = ElfFinder("", [], "/nonexistent-sysroot/", [], {RECORDED: bid})
    finder.debuginfod = DebuginfodClient([server.url], str(tmp_path / "c"))
    path, image = finder.find(RECORDED)
    assert path == str(tmp_path / "c" / bid.hex() / "executable")
    assert image is not None and image.build_id == bid
    assert server.requests == [f"/buildid/{bid.hex()}/executable"]  # has its own DWARF


def test_finder_rejects_a_served_file_with_another_build_id(
    built: dict[str, Path], server: Server, tmp_path: Path
) -> None:
    bid = build_id(built["pie"])
    server.serve(bid, "executable", built["md5"].read_bytes())
    app = tmp_path / "app"
    app.mkdir()
    shutil.copy(built["stripped"], app / "prog")
    server.serve(bid, "debuginfo", built["md5"].read_bytes())
    finder = ElfFinder("", [], "/nonexistent-sysroot/", [], {RECORDED: bid})
    finder.debuginfod = DebuginfodClient([server.url], str(tmp_path / "c"))
    assert finder.find(RECORDED)[1] is None
    finder = ElfFinder(str(app), [], "/nonexistent-sysroot/", [], {RECORDED: bid})
    finder.debuginfod = DebuginfodClient([server.url], str(tmp_path / "c2"))
    _, image = finder.find(RECORDED)
    assert image is not None and image.debug is None


# ---------------------------------------------------------------------------- end to end

WORKLOAD = r"""
static volatile unsigned long sink;
__attribute__((noinline)) void hot_loop(int n) { for (int i = 0; i < n; i++) sink += i; }
int main(void) { for (int r = 0; r < 600; r++) hot_loop(100000); return 0; }
"""


@pytest.mark.skipif(shutil.which("perf") is None and not os.environ.get("CI"),
                    reason="needs perf (CI has it)")
def test_cli_resolves_file_and_line_through_debuginfod(server: Server, tmp_path: Path) -> None:
    from tests.corpus.expect import decode

    src = tmp_path / "w.c"
    src.write_text(WORKLOAD)
    full, exe, debug = tmp_path / "w.full", tmp_path / "bin" / "w", tmp_path / "w.dbg"
    exe.parent.mkdir()
    subprocess.run(["gcc", "-O1", "-g", "-o", str(full), str(src)], check=True)
    subprocess.run(["objcopy", "--only-keep-debug", str(full), str(debug)], check=True)
    subprocess.run(["objcopy", "--strip-all", str(full), str(exe)], check=True)
    data = tmp_path / "perf.data"
    subprocess.run(["perf", "record", "-N", "-q", "-F", "999", "-o", str(data), "--", str(exe)],
                   check=True, capture_output=True, timeout=60)
    server.serve(build_id(exe), "debuginfo", debug.read_bytes())
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEBUGINFOD_")}
    env.update(DEBUGINFOD_URLS=server.url, DEBUGINFOD_CACHE_PATH=str(tmp_path / "cache"))
    cmd = [sys.executable, "-m", "perfparser_py.cli", "--input", str(data),
           "--kallsyms", "/dev/null", "--debug", str(tmp_path / "nodebug")]

    downloads = []

    def hot_lines() -> set[tuple[str | None, int]]:
        out = subprocess.run(cmd, capture_output=True, env=env, timeout=60, check=True)
        samples, stream = decode(out.stdout)
        downloads.append([m for m in stream.messages
                          if type(m).__name__ == "DebugInfoDownloadProgress"])
        return {(Path(f.chain[0][2] or "").name, f.chain[0][3])
                for s in samples for f in s.frames if f.sym == "hot_loop"}

    lines = hot_lines()
    assert lines and all(name == "w.c" and line == 3 for name, line in lines)
    assert downloads[0] and downloads[0][-1].numerator == downloads[0][-1].denominator > 0
    assert len(server.requests) == 1
    server.stop()
    assert hot_lines() == lines  # from the cache, without the server
