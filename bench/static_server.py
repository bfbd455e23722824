"""Fallback static server when nginx is missing: threaded http.server that
writes nginx's bench log format. Usage: static_server.py ROOT PORT LOGFILE"""

from __future__ import annotations

import functools
import sys
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer


def main() -> None:
    root, port, logfile = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    log = open(logfile, "a", buffering=1, encoding="latin-1")  # noqa: SIM115

    class Handler(SimpleHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            log.write(f"{self.command} {self.path} {int(code)} {size} {time.time()}\n")

        def log_message(self, format: str, *args: object) -> None:
            pass

    handler = functools.partial(Handler, directory=root)
    ThreadingHTTPServer(("127.0.0.1", port), handler).serve_forever()


if __name__ == "__main__":
    main()
