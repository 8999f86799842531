"""debuginfod client: separate debug files and executables downloaded by build id (§9.2).

Honours libdebuginfod's environment (CLI.md §6) and shares its cache layout,
`<cache>/<lowercase hex build id>/debuginfo` and `.../executable`, so files fetched by gdb,
perf or elfutils are reused and ours are reused by them. Off unless DEBUGINFOD_URLS names a
server. Every transfer is bounded: DEBUGINFOD_TIMEOUT seconds without data (and for the
first 100 KiB), DEBUGINFOD_MAXTIME in total (default 30 s here, elfutils has none) and
DEBUGINFOD_MAXSIZE bytes (default 512 MB here, elfutils has none; 0: none); all of a run's
transfers share PERFPARSER_DEBUGINFOD_BUDGET seconds (default 120). A failed lookup is not
repeated during the run, and a server that cannot be reached or timed out once is not asked
again ("debuginfod: giving up on SERVER (reason)" on stderr). Redirects are followed within
the scheme and host of the request, or to another configured server. Standard library only
(urllib: http, https, file URLs, proxies from the environment).
"""

from __future__ import annotations

import http.client
import os
import queue
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping

from ..regular import read_regular

# (url, bytes so far, total bytes or 0 when unknown)
ProgressFn = Callable[[str, int, int], None]

