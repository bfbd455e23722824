"""The lean client's response parser on a table of answers, hostile ones
included: what it reads must be what Twisted's client (as Scrapy sets it
up) reads, or fail where that one fails."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from webspider.download.parse import (
    MAX_HEAD,
    MAX_LINE,
    Head,
    HeadTooLarge,
    ParseError,
    ResponseParser,
)


@dataclass
class Sink:
    heads: list[Head] = field(default_factory=list)
    body: list[bytes] = field(default_factory=list)
    rest: list[bytes] = field(default_factory=list)
    stop_at_head: bool = False
    parser: ResponseParser | None = None

    def head_received(self, head: Head) -> None:
        self.heads.append(head)
        if self.stop_at_head:
            assert self.parser is not None
            self.parser.stop()

    def body_received(self, data: bytes) -> None:
        self.body.append(data)

    def message_done(self, rest: bytes) -> None:
        self.rest.append(rest)


def parse(answer: bytes, *, head: bool = False, piece: int = 0) -> tuple[Sink, str]:
    """Feed ``answer`` whole, or ``piece`` bytes at a time; then the close."""
    sink = Sink()
    parser = ResponseParser(sink, head)
    sink.parser = parser
    if piece:
        for i in range(0, len(answer), piece):
            parser.feed(answer[i : i + piece])
    else:
        parser.feed(answer)
    return sink, parser.eof()


# (answer, status, headers, body, length, outcome at the close)
READ = [
    pytest.param(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\r\n\r\nhello",
        200,
        [(b"Content-Type", b"text/html")],
        b"hello",
        5,
        "done",
        id="content-length",
    ),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5;name=value\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n",
        200,
        [],
        b"hello world",
        None,
        "done",
        id="chunked-extension-trailer",
    ),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\na\r\n0123456789\r\n0\r\n\r\n",
        200,
        [],
        b"0123456789",
        None,
        "done",
        id="chunked-any-case",
    ),
    pytest.param(
        b"HTTP/1.0 200 OK\r\nServer: old\r\n\r\nto the close",
        200,
        [(b"Server", b"old")],
        b"to the close",
        None,
        "partial",
        id="read-until-close",
    ),
    pytest.param(
        b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
        200,
        [],
        b"ok",
        2,
        "done",
        id="bare-LF",
    ),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nX-A: 1\r\nthis line has no colon\r\nX-B: 2\r\n"
        b"Content-Length: 0\r\n\r\n",
        200,
        [(b"X-A", b"1"), (b"X-B", b"2")],
        b"",
        0,
        "done",
        id="line-without-colon-skipped",
    ),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nX-Long: a\r\n b\r\n\tc\r\nContent-Length: 0\r\n\r\n",
        200,
        [(b"X-Long", b"a b\tc")],
        b"",
        0,
        "done",
        id="continuation-lines",
    ),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n"
        b"Connection: keep-alive\r\nKeep-Alive: timeout=5\r\nContent-Length: 0\r\n\r\n",
        200,
        [(b"Set-Cookie", b"a=1"), (b"Set-Cookie", b"b=2")],
        b"",
        0,
        "done",
        id="repeated-headers-connection-headers-dropped",
    ),
    pytest.param(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\nX: 1\r\n\r\n"
        b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nno!",
        404,
        [],
        b"no!",
        3,
        "done",
        id="1xx-skipped",
    ),
    pytest.param(
        b"HTTP/1.1 204 No Content\r\nContent-Length: 20\r\n\r\n",
        204,
        [],
        b"",
        0,
        "done",
        id="204-no-body",
    ),
    pytest.param(
        b"HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n",
        304,
        [],
        b"",
        0,
        "done",
        id="304-no-body",
    ),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nContent-Length: 7, 7\r\nContent-Length: 007\r\n\r\n1234567",
        200,
        [],
        b"1234567",
        7,
        "done",
        id="content-length-copies-agree",
    ),
    pytest.param(
        b"HTTP/1.1 200\r\nContent-Length: 1\r\n\r\nx",
        200,
        [],
        b"x",
        1,
        "done",
        id="status-without-reason",
    ),
    pytest.param(
        b"HTTP/1.1 599 Whatever You Like\r\nContent-Length: 0\r\n\r\n",
        599,
        [],
        b"",
        0,
        "done",
        id="unknown-status",
    ),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345",
        200,
        [],
        b"12345",
        10,
        "dataloss",
        id="cut-short-by-length",
    ),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
        200,
        [],
        b"hello",
        None,
        "dataloss",
        id="cut-short-chunked",
    ),
]


@pytest.mark.parametrize(("answer", "status", "headers", "body", "length", "end"), READ)
@pytest.mark.parametrize("piece", [0, 1, 7])
def test_answers_are_read_whole_or_in_pieces(
    *,
    answer: bytes,
    status: int,
    headers: list[tuple[bytes, bytes]],
    body: bytes,
    length: int | None,
    end: str,
    piece: int,
) -> None:
    sink, outcome = parse(answer, piece=piece)
    assert [h.status for h in sink.heads] == [status]
    assert sink.heads[0].headers == headers
    assert sink.heads[0].length == length
    assert b"".join(sink.body) == body
    assert outcome == end
    assert sink.rest == ([b""] if end == "done" else [])


def test_a_head_answer_has_no_body_and_keeps_its_content_length() -> None:
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n"
    sink, outcome = parse(answer, head=True)
    head = sink.heads[0]
    assert (head.length, head.headers, outcome) == (
        0,
        [(b"Content-Length", b"1234")],
        "done",
    )


def test_bytes_after_the_answer_are_handed_back() -> None:
    sink, _ = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200")
    assert sink.rest == [b"HTTP/1.1 200"]


@pytest.mark.parametrize(
    ("answer", "close", "protocol"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", False, "HTTP/1.1"),
        (
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            True,
            "HTTP/1.1",
        ),
        (
            b"HTTP/1.1 200 OK\r\nConnection: Keep-Alive, CLOSE\r\nContent-Length: 0\r\n\r\n",
            True,
            "HTTP/1.1",
        ),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", True, "HTTP/1.0"),
        (
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
            False,
            "HTTP/1.0",
        ),
    ],
)
def test_whether_the_server_keeps_the_connection(
    answer: bytes, close: bool, protocol: str
) -> None:
    sink, _ = parse(answer)
    assert (sink.heads[0].close, sink.heads[0].protocol) == (close, protocol)


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(b"garbage\r\n\r\n", id="garbage-status-line"),
        pytest.param(b"\r\nHTTP/1.1 200 OK\r\n\r\n", id="empty-status-line"),
        pytest.param(b"HTTP/1.1 abc OK\r\n\r\n", id="status-not-a-number"),
        pytest.param(b"HTTP/x.y 200 OK\r\n\r\n", id="bad-version"),
        pytest.param(b"ICY 200 OK\r\n\r\n", id="not-http"),
        pytest.param(b"HTTP/1.1 200 OK\r\n continued\r\n\r\n", id="continuation-first"),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", id="negative-length"
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n", id="signed-length"
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5x\r\n\r\n", id="length-not-digits"
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
            id="lengths-disagree",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n", id="list-disagrees"
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", id="unknown-coding"
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            id="chunk-size-not-hex",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\n",
            id="chunk-size-0x",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX",
            id="chunk-no-crlf",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"1" * 2000,
            id="chunk-size-line-too-long",
        ),
    ],
)
def test_what_twisted_refuses_is_refused(answer: bytes) -> None:
    with pytest.raises(ParseError):
        parse(answer)


def test_a_header_line_over_16_kib_is_refused_whole_or_trickled() -> None:
    line = b"X-Big: " + b"a" * MAX_LINE + b"\r\n"
    answer = b"HTTP/1.1 200 OK\r\n" + line + b"\r\n"
    with pytest.raises(HeadTooLarge):
        parse(answer)
    with pytest.raises(HeadTooLarge):
        parse(answer, piece=1000)
    # a line that never ends is refused before the whole of it arrives
    sink = Sink()
    parser = ResponseParser(sink)
    parser.feed(b"HTTP/1.1 200 OK\r\nX-Big: ")
    with pytest.raises(HeadTooLarge):
        for _ in range(20):
            parser.feed(b"a" * 1000)


def test_a_line_of_exactly_16_kib_is_read() -> None:
    value = b"a" * (MAX_LINE - len(b"X-Big: ") - 1)  # the CR counts, as in Twisted
    answer = b"HTTP/1.1 200 OK\r\nX-Big: " + value + b"\r\nContent-Length: 0\r\n\r\n"
    sink, _ = parse(answer)
    assert sink.heads[0].headers == [(b"X-Big", value)]


def test_a_header_block_over_256_kib_is_refused() -> None:
    headers = b"".join(b"X-%d: %s\r\n" % (i, b"v" * 1000) for i in range(300))
    answer = b"HTTP/1.1 200 OK\r\n" + headers + b"\r\n"
    with pytest.raises(HeadTooLarge):
        parse(answer)
    with pytest.raises(HeadTooLarge):
        parse(answer, piece=4096)
    # interim answers count towards the bound
    interim = b"HTTP/1.1 100 Continue\r\n" + headers[: MAX_HEAD // 2] + b"\r\n"
    with pytest.raises(HeadTooLarge):
        parse(interim * 3)


def test_a_stop_at_the_head_reads_no_further() -> None:
    sink = Sink(stop_at_head=True)
    parser = ResponseParser(sink)
    sink.parser = parser
    parser.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
    parser.feed(b"more")
    assert (sink.body, sink.rest) == ([], [])


@pytest.mark.parametrize(
    ("answer", "end"),
    [(b"", "nothing"), (b"HTTP/1.1 200 OK\r\nX: ", "head")],
)
def test_a_close_before_the_head_ends(answer: bytes, end: str) -> None:
    _, outcome = parse(answer)
    assert outcome == end
