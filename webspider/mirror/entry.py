"""A mirrored URL's entry (``Entry``) and the forms it is kept in: the
compact index record of the crawl state (``Entry.index_json``), the export's
line (``to_json``, ``export_line``), the forms earlier versions wrote; the
``restore`` map packed (``pack_restore``), and where a URL's file is as the
index says it (``where_value``).

Pure: no Scrapy, plain JSON.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from webspider.mirror.paths import url_path
from webspider.utils.urljoin import UrlJoiner

if TYPE_CHECKING:
    from collections.abc import Mapping

Segments = tuple[str, ...]


@dataclass
class Entry:
    """One URL stored in the mirror."""

    url: str  # canonical URL
    path: Segments  # segments below the mirror root
    hash: str  # sha256 of the bytes as received
    size: int
    content_type: str | None = None  # the Content-Type header as sent
    #: "html", "css" (files whose links the mirror converts) or ""
    kind: str = ""
    #: the encoding the page was read with (for later passes over its links)
    encoding: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    #: the file holds converted links (so it differs from the received bytes)
    converted: bool = False
    #: canonical URLs left absolute in the file because they were not (yet)
    #: mirrored when it was written: the end-of-crawl fix-up looks at these
    #: (kept in ``mirror.pending``, not in the index)
    pending: list[str] = field(default_factory=list)
    #: canonical URL → expected path of relative links kept as written
    #: though their file was not mirrored yet (checked by the fix-up)
    kept: dict[str, str] = field(default_factory=dict)
    #: rewritten link value → the absolute URL it replaced (to undo it)
    restore: dict[str, str] = field(default_factory=dict)
    #: not seen by the last complete crawl
    gone: bool = False
    #: the crawl (run number) that last fetched it
    run: int = 0
    #: that crawl found it unchanged (a 304) rather than storing a 200: a
    #: refetch of it in the same crawl asks again with the validators
    revalidated: bool = False
    #: ``restore`` leaves out the links whose value, joined with the page's
    #: URL, is the URL they stand for (read as they are, they say it): so
    #: read back from the index, whose records do not keep them
    restore_joins: bool = False

    def to_json(self) -> dict[str, Any]:
        """Every field: a line of the export."""
        # A shallow copy: the values are strings, numbers and flat str lists and
        # dicts, which json.dumps only reads (dataclasses.asdict deep-copies).
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["path"] = "/".join(self.path)
        return data

    def index_json(
        self,
        plain_path: bool | None = None,
        packed_restore: Mapping[str, Any] | None = None,
    ) -> list[Any]:
        """The index record, compact (one per mirrored URL, so its size is
        much of the crawl state's): a list of the fields by position
        (``_POSITIONS``, without the names an object repeats in every
        record), the ones at their defaults left out at its end; without
        the fix-up's ``pending`` and ``kept``, the URL (its key), the path
        when ``url_path`` gives it (None); the hash in base64, a
        Last-Modified date as its timestamp when that gives it back
        exactly, an ETag nginx derives from that date and the size as a
        flag (``_derived_etag``); ``restore`` without the links that say their URL
        (``pack_restore``). ``from_json`` reads it, the object form an
        earlier version wrote, and the long form. ``plain_path``: whether
        the path is the one ``url_path`` gives, when the caller knows
        (``where_value``); ``packed_restore``: ``pack_restore`` of ``restore``
        when worked out already (by the page worker, which then sends only
        this form: ``restore`` itself may be left empty)."""
        digest = _hash_b64(self.hash)
        stamp = _http_date_stamp(self.last_modified)
        if plain_path is None:
            path = "/".join(self.path)
            plain_path = path == "/".join(url_path(self.url))
        same = restore = None
        packed = packed_restore
        if packed is None and self.restore:
            packed = pack_restore(self.url, self.restore)
        if packed:
            same, restore = packed.get("same"), packed.get("restore")
        etag, derived = self.etag, _derived_etag(self.etag, stamp, self.size)
        if derived:
            etag = None
        record = [
            digest if digest is not None else "!" + self.hash,
            self.size,
            self.run,
            int(self.converted)
            | int(self.gone) << 1
            | int(self.revalidated) << 2
            | derived << 3,
            self.last_modified if stamp is None else stamp,
            self.content_type,
            self.kind,
            self.encoding,
            etag,
            None if plain_path else "/".join(self.path),
            same,
            restore,
        ]
        end = len(record)
        while end > 2 and record[end - 1] == _POSITION_DEFAULTS[end - 1]:
            end -= 1
        code = _TYPE_CODES.get((self.content_type, self.kind, self.encoding))
        if code is not None and end > _TYPE_AT:
            # the usual content type, kind and encoding: one number
            return [*record[:_TYPE_AT], code, *record[_TYPE_AT + 3 : end]]
        return record[:end]

    @classmethod
    def from_json(
        cls, data: Mapping[str, Any] | list[Any], url: str | None = None
    ) -> Entry:
        if isinstance(data, list):  # the index record (``index_json``)
            data = _positional_form(data, url)
        elif "s" in data:  # the index record of an earlier version
            data = _long_form(data, url)
        else:  # the export, an older state
            data = dict(data)
        if url is not None:
            data["url"] = url
        data["path"] = tuple(str(data["path"]).split("/"))
        if "same" in data:
            data["restore"] = unpack_restore(
                data["url"], data.pop("same"), data.get("restore") or {}
            )
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in known})


#: an index field's name in the compact record an earlier version wrote
_SHORT = {
    "hash": "h",
    "size": "s",
    "content_type": "t",
    "kind": "k",
    "encoding": "e",
    "etag": "g",
    "last_modified": "m",
    "converted": "c",
    "gone": "x",
    "run": "r",
    "revalidated": "v",
}
_LONG = {short: name for name, short in _SHORT.items()}
_BOOLS = frozenset(("converted", "gone", "revalidated"))
_HEX = frozenset("0123456789abcdef")


def _hash_b64(digest: str) -> str | None:
    """A SHA-256 in hex as base64 (43 characters instead of 64), or None."""
    if len(digest) != 64 or not _HEX.issuperset(digest):
        return None
    return base64.urlsafe_b64encode(bytes.fromhex(digest)).decode("ascii")[:43]


@lru_cache(maxsize=64)
def _http_date_stamp(value: str | None) -> int | None:
    """An HTTP date as its POSIX timestamp, when formatting that again gives
    the very same string (servers' usual form); None otherwise."""
    if not value or len(value) != 29:
        return None
    from email.utils import (  # noqa: PLC0415 (see _formatdate)
        mktime_tz,
        parsedate_tz,
    )

    parsed = parsedate_tz(value)
    if parsed is None:
        return None
    stamp = int(mktime_tz(parsed))
    return stamp if _formatdate(stamp) == value else None


@lru_cache(maxsize=64)
def _formatdate(stamp: int) -> str:
    """A POSIX timestamp as an HTTP date. email.utils is imported here, not
    at the top: the page worker imports this module (for TargetIndex) and
    never needs it, and it is ~1.5 MB of a process's memory. Cached: a
    site's files share a few dates, and every record read back formatted
    its own (6 µs; py-spy put a sixth of the mirror's end of the crawl on
    PostgreSQL's docs there, its 1,172 records read two or three times)."""
    from email.utils import formatdate  # noqa: PLC0415

    return formatdate(stamp, usegmt=True)


#: the ETag nginx gives a static file: its mtime (the Last-Modified date's
#: timestamp) and size in hex, strong or (gzip on) weak
_ETAG_FORMS = ('"{:x}-{:x}"', 'W/"{:x}-{:x}"')


def _derived_etag(etag: str | None, stamp: int | None, size: int) -> int:
    """1 or 2 when ``etag`` is nginx's (``_ETAG_FORMS``) of the Last-Modified
    ``stamp`` and the size (an index record's flags then say it, where the
    ETag took ~19 characters a page); 0 otherwise."""
    if etag is None or stamp is None or type(size) is not int or size < 0:
        return 0
    for number, form in enumerate(_ETAG_FORMS, 1):
        if etag == form.format(stamp, size):
            return number
    return 0


#: an index record's fields by position (``Entry.index_json``), and their
#: defaults (a record ends before the defaults it would end with)
_POSITIONS = (
    "hash",
    "size",
    "run",
    "flags",
    "last_modified",
    "content_type",
    "kind",
    "encoding",
    "etag",
    "path",
    "same",
    "restore",
)
_POSITION_DEFAULTS: tuple[Any, ...] = (None, None, 0, 0, None, None, "", *[None] * 5)
#: the most fields an index record has
RECORD_FIELDS = len(_POSITIONS)
#: where the content type is in the record, and the path
_RUN_AT = 2
_FLAGS_AT = 3
_TYPE_AT = 5
_PATH_AT = 9
#: the ``flags`` bit of a gone entry (``Entry.index_json``)
_GONE_FLAG = 2
#: (content type, kind, encoding) of most files: the record holds the
#: number (its index, for good: records name them) in place of the three
#: (``,0`` for ``,"text/html","html","utf-8"``: 25 characters a page less)
_TYPES: tuple[tuple[str | None, str, str | None], ...] = (
    ("text/html", "html", "utf-8"),
    ("text/html; charset=utf-8", "html", "utf-8"),
    ("text/css", "css", "utf-8"),
    ("image/png", "", None),
    ("image/jpeg", "", None),
    ("image/gif", "", None),
    ("image/svg+xml", "", None),
    ("application/javascript", "", None),
    ("text/javascript", "", None),
)
_TYPE_CODES = {types: code for code, types in enumerate(_TYPES)}


def _positional_form(record: list[Any], url: str | None) -> dict[str, Any]:
    """An index record (``Entry.index_json``) with its long names."""
    if len(record) > _TYPE_AT and type(record[_TYPE_AT]) is int:
        types = _TYPES[record[_TYPE_AT]]
        record = [*record[:_TYPE_AT], *types, *record[_TYPE_AT + 1 :]]
    fields = dict(zip(_POSITIONS, record, strict=False))
    digest = str(fields["hash"])
    flags = int(fields.pop("flags", 0))
    out: dict[str, Any] = {
        "restore_joins": True,
        "hash": digest[1:]
        if digest[:1] == "!"
        else base64.urlsafe_b64decode(digest + "=").hex(),
        "size": fields["size"],
        "run": fields.get("run", 0),
        "converted": bool(flags & 1),
        "gone": bool(flags & 2),
        "revalidated": bool(flags & 4),
        "content_type": fields.get("content_type"),
        "kind": fields.get("kind") or "",
        "encoding": fields.get("encoding"),
        "etag": fields.get("etag"),
    }
    modified = fields.get("last_modified")
    out["last_modified"] = (
        _formatdate(modified) if isinstance(modified, int) else modified
    )
    derived = flags >> 3 & 3
    if derived and isinstance(modified, int):
        out["etag"] = _ETAG_FORMS[derived - 1].format(modified, out["size"])
    path = fields.get("path")
    if path is None:
        path = "/".join(url_path(url if url is not None else ""))
    out["path"] = path
    if fields.get("same"):
        out["same"] = fields["same"]
    if fields.get("restore"):
        out["restore"] = fields["restore"]
    return out


def export_line(data: Any, url: str) -> dict[str, Any]:
    """``Entry.from_json(data, url).to_json()`` (the export's line of an
    index record, before its ``pending`` and ``kept``), without the Entry
    between: a line a page mirrored, written as the crawl ends, after its
    last page (bench/README.md, "The mirror's work a page, third pass")."""
    if type(data) is not list:
        return Entry.from_json(data, url).to_json()
    fields = _positional_form(data, url)
    if "same" in fields:
        restore = unpack_restore(url, fields["same"], fields.get("restore") or {})
    else:
        restore = fields.get("restore", {})
    # Entry's fields, in their order
    return {
        "url": url,
        "path": str(fields["path"]),
        "hash": fields["hash"],
        "size": fields["size"],
        "content_type": fields["content_type"],
        "kind": fields["kind"],
        "encoding": fields["encoding"],
        "etag": fields["etag"],
        "last_modified": fields["last_modified"],
        "converted": fields["converted"],
        "pending": [],
        "kept": {},
        "restore": restore,
        "gone": fields["gone"],
        "run": fields["run"],
        "revalidated": fields["revalidated"],
        "restore_joins": True,
    }


def _long_form(data: Mapping[str, Any], url: str | None) -> dict[str, Any]:
    """A compact index record (``Entry.index_json``) with its long names."""
    out: dict[str, Any] = {"restore_joins": True}
    for short, value in data.items():
        name = _LONG.get(short)
        if name is not None:
            out[name] = bool(value) if name in _BOOLS else value
    if "b" in data:
        out["hash"] = base64.urlsafe_b64decode(data["b"] + "=").hex()
    if isinstance(out.get("last_modified"), int):
        out["last_modified"] = _formatdate(out["last_modified"])
    full = url if url is not None else str(data.get("url"))
    out["path"] = data["p"] if "p" in data else "/".join(url_path(full))
    if "j" in data:
        out["same"] = data["j"]
    if "o" in data:
        out["restore"] = data["o"]
    return out


#: how a restore value is derived from the link value written (the value,
#: joined with the page's URL): as is, without ``.html`` (wget -E), without
#: ``index.html`` (a folder URL)
_RULES = {"=": "", "h": ".html", "i": "index.html"}


def _derive(joined: str, rule: str) -> str | None:
    suffix = _RULES[rule]
    if not suffix:
        return joined
    head, hash_, fragment = joined.partition("#")
    if not head.endswith(suffix) or (rule == "h" and head.endswith("/index.html")):
        return None
    return head[: -len(suffix)] + hash_ + fragment


def pack_restore(page_url: str, restore: Mapping[str, str]) -> dict[str, Any]:
    """``restore`` (link value written → the URL it stands for) compactly:
    the values whose URL is the value joined with the page's URL are left
    out (most links of a page: read as they are, they say their URL; see
    ``Entry.restore_joins``); ``same``, those whose URL is derived so by
    another of the ``_RULES``, as one string (rule character, value, one a
    line); ``restore``, the others as they are."""
    same: list[str] = []
    other: dict[str, str] = {}
    # every value is joined with the same URL: UrlJoiner gives urljoin's
    # answers at the cost of a concatenation for plain relative links
    join = UrlJoiner(page_url).join
    for value, stands_for in restore.items():
        joined = join(value) if "\n" not in value else ""
        for rule in _RULES:
            if joined and _derive(joined, rule) == stands_for:
                if rule != "=":  # the value says its URL: not kept at all
                    same.append(rule + value)
                break
        else:
            other[value] = stands_for
    packed: dict[str, Any] = {}
    if same:
        packed["same"] = "\n".join(same)
    if other:
        packed["restore"] = other
    return packed


def unpack_restore(
    page_url: str, same: str, other: Mapping[str, str]
) -> dict[str, str]:
    """The restore map ``pack_restore`` packed."""
    restore = dict(other)
    join = UrlJoiner(page_url).join
    for line in same.split("\n"):
        rule, value = line[:1], line[1:]
        derived = _derive(join(value), rule)
        if derived is not None:
            restore[value] = derived
    return restore


def fetched_or_gone(data: Any, run: int) -> bool:
    """Whether an index record (``index_json``) says that ``run`` fetched its
    URL or that it is gone, read where they are without decoding the rest
    (False when it cannot tell: a record of another form)."""
    if type(data) is not list:
        return False
    size = len(data)
    if (data[_RUN_AT] if size > _RUN_AT else 0) == run:
        return True
    flags = data[_FLAGS_AT] if size > _FLAGS_AT else 0
    return type(flags) is int and bool(flags & _GONE_FLAG)


def split(path: str) -> Segments:
    return tuple(path.split("/"))


def where_value(url: str, path: str) -> str | int:
    """Where a URL's file is, as ``targets`` reads it: ``1`` when the path
    is the one ``url_path`` gives the URL (nearly always: its index record
    then holds no path), the path otherwise."""
    return 1 if path == "/".join(url_path(url)) else path


def record_where(data: Any, url: str) -> str | int:
    """The ``where_value`` an index record (``Entry.index_json``) says."""
    if isinstance(data, list):
        at = _PATH_AT
        if len(data) > _TYPE_AT and type(data[_TYPE_AT]) is int:
            at -= 2  # the usual types are one number
        path = data[at] if len(data) > at else None
        return 1 if path is None else str(path)
    return where_value(url, "/".join(Entry.from_json(data, url).path))


def where_path(url: str, value: Any) -> str:
    """The path a ``where_value`` stands for."""
    return "/".join(url_path(url)) if value == 1 else str(value)
