"""A page's encoding worked out without a response (webspider.page.encoding,
used by the page worker) is Scrapy's own TextResponse.encoding, case by
case: a Scrapy that works it out otherwise fails here."""

import pytest
from scrapy.http import HtmlResponse, TextResponse

from webspider.page.encoding import body_encoding
from webspider.pageworker.worker import Worker

PAGE = "<html><head>{head}</head><body><a href='/caf\xe9'>caf\xe9 \u2014 x</a></body></html>"

CASES = {
    "utf-8, said by the header": (
        PAGE.format(head="").encode("utf-8"),
        b"text/html; charset=utf-8",
    ),
    "latin-1, said by the header": (
        PAGE.format(head="").encode("cp1252", "replace"),
        b"text/html; charset=ISO-8859-1",
    ),
    "the header's quoted charset": (
        PAGE.format(head="").encode("utf-8"),
        b'text/html; charset="utf-8"',
    ),
    "an unknown charset in the header, <meta charset> in the body": (
        PAGE.format(head='<meta charset="windows-1252">').encode("cp1252", "replace"),
        b"text/html; charset=no-such-thing",
    ),
    "utf-7 refused in the header": (
        PAGE.format(head="").encode("utf-8"),
        b"text/html; charset=utf-7",
    ),
    "<meta charset> alone": (
        PAGE.format(head='<meta charset="iso-8859-15">').encode(
            "iso-8859-15", "replace"
        ),
        b"text/html",
    ),
    "<meta http-equiv> alone": (
        PAGE.format(
            head='<meta http-equiv="Content-Type" content="text/html; charset=koi8-r">'
        ).encode("koi8-r", "replace"),
        b"text/html",
    ),
    "the header beats <meta charset>": (
        PAGE.format(head='<meta charset="koi8-r">').encode("utf-8"),
        b"text/html; charset=utf-8",
    ),
    "a BOM beats the header": (
        "\ufeff".encode("utf-16-le") + PAGE.format(head="").encode("utf-16-le"),
        b"text/html; charset=iso-8859-1",
    ),
    "a UTF-8 BOM": (b"\xef\xbb\xbf" + PAGE.format(head="").encode("utf-8"), b""),
    "ascii, nothing declared": (b"<html><a href='/x'>x</a></html>", b"text/html"),
    "utf-8, nothing declared": (PAGE.format(head="").encode("utf-8"), b"text/html"),
    "cp1252 bytes, nothing declared (charset_normalizer's guess)": (
        (PAGE.format(head="") * 20).encode("cp1252", "replace"),
        b"text/html",
    ),
    "no Content-Type at all": (PAGE.format(head="").encode("utf-8"), None),
    "empty body": (b"", b"text/html"),
    "CSS with @charset": ('@charset "iso-8859-1"; a{}'.encode("latin-1"), b"text/css"),
    "CSS, nothing declared": ("a{content:'\xe9'}".encode(), b"text/css"),
}


def scrapy_encoding(cls, body, content_type):
    headers = {} if content_type is None else {"Content-Type": content_type}
    return cls("http://site.test/", body=body, headers=headers).encoding


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_encoding_is_scrapys(case):
    body, content_type = CASES[case]
    header = (content_type or b"").decode("latin-1")
    for cls in (HtmlResponse, TextResponse):
        assert body_encoding(body, header) == scrapy_encoding(cls, body, content_type)


def test_the_worker_answers_with_it_when_not_told_one():
    body, content_type = CASES["<meta charset> alone"]
    worker = Worker()
    worker.init({})
    asked = {"op": "parse", "id": 1, "url": "http://site.test/", "kind": "html"}
    answer = worker.parse({**asked, "content_type": content_type.decode()}, body)
    assert answer["encoding"] == "iso8859-15"
    assert answer["encoding"] == scrapy_encoding(HtmlResponse, body, content_type)
    # the link text read with it
    assert (
        answer["page"]
        == worker.parse({**asked, "encoding": "iso8859-15"}, body)["page"]
    )
    # told one (the response was made with it): that one, and none in the answer
    told = worker.parse({**asked, "encoding": "utf-8"}, body)
    assert "encoding" not in told
