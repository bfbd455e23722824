"""A lenient HTTP/1.1 response parser, fed as bytes arrive.

Pure: no sockets, no Scrapy. It reads what Twisted's client (as Scrapy
configures it) reads, and refuses what it refuses, so that a page crawled
with either client comes out the same:

- lines end with LF, a CR before it is dropped (Twisted's LineReceiver);
- a header line without a colon is skipped, as Scrapy's lenient parser does
  (Scrapy issue 210: browsers skip them); a line starting with a space or
  tab continues the header before it (its bytes appended as they are);
- values are stripped of whitespace; names are kept as sent (Scrapy's
  Headers normalises them);
- 1xx answers are skipped, the answer after them is read;
- a HEAD answer, 204 and 304 have no body; ``Transfer-Encoding`` other than
  ``chunked`` is an error; ``Content-Length`` is digits only, repeated or
  comma-listed copies must agree (Twisted's ``_contentLength``); without
  either, the body runs to the connection's close;
- the connection-control headers (``CONNECTION_HEADERS``) are not the
  response's headers; ``Content-Length`` is, for a HEAD answer;
- chunked bodies: hex sizes only, a size line of at most 1 KiB, extensions
  ignored (their characters checked as Twisted does), CRLF after the data,
  trailers (at most 64 KiB) read and dropped.

Bounds: a line over ``MAX_LINE`` bytes (Twisted's LineReceiver's 16 KiB)
and a status line and header block over ``MAX_HEAD`` bytes in all (Twisted
has no bound on the block) stop the parse with ``HeadTooLarge``.
"""

from __future__ import annotations

from typing import Protocol

#: a line of the status and header block, CR included (Twisted's
#: LineReceiver.MAX_LENGTH)
MAX_LINE = 16 * 1024
#: the status line and the header block, in all (1xx answers included)
MAX_HEAD = 256 * 1024
#: a chunk-size line (Twisted's maxChunkSizeLineLength)
MAX_CHUNK_LINE = 1024
#: a chunked body's trailers, in all
MAX_TRAILERS = 64 * 1024