DEFAULT_TIMEOUT = 90.0  # elfutils' commencing timeout
DEFAULT_MAXTIME = 30.0  # ours: a dead or trickling server must not hang hotspot
DEFAULT_MAXSIZE = 512 << 20  # ours when DEBUGINFOD_MAXSIZE is unset (elfutils has none)
DEFAULT_RUN_BUDGET = 120.0  # ours: all of a run's transfers (PERFPARSER_DEBUGINFOD_BUDGET)
DEFAULT_CACHE_MISS_S = 600  # elfutils: how long its negative cache entries count
COMMENCE_BYTES = 100 * 1024  # what a server must deliver within the timeout
_CHUNK = 64 * 1024
_PROGRESS_INTERVAL = 0.1  # seconds between progress callbacks of one transfer
KINDS = ("debuginfo", "executable")


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    """A positive number of seconds from the environment, else `default`."""
    try:
        value = float(env.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


def default_cache_dir(env: Mapping[str, str]) -> str:
    """libdebuginfod's cache directory for this environment."""
    explicit = env.get("DEBUGINFOD_CACHE_PATH")
    if explicit:
        return explicit
    home = env.get("HOME") or os.path.expanduser("~")
    legacy = os.path.join(home, ".debuginfod_client_cache")
    if os.path.isdir(legacy):  # deprecated location, used only if it already exists
        return legacy
    xdg = env.get("XDG_CACHE_HOME")
    return os.path.join(xdg or os.path.join(home, ".cache"), "debuginfod_client")


class _Failed(Exception):
    """One server did not deliver; `dead` if it should not be asked again this run."""

    def __init__(self, reason: str, dead: bool = False) -> None:
        super().__init__(reason)
        self.dead = dead


class _SameServer(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only within the scheme and host of the request, or to one of the
    servers the user configured (DEBUGINFOD_URLS): a server cannot send us elsewhere."""

    def __init__(self, allowed: set[tuple[str, str]]) -> None:
        super().__init__()
        self.allowed = allowed

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        old, new = urllib.parse.urlsplit(req.full_url), urllib.parse.urlsplit(newurl)
        target = (new.scheme.lower(), new.netloc.lower())
        if target != (old.scheme.lower(), old.netloc.lower()) and target not in self.allowed:
            raise _Failed(f"redirect to another server refused: {newurl}", dead=True)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _origin(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    return (parts.scheme.lower(), parts.netloc.lower())


class DebuginfodClient:
    """Looks files up in the debuginfod cache, then asks each server in order."""

    def __init__(
        self,
        urls: list[str],
        cache_dir: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        maxtime: float = DEFAULT_MAXTIME,
        maxsize: int = DEFAULT_MAXSIZE,
        budget: float = DEFAULT_RUN_BUDGET,
        verbose: bool = False,
        stderr_progress: bool = False,
    ) -> None:
        """maxsize 0: no size limit; budget: seconds for all of this client's transfers."""
        self.urls = [u.rstrip("/") for u in urls if u]
        self.cache_dir = cache_dir
        self.timeout = timeout
        self.maxtime = maxtime
        self.maxsize = maxsize
        self.budget = budget
        self._budget_end = time.monotonic() + budget
        self.verbose = verbose
        self.stderr_progress = stderr_progress
        self._known: dict[tuple[str, str], str | None] = {}  # (hex, kind) -> path or miss
        self._dead: set[str] = set()
        self._opener = urllib.request.build_opener(
            _SameServer({_origin(u) for u in self.urls}))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> DebuginfodClient | None:
        """A client configured like libdebuginfod, or None when DEBUGINFOD_URLS is unset."""
        env = os.environ if env is None else env
        # Tokens like `ima:enforcing` are signature policies, not servers.
        urls = [u for u in env.get("DEBUGINFOD_URLS", "").split() if not u.startswith("ima:")]
        if not urls:
            return None
        try:  # elfutils: 0 is no limit; unset is ours, not elfutils' none
            maxsize = max(0, int(env.get("DEBUGINFOD_MAXSIZE", "")))
        except ValueError:
            maxsize = DEFAULT_MAXSIZE
        return cls(
            urls,
            default_cache_dir(env),
            timeout=_seconds(env, "DEBUGINFOD_TIMEOUT", DEFAULT_TIMEOUT),
            maxtime=_seconds(env, "DEBUGINFOD_MAXTIME", DEFAULT_MAXTIME),
            maxsize=maxsize,
            budget=_seconds(env, "PERFPARSER_DEBUGINFOD_BUDGET", DEFAULT_RUN_BUDGET),
            verbose="DEBUGINFOD_VERBOSE" in env,
            stderr_progress="DEBUGINFOD_PROGRESS" in env,
        )

    def find_debuginfo(self, build_id: bytes, progress: ProgressFn | None = None) -> str | None:
        """Local path of the separate debug file for `build_id`, or None."""
        return self.find(build_id, "debuginfo", progress)

    def find_executable(self, build_id: bytes, progress: ProgressFn | None = None) -> str | None:
        """Local path of the executable or shared library with `build_id`, or None."""
        return self.find(build_id, "executable", progress)

    def find(self, build_id: bytes, kind: str, progress: ProgressFn | None = None) -> str | None:
        """Cached file, else the first server's download; None if nobody has it."""
        if not build_id or kind not in KINDS:
            return None
        key = (build_id.hex(), kind)
        if key in self._known:
            return self._known[key]
        target = os.path.join(self.cache_dir, key[0], kind)
        cached = self._cached(target)
        if cached is None:
            path = self._download(key[0], kind, target, progress)
        else:
            path = cached or None
        self._known[key] = path
        return path

    # ------------------------------------------------------------ cache

    def _cached(self, target: str) -> str | bool | None:
        """The cached file; False for elfutils' fresh negative entry; None if not cached."""
        try:
            st = os.stat(target)
        except OSError:
            return None
        if st.st_size > 0:
            return target
        # An empty file records a recent miss (elfutils writes it with mode 000).
        text = read_regular(os.path.join(self.cache_dir, "cache_miss_s"), 64)
        try:
            miss_s = int(text.strip() or DEFAULT_CACHE_MISS_S) if text else DEFAULT_CACHE_MISS_S
        except ValueError:
            miss_s = DEFAULT_CACHE_MISS_S
        return False if time.time() - st.st_mtime < miss_s else None

    # ------------------------------------------------------------ network

    def _download(self, hexid: str, kind: str, target: str,
                  progress: ProgressFn | None) -> str | None:
        for base in self.urls:
            if base in self._dead:
                continue
            if time.monotonic() >= self._budget_end:
                self._give_up(base, f"the run's {self.budget:g} s for downloads are spent")
                continue
            url = f"{base}/buildid/{hexid}/{kind}"
            try:
                return self._fetch(url, target, progress)
            except _Failed as e:
                self._log(f"{url}: {e}")
                if e.dead:
                    self._give_up(base, str(e))
        return None

    def _give_up(self, base: str, reason: str) -> None:
        """Ask `base` nothing more this run, and say so once (hotspot shows stderr)."""
        self._dead.add(base)
        print(f"debuginfod: giving up on {base} ({reason})", file=sys.stderr)

    def _fetch(self, url: str, target: str, progress: ProgressFn | None) -> str:
        """Download `url` into the cache at `target`; raises _Failed.

        The transfer runs in a daemon thread so that the total budget holds even while name
        resolution or a slow server blocks it; progress is reported from this thread.
        """
        events: queue.SimpleQueue = queue.SimpleQueue()
        cancel = threading.Event()
        worker = threading.Thread(target=self._transfer, args=(url, target, events, cancel),
                                  name="debuginfod", daemon=True)
        deadline = min(time.monotonic() + self.maxtime, self._budget_end)
        worker.start()
        try:
            while True:
                try:
                    what, a, b = events.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    # a server that took this long once is not asked again this run
                    raise _Failed("DEBUGINFOD_MAXTIME exceeded" if deadline < self._budget_end
                                  else f"the run's {self.budget:g} s for downloads are spent",
                                  dead=True) from None
                if what == "progress":
                    self._progress(progress, url, a, b)
                elif what == "done":
                    return a
                else:
                    raise a
        finally:
            # An abandoned transfer stops at its next step and removes its temporary file.
            cancel.set()
            worker.join(_PROGRESS_INTERVAL)

    def _transfer(self, url: str, target: str, events: queue.SimpleQueue,
                  cancel: threading.Event) -> None:
        """Worker: posts ("progress", n, total)..., then ("done", path) or ("failed", _Failed)."""
        try:
            events.put(("done", self._get(url, target, events, cancel), None))
        except _Failed as e:
            events.put(("failed", e, None))
        except Exception as e:  # never let a worker die silently; the caller decides
            events.put(("failed", _Failed(f"unexpected: {e!r}"), None))

    def _get(self, url: str, target: str, events: queue.SimpleQueue,
             cancel: threading.Event) -> str:
        headers = {"User-Agent": "perfparser-py"}
        if self.maxsize:
            headers["X-DEBUGINFOD-MAXSIZE"] = str(self.maxsize)
        commence_by = time.monotonic() + self.timeout
        try:
            request = urllib.request.Request(url, headers=headers)
            # Each connect and read waits at most this long for data.
            response = self._opener.open(request, timeout=self.timeout)
        except urllib.error.HTTPError as e:
            e.close()
            raise _Failed(f"HTTP {e.code}") from None
        except (OSError, ValueError, http.client.HTTPException) as e:  # URLError is an OSError
            reason = getattr(e, "reason", e)
            # A file:// "server" that lacks one file is still worth asking for others.
            raise _Failed(f"cannot fetch: {reason}",
                          dead=not isinstance(reason, FileNotFoundError)) from None
        with response:
            try:
                total = int(response.headers.get("Content-Length") or 0)
            except ValueError:
                total = 0
            if self.maxsize and total > self.maxsize:
                raise _Failed(f"{total} bytes exceed DEBUGINFOD_MAXSIZE ({self.maxsize})")
            directory = os.path.dirname(target)
            try:
                os.makedirs(directory, exist_ok=True)
                fd, tmp = tempfile.mkstemp(prefix=".download.", dir=directory)
            except OSError as e:
                raise _Failed(f"cannot write the cache: {e}") from None
            try:
                with os.fdopen(fd, "wb") as out:
                    received = self._receive(response, out, total, events, cancel, commence_by)
                if cancel.is_set():
                    raise _Failed("cancelled")
                os.replace(tmp, target)
            except OSError as e:
                raise _Failed(f"cannot write the cache: {e}") from None
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        self._log(f"{url}: {received} bytes -> {target}")
        return target

    def _receive(self, response, out, total: int, events: queue.SimpleQueue,
                 cancel: threading.Event, commence_by: float) -> int:
        """Copy the body to `out`, posting progress; the number of bytes."""
        received = sent = 0
        sent_at = time.monotonic()
        events.put(("progress", 0, total))
        while not cancel.is_set():
            try:
                chunk = response.read1(_CHUNK)
            except (OSError, http.client.HTTPException) as e:
                raise _Failed(f"transfer failed: {e}", dead=True) from None
            if not chunk:
                break
            out.write(chunk)
            received += len(chunk)
            if self.maxsize and received > self.maxsize:
                raise _Failed("download exceeds DEBUGINFOD_MAXSIZE")
            now = time.monotonic()
            if now > commence_by and received < COMMENCE_BYTES:
                raise _Failed("DEBUGINFOD_TIMEOUT: too slow to start", dead=True)
            if now - sent_at >= _PROGRESS_INTERVAL:
                sent, sent_at = received, now
                events.put(("progress", received, total))
        if received == 0 or (total and received < total):
            raise _Failed(f"incomplete: {received} of {total or '?'} bytes")
        if sent != received or not total:
            events.put(("progress", received, total or received))
        return received

    def _progress(self, progress: ProgressFn | None, url: str, numerator: int,
                  denominator: int) -> None:
        if progress is not None:
            progress(url, numerator, denominator)
        if self.stderr_progress:
            print(f"Downloading from {url} {numerator}/{denominator}", file=sys.stderr)

    def _log(self, message: str) -> None:
        if self.verbose:
            print(f"debuginfod: {message}", file=sys.stderr)
