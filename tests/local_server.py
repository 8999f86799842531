"""An HTTP server on 127.0.0.1 (a free port) for the debuginfod tests: a subclass answers each
GET in respond(); the request paths are kept in order. stop() sets `release`, which a handler
that stalls or streams waits on, so that no handler outlives its test."""

from __future__ import annotations

import http.server
import threading


class LocalServer:
    def __init__(self) -> None:
        self.requests: list[str] = []
        self.release = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests.append(self.path)
                try:
                    server.respond(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up: what a bounded client does

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def respond(self, h: http.server.BaseHTTPRequestHandler) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
