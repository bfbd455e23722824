"""URL helpers: canonical form for de-duplication, seed validation, scope keys.

Pure functions (no Scrapy imports) so they can be tested with tables."""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from functools import lru_cache
from urllib.parse import ParseResult, SplitResult, unquote, urlsplit, urlunsplit

# w3lib.url is imported where it is used, not here: it imports urllib.request
# (http.client, email, ssl), ~7 MB of the page worker's memory, which reads
# most sites' links without it (their URLs take canonical_url's fast path).

#: Schemes webspider ever requests. Everything else (mailto:, javascript:,
#: data:, file:, ftp:, …) is a link we record at most, never a request.
FETCHABLE_SCHEMES = frozenset({"http", "https"})

_DEFAULT_PORTS = {"http": 80, "https": 443}
_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


class BadURLError(ValueError):
    """A URL given by the user that cannot be crawled; the message names it."""


#: canonical_url's cache: python3.11-doc's 178,000 links are 4,700 distinct
#: URLs, so 16,384 holds a site's navigation and index links with room to
#: spare. Each entry is ~200 bytes in each process (crawl and page worker);
#: 131,072 (before) filled up on large sites and cost ~25 MB a process for
#: links that mostly never came back (bench/README.md, "Memory at 1M pages").
CANONICAL_CACHE = 1 << 14


@lru_cache(maxsize=CANONICAL_CACHE)
def canonical_url(url: str) -> str:
    """The key under which a URL is de-duplicated.

    w3lib's canonicalize_url (fragment dropped, host lower-cased and
    IDNA-encoded, percent-encoding normalised, query arguments sorted) plus
    what it leaves alone: the scheme's default port, and session parameters
    (see SESSION_PARAMS), which name a visit, not a resource. Cached, because
    the same URL is linked from many pages of a site (navigation, index
    entries)."""
    if _is_plain(url):
        return url
    head, question, query = url.partition("?")
    if question and _QUERY_RE.fullmatch(query) and _is_plain(head):
        if _maybe_session(query) and _SESSION_RE.search(url, len(head)):
            query = _without_sessions(query)
            if not query:
                return head
        canonical_query = _canonical_query(query)
        if canonical_query:
            return f"{head}?{canonical_query}"
    return _slow_canonical_url(url)


#: Query arguments (and ``;name=`` path parameters) that carry a session,
#: matched case-insensitively: Java servlets (``jsessionid``), PHP
#: (``PHPSESSID``), ColdFusion (``CFID``, ``CFTOKEN``), osCommerce
#: (``osCsid``), Zen Cart (``zenid``) and the generic names. A site that
#: writes a fresh one into every link is otherwise crawled again under each
#: (a trap: the URLs double per level). ``sid`` only with a token for a value
#: (16 or more letters and digits, as Heritrix's StripSessionIDs rule), since
#: ``?sid=3`` may well name a page.
SESSION_PARAMS = (
    "jsessionid",
    "phpsessid",
    "sessionid",
    "session_id",
    "sessid",
    "cfid",
    "cftoken",
    "oscsid",
    "zenid",
    "sid",
)
_SESSION_NAME = "(?:" + "|".join(n for n in SESSION_PARAMS if n != "sid") + ")"
_SID_TOKEN = r"sid=[0-9a-z]{16,}(?=[&;#]|$)"
#: a session argument or path parameter, where it starts
_SESSION_RE = re.compile(rf"[?&;](?:{_SESSION_NAME}=|{_SID_TOKEN})", re.IGNORECASE)
#: one query argument that is a session
_SESSION_ARG_RE = re.compile(rf"{_SESSION_NAME}=.*|{_SID_TOKEN}", re.IGNORECASE)
#: a session path parameter (``/cart;jsessionid=A1B2``)
_SESSION_PATH_RE = re.compile(rf";(?:{_SESSION_NAME}|sid)=[^/;?#]*", re.IGNORECASE)


def _maybe_session(text: str) -> bool:
    """Whether ``text`` may hold a session argument (every name ends in "id"
    but cftoken): a tenth of the cost of _SESSION_RE, which then decides, on
    the path every URL with a query takes once."""
    low = text.lower()
    return "id=" in low or "cftoken=" in low


def _without_sessions(query: str) -> str:
    return "&".join(
        arg for arg in query.split("&") if _SESSION_ARG_RE.fullmatch(arg) is None
    )


# An http(s) URL that canonicalize_url returns unchanged: a lower-case host
# name whose last label starts with a letter (so no IPv4 number parsing and
# no IDNA) or a dotted-quad IPv4 address, a port that is not the default,
# and a path of characters it never escapes, without dot segments, query or
# fragment. Each distinct URL is canonicalised once (the cache above), but
# w3lib is slow at it, and a large share of a site's distinct link URLs are
# plain. tests/test_utils_url.py checks the shortcut against w3lib.
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_PLAIN_URL_RE = re.compile(
    r"https?://"
    rf"(?:(?:[a-z0-9-]+\.)*[a-z][a-z0-9-]*|(?:{_OCTET}\.){{3}}{_OCTET})"
    r"(?::([1-9]\d{0,4}))?"  # the port
    r"/[A-Za-z0-9_~!$&'()*+,=:@/.-]*"
)


