"""robots.txt policy as RFC 9309 states it, without the crawler.

- what an answer means (``outcome_of_status``): 2xx → parse the rules;
  4xx other than 429 → no rules (allow all); 5xx, 429 and network errors →
  unreachable, which means *complete disallow* until a retry succeeds;
  3xx → follow (up to ``MAX_REDIRECTS`` hops, any host).
- how much is read (``robots_text``): the first ``max_bytes`` (at least the
  RFC's 500 KiB) cut at the last whole line, BOM dropped, CRLF/CR → LF.
- which group applies: the product token of the user agent (``webspider``).
- how long to wait before retrying an unreachable robots.txt (``backoff``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from protego import Protego

#: RFC 9309 2.5: crawlers SHOULD follow at least five consecutive redirects.
MAX_REDIRECTS = 5

PARSE = "parse"
ALLOW_ALL = "allow_all"
UNREACHABLE = "unreachable"
REDIRECT = "redirect"

_BOM = b"\xef\xbb\xbf"


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
    if body.startswith(_BOM):
        body = body[len(_BOM) :]
    text = body.decode("utf-8", errors="replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text, truncated


def product_token(user_agent: str) -> str:
    """``webspider/0.1 (+https://…)`` → ``webspider`` (RFC 9309 2.2.1)."""
    token = user_agent.strip().split("/", 1)[0].split(None, 1)
    name = token[0] if token else ""
    return "".join(ch for ch in name if ch.isalnum() or ch in "-_").lower() or "*"


def backoff(attempt: int, base: float, maximum: float = 3600.0) -> float:
    """Seconds before retry ``attempt`` (0 for the first retry): doubling."""
    return float(min(maximum, base * 2.0**attempt))


def drop_partial_token_groups(parser: Protego, token: str) -> None:
    """Forget groups whose name is only a prefix of ``token``.

    protego matches a group name at the start of a word of the user agent, so
    ``User-agent: web`` would apply to ``webspider``; RFC 9309 2.2.1 matches
    the product token as a whole. (protego keeps its groups in a private
    dict; if that changes, its own matching is used as it is.)"""
    groups = getattr(parser, "_user_agents", None)
    if not isinstance(groups, dict):
        return
    for name in [g for g in groups if g not in ("*", token) and token.startswith(g)]:
        del groups[name]
    cache = getattr(parser, "_matched_rule_set", None)
    if isinstance(cache, dict):
        cache.clear()
