"""robots.txt policy as RFC 9309 states it, without the crawler.

- what an answer means (``outcome_of_status``): 2xx → parse the rules;
  4xx other than 429 → no rules (allow all); 5xx, 429 and network errors →
  unreachable, which means *complete disallow* until a retry succeeds;
  3xx → follow (up to ``MAX_REDIRECTS`` hops, any host).
- how much is read (``robots_text``): the first ``max_bytes`` (at least the
  RFC's 500 KiB) cut at the last whole line, a byte order mark (or the
  start of one) dropped, CRLF/CR → LF.
- how long to wait before retrying an unreachable robots.txt (``backoff``).

The groups and rules themselves: webspider.politeness.robotsrules.
"""

from __future__ import annotations

#: RFC 9309 2.5: crawlers SHOULD follow at least five consecutive redirects.
MAX_REDIRECTS = 5

PARSE = "parse"
ALLOW_ALL = "allow_all"
UNREACHABLE = "unreachable"
REDIRECT = "redirect"

#: a UTF-8 byte order mark, and what is left of one cut short (as Google's
#: parser, which skips them too)
_BOMS = (b"\xef\xbb\xbf", b"\xef\xbb", b"\xef")


def outcome_of_status(status: int) -> str:
    """What a robots.txt answer with HTTP ``status`` means for the crawl."""
    if 200 <= status < 300:
        return PARSE
    if 300 <= status < 400:
        return REDIRECT
    if 400 <= status < 500 and status != 429:
        return ALLOW_ALL
    return UNREACHABLE  # 5xx, 429, and anything nonsensical (1xx, 6xx)


def robots_text(body: bytes, max_bytes: int) -> tuple[str, bool]:
    """The part of a robots.txt body that is parsed, and whether some was cut.

    Cut at the last line break within ``max_bytes`` so no rule is half read;
    decoded as UTF-8 (RFC 9309 2.3), undecodable bytes replaced."""
    truncated = len(body) > max_bytes
    if truncated:
        body = body[:max_bytes]
        end = max(body.rfind(b"\n"), body.rfind(b"\r"))
        body = body[: end + 1] if end >= 0 else b""
    for bom in _BOMS:
        if body.startswith(bom):
            body = body[len(bom) :]
            break
    text = body.decode("utf-8", errors="replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text, truncated


def backoff(attempt: int, base: float, maximum: float = 3600.0) -> float:
    """Seconds before retry ``attempt`` (0 for the first retry): doubling."""
    return float(min(maximum, base * 2.0**attempt))
