"""An HTTP/1.1 proxy on 127.0.0.1 that holds every response back by DELAY.

    python bench/latency_proxy.py --port P --upstream U [--delay 0.05] [--log FILE]

Each client connection gets its own keep-alive connection to the upstream
(nginx on 127.0.0.1:U); each request waits DELAY seconds, then is relayed.
So a client that fetches one page at a time pays DELAY per page, and one that
keeps N requests in flight on N connections pays it about once per N pages —
the situation of a real site across the internet, where concurrency matters.
With ``--log``, each request is appended to FILE when its response is
sent: ``<received> <sent> <agent> <path>`` (``time.time()``; ``<agent>``:
the User-Agent header, spaces as ``_``, ``-`` if none), to count the
requests in flight over a crawl, and per client. Only what a static nginx
sends is handled: Content-Length or chunked bodies, no request bodies.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from typing import TextIO


async def _read_body(reader: asyncio.StreamReader, head: bytes) -> bytes:
    lower = head.lower()
    for line in lower.split(b"\r\n"):
        if line.startswith(b"content-length:"):
            return await reader.readexactly(int(line.split(b":", 1)[1]))
    if b"transfer-encoding: chunked" in lower:
        chunks = []
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.split(b";", 1)[0], 16)
            chunk = await reader.readexactly(size + 2)
            chunks.append(size_line + chunk)
            if size == 0:
                if chunk != b"\r\n":  # trailers
                    chunks.append(await reader.readuntil(b"\r\n\r\n"))
                return b"".join(chunks)
    return b""


def _agent(request: bytes) -> str:
    for line in request.split(b"\r\n")[1:]:
        if line[:11].lower() == b"user-agent:":
            return line[11:].strip().decode("latin-1").replace(" ", "_") or "-"
    return "-"


async def handle(
    client_r: asyncio.StreamReader,
    client_w: asyncio.StreamWriter,
    upstream: int,
    delay: float,
    log: TextIO | None = None,
) -> None:
    up_r: asyncio.StreamReader | None = None
    up_w: asyncio.StreamWriter | None = None
    try:
        while True:
            try:
                request = await client_r.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            received = time.time()
            await asyncio.sleep(delay)
            if up_w is None or up_w.is_closing():
                up_r, up_w = await asyncio.open_connection("127.0.0.1", upstream)
            assert up_r is not None
            up_w.write(request)
            head = await up_r.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            no_body = (
                request.startswith(b"HEAD ")
                or status in (204, 304)
                or (100 <= status < 200)
            )
            body = b"" if no_body else await _read_body(up_r, head)
            client_w.write(head + body)
            await client_w.drain()
            if log is not None:
                path = request.split(b" ", 2)[1].decode("latin-1")
                log.write(
                    f"{received:.4f} {time.time():.4f} {_agent(request)} {path}\n"
                )
                log.flush()
            if b"\r\nconnection: close" in head.lower():
                up_w.close()
                up_w = None
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        for writer in (client_w, up_w):
            if writer is not None:
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", type=int, required=True)
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--log", help="append each request's times to this file")
    args = parser.parse_args()
    log = open(args.log, "a") if args.log else None  # noqa: SIM115 -- the server's life
    server = await asyncio.start_server(
        lambda r, w: handle(r, w, args.upstream, args.delay, log),
        "127.0.0.1",
        args.port,
        backlog=1024,
    )
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
