"""Short ids of URLs for the keys of records (webspider.records).

A URL's *id* is 12 characters: 72 bits of its BLAKE2b, base64 (``url_ids``).
Two URLs share an id with a probability of about n²/2⁷³ (1 in 10⁸ for ten
million URLs).

A URL's *code* is shorter, for the ledgers that write a URL in many keys
(one row per link waiting for something): the shortest prefix of its id,
of ``CODE_LENGTH`` characters or more, that a namespace of codes holds for
it, or that no other URL holds there (``give_codes``, which writes it with
``put_new``: the workers of a shared state, asking at once, agree). With
64⁴ = 16.7 million 4-character prefixes, nearly every URL of a crawl below
a few million has a code of 4; the others 5 or more. The namespace maps a
code to what the caller says stands for its URL (the URL, or a compact
form of it), which is how a URL is told from another of the same prefix;
a code is never given back (its rows may still name it). Codes are
URL-safe base64 (``-`` and ``_``, never ``/`` or ``+``).

A code, once given, is the URL's for good (until the namespace is cleared),
so ``CodeBook`` remembers the codes it saw last: a URL linked from page
after page (a queued page, the navigation) is hashed and looked up once.

Pure: standard library only.
"""

from __future__ import annotations

from binascii import b2a_base64
from typing import TYPE_CHECKING, Any, Protocol

from webspider.utils.digests import blake2b
from webspider.utils.recent import Recent
from webspider.utils.sitecodes import SiteCodes

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from webspider.records import RecordStore

#: bytes of BLAKE2b in an id: 9 bytes are 12 base64 characters, no padding
_ID_BYTES = 9
ID_LENGTH = 12
#: the characters of a code at least
CODE_LENGTH = 4
#: codes a CodeBook remembers in a generation (two generations; ~180
#: bytes each: the URL, its code, the dict's slot): as many as the link
#: ledger's states (webspider.reports.links.STATES_KEPT), for the same
#: targets
REMEMBERED = 16384
_URL_SAFE = str.maketrans("+/", "-_")

#: the crawl's shared codes (``UrlCodes``)
NS_CODES = "urls.codes"
NS_CODE_SITES = "urls.sites"
#: stores whose ``UrlCodes`` are remembered (``UrlCodes.of``)
_STORES = 4
_INSTANCES: list[tuple[Any, UrlCodes]] = []


class CodeRecords(Protocol):
    """What ``give_codes`` uses of a namespace of records."""

    def get_many(self, keys: Sequence[str]) -> list[Any | None]: ...

    def put_new(self, key: str, value: Any) -> bool: ...


def url_ids(urls: Sequence[str]) -> list[str]:
    """The ids of ``urls`` (see the module docstring), in one encoding."""
    if not urls:
        return []
    raw = b2a_base64(
        b"".join(
            [
                blake2b(
                    u.encode("utf-8", "surrogatepass"), digest_size=_ID_BYTES
                ).digest()
                for u in urls
            ]
        ),
        newline=False,
    ).decode("ascii")
    return [raw[i : i + ID_LENGTH] for i in range(0, len(raw), ID_LENGTH)]


def url_id(url: str) -> str:
    digest = blake2b(url.encode("utf-8", "surrogatepass"), digest_size=_ID_BYTES)
    return b2a_base64(digest.digest(), newline=False).decode("ascii")


def give_codes(records: CodeRecords, values: Mapping[str, str]) -> dict[str, str]:
    """The code of each URL of ``values`` in ``records``, given to those that
    have none (with ``values[url]`` as its value there)."""
    return _codes(records, values, give=True)


def _codes(
    records: CodeRecords, values: Mapping[str, str], give: bool
) -> dict[str, str]:
    urls = list(values)
    code_of: dict[str, str] = {}
    todo = [
        (url, url_id_.translate(_URL_SAFE), CODE_LENGTH)
        for url, url_id_ in zip(urls, url_ids(urls), strict=True)
    ]
    while todo:
        codes = [url_id_[:length] for _, url_id_, length in todo]
        owners = records.get_many(codes)
        again: list[tuple[str, str, int]] = []
        for (url, url_id_, length), code, owner in zip(
            todo, codes, owners, strict=True
        ):
            value = values[url]
            if owner == value:
                code_of[url] = code
            elif owner is None:
                if not give:
                    continue
                if records.put_new(code, value):
                    code_of[url] = code
                else:  # another URL asking at once (or another worker)
                    again.append((url, url_id_, length))
            elif length < ID_LENGTH:
                again.append((url, url_id_, length + 1))
            elif give:  # one id for both (see above): they share the code
                code_of[url] = code
        todo = again
    return code_of


class CodeBook:
    """``give`` and ``find`` codes in ``records``, remembering the last ones
    (see the module docstring); ``forget`` when the namespace is cleared."""

    __slots__ = ("recent", "records")

    def __init__(self, records: CodeRecords) -> None:
        self.records = records
        self.recent: Recent[str, str] = Recent(REMEMBERED)

    def give(self, urls: Sequence[str], short: Callable[[str], str]) -> dict[str, str]:
        """The code of each of ``urls``, given to those that have none:
        ``short(url)`` is what it stands for."""
        return self._codes(urls, short, give=True)

    def find(self, urls: Sequence[str], short: Callable[[str], str]) -> dict[str, str]:
        """The codes of those of ``urls`` that have one."""
        return self._codes(urls, short, give=False)

    def forget(self) -> None:
        self.recent.clear()

    def _codes(
        self, urls: Sequence[str], short: Callable[[str], str], give: bool
    ) -> dict[str, str]:
        # one pass and one dict (the answer itself), where lookup's three
        # lists and a dict built from them took four: a flush of the waiting
        # links asks for ~1,500 URLs, nearly all remembered
        code_of, missing = self.recent.lookup_map(urls)
        if missing:
            # only codes are remembered: a URL without one is asked again
            found = _codes(self.records, {url: short(url) for url in missing}, give)
            self.recent.keep(found.items())
            if len(found) < len(missing):  # (find: some have none)
                for url in missing:
                    if url not in found:
                        del code_of[url]
            code_of.update(found)
        return code_of  # type: ignore[return-value]


class UrlCodes:
    """The crawl's shared codes of URLs in ``store`` (see the module
    docstring): ``give`` and ``find`` a URL's code, ``urls`` of codes."""

    __slots__ = ("_book", "records", "sites")

    def __init__(self, store: RecordStore) -> None:
        self.records = store.records(NS_CODES)
        self.sites = SiteCodes(store.records(NS_CODE_SITES))
        self._book = CodeBook(self.records)

    @classmethod
    def of(cls, store: RecordStore) -> UrlCodes:
        """The one instance of ``store``'s codes (a store gives the same
        namespace object for a name: the instance is found by it; the last
        few stores are remembered)."""
        records = store.records(NS_CODES)
        for held, codes in _INSTANCES:
            if held is records:
                return codes
        codes = cls(store)
        _INSTANCES.insert(0, (records, codes))
        del _INSTANCES[_STORES:]
        return codes

    def give(self, urls: Sequence[str]) -> dict[str, str]:
        """The code of each of ``urls``, given to those that have none."""
        return self._book.give(urls, self.sites.short)

    def find(self, urls: Sequence[str]) -> dict[str, str]:
        """The codes of those of ``urls`` that have one."""
        return self._book.find(urls, self.sites.short)

    def urls(self, codes: Sequence[str]) -> list[str | None]:
        """The URL of each code (None: no URL has it)."""
        long = self.sites.long
        return [
            None if value is None else long(str(value))
            for value in self.records.get_many(codes)
        ]