#: headers about the connection, not the resource: kept out of the
#: response's headers (as Twisted does, so that Scrapy's response, and its
#: size in ``downloader/response_bytes``, are the same with either client)
CONNECTION_HEADERS = frozenset(
    {
        b"content-length",
        b"connection",
        b"keep-alive",
        b"te",
        b"trailers",
        b"transfer-encoding",
        b"upgrade",
        b"proxy-connection",
    }
)
NO_BODY_STATUSES = frozenset({204, 304})
_HEX_DIGITS = b"0123456789abcdefABCDEF"
# Twisted's _chunkExtChars: what a chunk extension may hold
_CHUNK_EXT_CHARS = (
    b"\t !\"#$%&'()*+,-./0123456789:;<=>?@"
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZ[]^_`"
    b"abcdefghijklmnopqrstuvwxyz{|}~" + bytes(range(0x80, 0x100))
)

# parser states
(
    HEAD,
    IDENTITY,
    UNTIL_CLOSE,
    CHUNK_SIZE,
    CHUNK_DATA,
    CHUNK_CRLF,
    TRAILER,
    DONE,
    STOPPED,
) = range(9)


class ParseError(Exception):
    """The answer is not HTTP/1.x that can be read."""


class HeadTooLarge(ParseError):
    """A header line or the header block is over its bound."""


class Sink(Protocol):
    """What the parser tells as it reads: the protocol of one connection."""

    def head_received(self, head: Head) -> None: ...

    def body_received(self, data: bytes) -> None: ...

    def message_done(self, rest: bytes) -> None: ...


class Head:
    """The status line and headers of an answer."""

    __slots__ = ("chunked", "close", "headers", "length", "protocol", "status")

    def __init__(
        self,
        status: int,
        protocol: str,
        headers: list[tuple[bytes, bytes]],
        length: int | None,
        *,
        close: bool,
        chunked: bool = False,
    ) -> None:
        self.status = status
        #: "HTTP/1.1", as Scrapy's ``Response.protocol``
        self.protocol = protocol
        #: the response's headers, connection control left out
        self.headers = headers
        #: the body's length: ``Content-Length`` (0 for no body), or None
        #: when unknown (chunked, or up to the close)
        self.length = length
        #: the server will close the connection after this answer
        self.close = close
        #: the body is chunked (its length unknown)
        self.chunked = chunked


def parse_version(version: bytes) -> tuple[str, int, int]:
    """``b"HTTP/1.1"`` → ("HTTP", 1, 1), as Twisted's parseVersion."""
    if version == b"HTTP/1.1":
        return ("HTTP", 1, 1)
    try:
        proto, number = version.split(b"/")
        major_s, minor_s = number.split(b".")
        major, minor = int(major_s), int(minor_s)
    except ValueError:
        raise ParseError(f"bad HTTP version {version[:40]!r}") from None
    if major < 0 or minor < 0:
        raise ParseError(f"bad HTTP version {version[:40]!r}")
    return (proto.decode("utf-8", "replace"), major, minor)


def parse_status(line: bytes) -> tuple[int, str, int, int]:
    """The status line → (status, protocol name, major, minor)."""
    parts = line.split(b" ", 2)
    if len(parts) < 2:
        raise ParseError(f"bad status line {line[:80]!r}")
    try:
        status = int(parts[1])
    except ValueError:
        raise ParseError(f"bad status line {line[:80]!r}") from None
    proto, major, minor = parse_version(parts[0])
    return status, proto, major, minor


def decimal(value: bytes) -> int:
    """Digits only, spaces and tabs around them allowed (Twisted's _decint)."""
    value = value.strip(b" \t")
    if not value.isdigit():
        raise ParseError(f"bad Content-Length {value[:40]!r}")
    return int(value)


def content_length(values: list[bytes]) -> int:
    """Repeated headers and comma-listed values must agree (RFC 9110 8.6)."""
    joined = b",".join(values)
    if b"," not in joined:
        return decimal(joined)
    lengths = {decimal(v) for v in joined.split(b",")}
    if len(lengths) != 1:
        raise ParseError(f"conflicting Content-Length {joined[:80]!r}")
    return lengths.pop()


def parse_head(block: bytes, head_request: bool) -> Head | None:
    """A status line and header block (each line ending with LF, the empty
    line left out); None for an interim (1xx) answer."""
    lines = block.split(b"\n")
    if len(block) > MAX_LINE:
        for line in lines:
            if len(line) > MAX_LINE:
                raise HeadTooLarge(f"a header line over {MAX_LINE} bytes")
    status_line = lines[0]
    if status_line[-1:] == b"\r":
        status_line = status_line[:-1]
    status, proto, major, minor = parse_status(status_line)
    if 100 <= status < 200:
        return None
    headers: list[tuple[bytes, bytes]] = []
    conn: dict[bytes, list[bytes]] = {}
    pending: bytes | None = None
    # the last line is the empty one after the block's last LF
    for raw in lines[1:-1]:
        line = raw[:-1] if raw[-1:] == b"\r" else raw
        if line and line[0] in b" \t":
            if pending is None:
                raise ParseError("a continuation line before any header")
            pending += line
            continue
        if pending is not None:
            _add_header(pending, headers, conn, head_request)
        pending = line
    if pending is not None:
        _add_header(pending, headers, conn, head_request)
    close = False
    connection = conn.get(b"connection")
    if connection is not None:
        tokens = {t.strip().lower() for v in connection for t in v.split(b",")}
        close = b"close" in tokens
    elif (major, minor) < (1, 1):
        close = b"keep-alive" not in conn
    protocol = f"{proto}/{major}.{minor}"
    if head_request or status in NO_BODY_STATUSES:
        return Head(status, protocol, headers, 0, close=close)
    encodings = conn.get(b"transfer-encoding")
    if encodings is not None:
        if encodings[0].lower() != b"chunked":
            raise ParseError(f"unknown Transfer-Encoding {encodings[0][:40]!r}")
        return Head(status, protocol, headers, None, close=close, chunked=True)
    lengths = conn.get(b"content-length")
    length = None if lengths is None else content_length(lengths)
    return Head(status, protocol, headers, length, close=close)


def _add_header(
    line: bytes,
    headers: list[tuple[bytes, bytes]],
    conn: dict[bytes, list[bytes]],
    head_request: bool,
) -> None:
    name, colon, value = line.partition(b":")
    if not colon:
        return  # Scrapy issue 210: skipped, as browsers do
    value = value.strip()
    lower = name.lower()
    if lower in CONNECTION_HEADERS and not (
        head_request and lower == b"content-length"
    ):
        conn.setdefault(lower, []).append(value)
    else:
        headers.append((name, value))


def hex_size(raw: bytes) -> int:
    """A chunk size: hex digits only (no ``0x``, sign or space)."""
    if not raw or raw.strip(_HEX_DIGITS):
        raise ParseError(f"bad chunk size {raw[:40]!r}")
    return int(raw, 16)


class ResponseParser:
    """One answer to one request, fed in pieces (``feed``), told of the end
    of the connection (``eof``). Calls the sink's ``head_received`` once,
    ``body_received`` for each piece of body, ``message_done`` with the
    bytes after the answer; ``stop()`` (from a sink's call) ends it."""

    __slots__ = (
        "_buffer",
        "_head_buffer",
        "_head_request",
        "_line_start",
        "_remaining",
        "_seen",
        "_sink",
        "_trailers",
        "state",
    )

    def __init__(self, sink: Sink, head_request: bool = False) -> None:
        self._sink = sink
        self._head_request = head_request
        self._buffer = b""
        self._head_buffer = bytearray()
        self._line_start = 0
        #: bytes of the head block read so far (1xx answers included)
        self._seen = 0
        self._remaining = 0
        self._trailers = 0
        self.state = HEAD

    @property
    def started(self) -> bool:
        """Any byte of an answer was received."""
        return self._seen > 0 or self.state != HEAD or bool(self._head_buffer)

    def stop(self) -> None:
        """No more of this answer is read (its sink is done with it)."""
        if self.state != DONE:
            self.state = STOPPED
        self._buffer = b""
        self._head_buffer.clear()

    def feed(self, data: bytes) -> None:
        """Raises ParseError; the sink is called as the answer is read."""
        state = self.state
        if state == HEAD:
            self._feed_head(data)
        elif state == IDENTITY:
            self._feed_identity(data)
        elif state == UNTIL_CLOSE:
            self._sink.body_received(data)
        elif state < DONE:
            self._feed_chunked(data)

    def eof(self) -> str:
        """The connection ended: "done" (the answer was whole), "partial"
        (a body that runs to the close: whole as far as anyone knows),
        "dataloss" (a body cut short), "nothing" (no byte of an answer),
        "head" (the connection ended within the head)."""
        state = self.state
        if state >= DONE:
            return "done"
        if state == UNTIL_CLOSE:
            self.state = DONE
            return "partial"
        if state == HEAD:
            return "head" if self.started else "nothing"
        self.state = DONE
        return "dataloss"

    # -- the head -----------------------------------------------------------------
    def _feed_head(self, data: bytes) -> None:
        # The usual case, a whole head in one piece, is read without copies;
        # a head in pieces is gathered in a bytearray, each piece searched
        # once (a server trickling its head byte by byte costs linear time).
        head_buffer = self._head_buffer
        if head_buffer:
            scan = max(len(head_buffer) - 2, 0)
            head_buffer += data
            buffer: bytes | bytearray = head_buffer
        else:
            scan = 0
            buffer = data
        while True:
            nl, body_at = _blank_line(buffer, scan)
            if nl < 0:
                self._check_open_head(buffer, scan)
                if buffer is not head_buffer:
                    head_buffer[:] = buffer
                return
            self._seen += body_at
            if self._seen > MAX_HEAD:
                raise HeadTooLarge(f"a header block over {MAX_HEAD} bytes")
            head = parse_head(bytes(buffer[: nl + 1]), self._head_request)
            buffer = buffer[body_at:]
            self._line_start = 0
            scan = 0
            if head is not None:
                break
            # an interim (1xx) answer: the answer follows
        if head_buffer:
            head_buffer.clear()
            buffer = bytes(buffer)
        self._start_body(head)
        sink = self._sink
        sink.head_received(head)
        if self.state == STOPPED:
            return
        if self.state == DONE:
            sink.message_done(bytes(buffer))
            return
        if buffer:
            self.feed(bytes(buffer))

    def _check_open_head(self, buffer: bytes | bytearray, scan: int) -> None:
        if self._seen + len(buffer) > MAX_HEAD:
            raise HeadTooLarge(f"a header block over {MAX_HEAD} bytes")
        nl = buffer.rfind(b"\n", scan)
        if nl >= 0:
            self._line_start = nl + 1
        if len(buffer) - self._line_start > MAX_LINE:
            raise HeadTooLarge(f"a header line over {MAX_LINE} bytes")
        # the whole lines so far are judged when the block ends

    def _start_body(self, head: Head) -> None:
        length = head.length
        if length == 0:
            self.state = DONE
        elif length is not None:
            self.state = IDENTITY
            self._remaining = length
        else:
            self.state = CHUNK_SIZE if head.chunked else UNTIL_CLOSE

    # -- bodies -------------------------------------------------------------------
    def _feed_identity(self, data: bytes) -> None:
        remaining = self._remaining
        size = len(data)
        sink = self._sink
        if size < remaining:
            self._remaining = remaining - size
            sink.body_received(data)
            return
        self._remaining = 0
        sink.body_received(data if size == remaining else data[:remaining])
        if self.state != IDENTITY:
            return  # stopped
        self.state = DONE
        sink.message_done(data[remaining:] if size > remaining else b"")

    def _feed_chunked(self, data: bytes) -> None:
        buffer = self._buffer + data if self._buffer else data
        self._buffer = b""
        pos = 0
        size = len(buffer)
        sink = self._sink
        while True:
            state = self.state
            if state == CHUNK_DATA:
                take = min(self._remaining, size - pos)
                if take:
                    self._remaining -= take
                    piece = buffer[pos : pos + take] if take < size else buffer
                    sink.body_received(piece)
                    if self.state != CHUNK_DATA:
                        return  # stopped
                    pos += take
                if self._remaining:
                    return
                self.state = CHUNK_CRLF
            elif state == CHUNK_CRLF:
                if size - pos < 2:
                    break
                if buffer[pos : pos + 2] != b"\r\n":
                    raise ParseError("a chunk not ended by CRLF")
                pos += 2
                self.state = CHUNK_SIZE
            elif state == CHUNK_SIZE:
                eol = buffer.find(b"\r\n", pos)
                if (eol < 0 and size - pos > MAX_CHUNK_LINE) or (
                    eol - pos >= MAX_CHUNK_LINE
                ):
                    raise ParseError(f"a chunk-size line over {MAX_CHUNK_LINE} bytes")
                if eol < 0:
                    break
                semi = buffer.find(b";", pos, eol)
                if semi < 0:
                    raw = buffer[pos:eol]
                else:
                    raw = buffer[pos:semi]
                    if buffer[semi + 1 : eol].strip(_CHUNK_EXT_CHARS):
                        raise ParseError("bad characters in a chunk extension")
                length = hex_size(raw)
                pos = eol + 2
                if length:
                    self._remaining = length
                    self.state = CHUNK_DATA
                else:
                    self.state = TRAILER
            elif state == TRAILER:
                eol = buffer.find(b"\r\n", pos)
                if eol < 0:
                    if self._trailers + size - pos + 2 > MAX_TRAILERS:
                        raise ParseError("trailers over 64 KiB")
                    break
                if eol > pos:
                    self._trailers += eol - pos + 2
                    if self._trailers > MAX_TRAILERS:
                        raise ParseError("trailers over 64 KiB")
                    pos = eol + 2
                    continue
                self.state = DONE
                sink.message_done(buffer[eol + 2 :])
                return
            else:
                return
        self._buffer = buffer[pos:]


def _blank_line(buffer: bytes | bytearray, scan: int) -> tuple[int, int]:
    """Where the head ends: (index of the last header line's LF, index of
    the body's first byte), or (-1, -1); searched from ``scan``."""
    a = buffer.find(b"\n\n", scan)
    b = buffer.find(b"\n\r\n", scan)
    if a < 0 and b < 0:
        return (-1, -1)
    if b < 0 or (0 <= a < b):
        return (a, a + 2)
    return (b, b + 3)
