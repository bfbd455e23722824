"""Short codes of sites, for the records that hold many URLs of few sites.

A record value that is a URL repeats its site's ``scheme://host[:port]``
(23 characters for ``https://www.example.org``, most of a short URL) in
every row. ``SiteCodes`` gives each site a code (base 36: ``1``, ``2``, …)
in a namespace of records, so that a URL is kept as ``<site code><path>``
(``short``) and read back whole (``long``). The namespace holds ``<site>``
→ its code, ``#<code>`` → the site and ``n`` → the last code given
(``incr``, so the workers of a shared state agree: the code's site is
written first, and ``put_new`` decides which of two workers' codes a site
keeps; the other is never used).

A short form never has a ``:`` before its first ``/`` (a code is letters
and digits), a URL always has one (its scheme): ``is_short`` tells them
apart, so a record written before as the URL is read as it is.

Pure: standard library only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from webspider.records import Records

#: site codes kept in memory, at most (a crawl of many sites asks the store)
_CODES = 4096
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def site_of(url: str) -> str:
    """``scheme://host[:port]`` of a canonical URL."""
    start = url.find("//")
    end = url.find("/", start + 2) if start >= 0 else -1
    return url[:end] if end >= 0 else url


def is_short(value: str) -> bool:
    """Whether ``value`` is a ``short`` form (not a URL)."""
    return ":" not in value.partition("/")[0]


def _base36(number: int) -> str:
    out = ""
    while True:
        number, digit = divmod(number, 36)
        out = _DIGITS[digit] + out
        if not number:
            return out


class SiteCodes:
    """The site codes of ``records`` (see the module docstring)."""

    __slots__ = ("_codes", "_names", "records")

    def __init__(self, records: Records) -> None:
        self.records = records
        self._codes: dict[str, str] = {}
        self._names: dict[str, str] = {}

    def code(self, site: str) -> str:
        """``site``'s code, given when it has none."""
        found = self._find(site)
        if found is not None:
            return found
        sites = self.records
        candidate = _base36(sites.incr("n"))
        # the code's site first: a code is never without it, even if
        # another worker gave the site a code meanwhile (then unused)
        sites.put("#" + candidate, site)
        stored = candidate if sites.put_new(site, candidate) else sites.get(site)
        return self._remember(site, str(stored))

    def site(self, code: str) -> str | None:
        """The site of ``code``, None when no site has it."""
        found = self._names.get(code)
        if found is None:
            stored = self.records.get("#" + code)
            if stored is None:
                return None
            found = str(stored)
            if len(self._names) >= _CODES:
                self._names.clear()
            self._names[code] = found
        return found

    def short(self, url: str) -> str:
        """``<site code><path>`` of ``url``."""
        site = site_of(url)
        return self.code(site) + url[len(site) :]

    def shorts(self, urls: Sequence[str]) -> list[str | None]:
        """``short`` of each of ``urls`` whose site has a code (None for the
        others: no code is given, so a read writes nothing). A page's links
        are mostly of one site: its code is looked up once a run of them."""
        out: list[str | None] = []
        append = out.append
        # the last run's ``<site>/``, its length without the slash, its code
        prefix, cut, code = "\0", 0, None
        for url in urls:
            if not url.startswith(prefix):
                site = site_of(url)
                prefix, cut, code = site + "/", len(site), self._find(site)
            append(None if code is None else code + url[cut:])
        return out

    def _find(self, site: str) -> str | None:
        """``site``'s code, None when it has none (none is given)."""
        code = self._codes.get(site)
        if code is None:
            stored = self.records.get(site)
            if stored is not None:
                code = self._remember(site, str(stored))
        return code

    def _remember(self, site: str, code: str) -> str:
        codes = self._codes
        if len(codes) >= _CODES:
            codes.clear()
        codes[site] = code
        return code

    def long(self, short: str) -> str | None:
        """The URL ``short`` stands for (None: its site has no code here)."""
        slash = short.find("/")
        site = self.site(short if slash < 0 else short[:slash])
        if site is None:
            return None
        return site + short[len(short) if slash < 0 else slash :]

    def url(self, value: str) -> str | None:
        """The URL a record's value holds: a ``short`` form, or the URL
        itself (a record written before)."""
        return self.long(value) if is_short(value) else value

    def forget(self) -> None:
        """Forget the codes remembered (the namespace was cleared)."""
        self._codes.clear()
        self._names.clear()