def _is_plain(url: str) -> bool:
    match = _PLAIN_URL_RE.fullmatch(url)
    if match is None or "/." in url or "xn--" in url:
        return False
    port = match.group(1)
    default = "80" if url.startswith("http:") else "443"
    return port is None or (port != default and int(port) <= 65535)


# A query w3lib only sorts and re-quotes: no percent-encoding to normalise,
# no "+" (a space), no fragment. Its arguments are sorted by (name, value)
# and every character but letters, digits and "-._~" is percent-encoded
# ("=" too, in a value). Most query links of sites look like this
# (``pygments.css?2022.1``, ``issue?@action=redirect&bpo=1``).
_QUERY_RE = re.compile(r"[A-Za-z0-9._~!$'()*,/:;?@=&-]*")
_QUOTE_QUERY = str.maketrans({c: f"%{ord(c):02X}" for c in "!$'()*,/:;?@="})


def _canonical_query(query: str) -> str:
    pairs = [field.partition("=")[::2] for field in query.split("&") if field]
    pairs.sort()
    return "&".join(
        f"{name.translate(_QUOTE_QUERY)}={value.translate(_QUOTE_QUERY)}"
        for name, value in pairs
    )


def _slow_canonical_url(url: str) -> str:
    from w3lib.url import canonicalize_url  # noqa: PLC0415 (see the imports)

    canon = canonicalize_url(url)
    if _maybe_session(canon) and _SESSION_RE.search(canon):
        canon = _strip_sessions(canon)
    parts = urlsplit(canon)
    port = parts.port if parts.netloc else None
    if port is not None and port == _DEFAULT_PORTS.get(parts.scheme):
        host = parts.hostname or ""
        if ":" in host:  # IPv6 literal
            host = f"[{host}]"
        userinfo = parts.netloc.rpartition("@")[0]
        netloc = f"{userinfo}@{host}" if userinfo else host
        canon = urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
    return canon


def _strip_sessions(canon: str) -> str:
    """A canonical URL without its session arguments and path parameters."""
    head, question, query = canon.partition("?")
    if ";" in head:
        head = _SESSION_PATH_RE.sub("", head)
    if question:
        query = _without_sessions(query)
    return f"{head}?{query}" if query else head


# An http(s) URL that w3lib's safe_url_string (what scrapy.Request does to
# every URL it is given) returns unchanged: a lower-case ASCII host name
# (no IDNA, no IPv6), a port with no leading zero and in range, a path of
# characters it never escapes (a lone "%" included), and a query and a
# fragment that are not empty and hold no character it escapes there (a
# "'" in the query, a second "#"). Conservative: any other URL may well be
# safe too, and only costs the slow path. tests/test_utils_url.py checks it
# against w3lib over adversarial URLs.
_SAFE_PATH = r"[A-Za-z0-9._~!$&'()*+,;=:@/%-]"
_SAFE_URL_RE = re.compile(
    r"https?://[a-z0-9-]+(?:\.[a-z0-9-]+)*"
    r"(?::(?:[1-9]\d{0,3}|[1-5]\d{4}|6[0-4]\d{3}|65[0-4]\d\d|655[0-2]\d|6553[0-5]))?"
    rf"/{_SAFE_PATH}*"
    r"(?:\?[A-Za-z0-9._~!$&()*+,;=:@/?%-]+)?"
    rf"(?:#(?:{_SAFE_PATH}|\?)+)?"
)


def is_safe_url(url: str) -> bool:
    """Whether ``url`` is certainly one that w3lib's ``safe_url_string``
    (scrapy.Request's quoting) returns unchanged; False says nothing."""
    return _SAFE_URL_RE.fullmatch(url) is not None


def url_scheme(url: str) -> str:
    """Lower-cased scheme of an absolute URL, or '' when it has none."""
    match = _SCHEME_RE.match(url)
    return match.group(0)[:-1].lower() if match else ""


def is_fetchable(url: str) -> bool:
    """Whether an absolute URL has a scheme webspider requests."""
    # the prefix test answers nearly every link without the regex
    if url.startswith(("http://", "https://")):
        return True
    return url_scheme(url) in FETCHABLE_SCHEMES


# the password of a URL's user information: "scheme://user:" then up to the
# last "@" of the authority (browsers split there too)
_PASSWORD_RE = re.compile(r"^((?:[A-Za-z][A-Za-z0-9+.-]*://)?[^/?#@:]*:)[^/?#]*@")


def mask_password(url: str) -> str:
    """``http://user:secret@host/`` → ``http://user:***@host/``, for showing
    a URL given by the user (even one that does not parse)."""
    return _PASSWORD_RE.sub(r"\1***@", url, count=1)


def split_userinfo(url: str) -> tuple[str, str | None, str]:
    """``http://user:pass@host/`` → (``http://host/``, ``user``, ``pass``),
    user and password percent-decoded; (url, None, "") without them."""
    parts = urlsplit(url)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    if not at:
        return url, None, ""
    user, _, password = userinfo.partition(":")
    bare = urlunsplit(parts._replace(netloc=hostport))
    return bare, unquote(user), unquote(password)


def normalize_seed(value: str) -> str:
    """Validate a start URL given by the user and return it ready to request.

    A bare host (``example.org``, ``127.0.0.1:8000/docs/``) means https://.
    A ``user:password@`` is kept (see split_userinfo). Raises BadURLError
    naming the value (its password masked) for anything that is not an
    http(s) URL with a host."""
    shown = mask_password(value)
    raw = value.strip()
    if not raw:
        raise BadURLError("empty start URL")
    if any(ch.isspace() for ch in raw):
        raise BadURLError(f"invalid start URL {shown!r}: it contains white space")
    scheme = url_scheme(raw)
    # "localhost:8000" parses with scheme "localhost"; a scheme that is followed
    # by digits only is really host:port.
    if scheme and not re.match(r"^[^:]+:\d+(?:[/?#]|$)", raw):
        if scheme not in FETCHABLE_SCHEMES:
            raise BadURLError(
                f"invalid start URL {shown!r}: scheme {scheme!r} is not supported "
                "(only http and https)"
            )
        if not raw[len(scheme) + 1 :].startswith("//"):
            raise BadURLError(f"invalid start URL {shown!r}: expected {scheme}://HOST/")
    else:
        raw = "https://" + raw
    try:
        parts = urlsplit(raw)
        port = parts.port  # raises ValueError on a bad port
    except ValueError as exc:
        raise BadURLError(f"invalid start URL {shown!r}: {exc}") from None
    host = parts.hostname
    if not host:
        raise BadURLError(f"invalid start URL {shown!r}: it has no host")
    if not _valid_host(host):
        raise BadURLError(f"invalid start URL {shown!r}: bad host name {host!r}")
    if port == 0:
        raise BadURLError(f"invalid start URL {shown!r}: port 0")
    from w3lib.url import safe_url_string  # noqa: PLC0415 (see the imports)

    url = safe_url_string(raw)
    if not urlsplit(url).path:
        url += "/"
    return url


_HOST_LABEL_RE = re.compile(r"^(?!-)[\w-]{1,63}(?<!-)$", re.UNICODE)


def _valid_host(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        pass
    labels = host.rstrip(".").split(".")
    return all(_HOST_LABEL_RE.match(label) for label in labels)


@lru_cache(maxsize=4096)
def ascii_host(host: str) -> str:
    """A host name as requests carry it: lower-case, an internationalised
    name (``bücher.test``) in its IDNA form (``xn--bcher-kva.test``).

    Scrapy's Request passes its URL through w3lib's safe_url_string, which
    writes the host so (NFKC, then Python's IDNA 2003 codec, the same steps
    as here), and so does canonical_url; every host compared with another
    (scope, robots.txt origins) goes through this too, so that a name and
    its punycode form are one host everywhere. A name IDNA refuses (a label
    over 63 characters, an empty label) is kept as it is, as w3lib keeps
    it."""
    host = host.lower()
    if host.isascii():
        return host
    try:
        return unicodedata.normalize("NFKC", host).encode("idna").decode("ascii")
    except UnicodeError:
        return host


def host_of(url: str) -> str:
    """Host name of a URL (no port) as ascii_host writes it, '' when it has
    none."""
    # A site's links share a few "scheme://authority" heads: each is split once.
    match = _HEAD_RE.match(url)
    return _host_of(match.group(0) if match else url)


_HEAD_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*")


@lru_cache(maxsize=4096)
def _host_of(url: str) -> str:
    try:
        return ascii_host(urlsplit(url).hostname or "")
    except ValueError:
        return ""


#: (scheme, host, port) — the unit robots.txt and politeness apply to
Origin = tuple[str, str, int]


def origin_of(url: str) -> Origin:
    """(scheme, host, port) — the unit robots.txt and politeness apply to."""
    return origin_of_parts(urlsplit(url))


def origin_of_parts(parts: SplitResult | ParseResult) -> Origin:
    """``origin_of`` for a URL already split (e.g. by Scrapy's cached
    ``urlparse_cached``, so per-request callers do not parse it again)."""
    scheme = parts.scheme.lower()
    port = parts.port or _DEFAULT_PORTS.get(scheme, 0)
    return scheme, ascii_host(parts.hostname or ""), port
