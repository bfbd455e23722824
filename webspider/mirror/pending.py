"""A page's ``mirror.pending`` record: what the end-of-crawl fix-up must
look at in its file (links left absolute, relative links kept as written
whose file was not there yet, where they are in the file), compactly.

Pure: no Scrapy.
"""

from __future__ import annotations

import base64
from array import array
from typing import TYPE_CHECKING, Any

from webspider.mirror.paths import url_path
from webspider.utils.sitecodes import site_of

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def put_spans(record: dict[str, Any], spans: tuple[int, array[int]]) -> None:
    """Keep (CRC-32, packed spans) in a pending record (``spans_of`` reads
    them): 32-bit numbers when they fit, the usual case, in half the bytes."""
    crc, packed = spans
    record["crc"] = crc
    if all(-(2**31) <= n < 2**31 for n in packed):
        record["s4"] = _b64(array("i", iter(packed)).tobytes())
    else:
        record["spans"] = _b64(packed.tobytes())


def spans_of(record: Mapping[str, Any]) -> tuple[int, array[int]] | None:
    """The (CRC-32, packed spans) a pending record keeps, if any."""
    packed: array[int] = array("q")
    encoded = record.get("s4")
    if encoded is not None:  # 32-bit numbers, the usual case: half the bytes
        small = array("i")
        small.frombytes(base64.b64decode(encoded))
        packed.fromlist(small.tolist())
    else:
        encoded = record.get("spans")
        if encoded is None:
            return None
        packed.frombytes(base64.b64decode(encoded))
    return int(record["crc"]), packed


#: the fields of a pending record that ``pack_pending`` writes (or older
#: versions wrote)
_LINK_FIELDS = frozenset(("p", "k", "kx", "pending", "kept"))


def split_kept(url: str, kept: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """The kept links of page ``url`` that are of its site and expect the
    file ``url_path`` gives (kept by target, ``awaited``), and the others."""
    prefix = site_of(url) + "/"
    plain: list[str] = []
    odd: dict[str, str] = {}
    for key, expected in kept.items():
        if (
            key.startswith(prefix)
            and "\n" not in key
            and "/".join(url_path(key)) == expected
        ):
            plain.append(key)
        else:
            odd[key] = expected
    return plain, odd


def pack_pending(
    url: str, pending: Iterable[str], kept: Mapping[str, str]
) -> dict[str, Any]:
    """A page's pending links compactly: ``p`` (URLs left absolute) and ``k``
    (URLs of relative links kept as written), one a line, those of the page's
    own site without their ``scheme://host`` (they start with ``/``); ``kx``
    the kept URLs whose expected file is not the one ``url_path`` gives
    (the others' is computed again). A page keeps a few dozen such links
    while the crawl runs, so their form is most of the state's size."""
    site = site_of(url)
    cut = len(site)

    def short(key: str) -> str:
        return key[cut:] if key.startswith(site + "/") else key

    record: dict[str, Any] = {}
    if pending:
        record["p"] = "\n".join(short(key) for key in pending)
    if kept:
        plain: list[str] = []
        odd: dict[str, str] = {}
        for key, expected in kept.items():
            if "\n" not in key and "/".join(url_path(key)) == expected:
                plain.append(short(key))
            else:
                odd[key] = expected
        if plain:
            record["k"] = "\n".join(plain)
        if odd:
            record["kx"] = odd
    return record


def add_kept(
    url: str, record: Mapping[str, Any] | None, targets: Iterable[str]
) -> dict[str, Any]:
    """Page ``url``'s pending record with ``targets`` added to its kept
    links, each expecting the file ``url_path`` gives (a link kept already
    keeps its file): what ``pack_pending`` of the unpacked record and the
    new links gives, without unpacking it. A page with tens of thousands of
    waiting links (a site map, a crawl stopped early) gets them a chunk at a
    time; unpacking and packing its whole record for each chunk was
    quadratic (3 minutes for 50,000 links, every one of them through
    ``url_path`` again each time)."""
    merged = dict(record or {})
    if "pending" in merged or "kept" in merged:  # the plain lists of old
        pending, kept = unpack_pending(url, merged)
        for target in targets:
            kept.setdefault(target, "/".join(url_path(target)))
        merged = {k: v for k, v in merged.items() if k not in _LINK_FIELDS}
        merged.update(pack_pending(url, pending, kept))
        return merged
    site = site_of(url) + "/"
    cut = len(site) - 1
    lines: list[str] = merged["k"].split("\n") if "k" in merged else []
    have = set(lines)
    odd: dict[str, str] = merged.get("kx") or {}
    for target in targets:
        if target in odd:
            continue
        if "\n" in target:
            odd = {**odd, target: "/".join(url_path(target))}
            continue
        short = target[cut:] if target.startswith(site) else target
        if short not in have:
            have.add(short)
            lines.append(short)
    if lines:
        merged["k"] = "\n".join(lines)
    if odd:
        merged["kx"] = odd
    return merged


def unpack_pending(
    url: str, record: Mapping[str, Any]
) -> tuple[list[str], dict[str, str]]:
    """(pending, kept) of a pending record (``pack_pending``; the plain
    lists and dict older records hold are read too)."""
    site = site_of(url)

    def full(key: str) -> str:
        return site + key if key.startswith("/") else key

    pending = [full(k) for k in record["p"].split("\n")] if "p" in record else []
    pending += record.get("pending") or ()
    kept: dict[str, str] = dict(record.get("kept") or {})
    if "k" in record:
        for short in record["k"].split("\n"):
            key = full(short)
            kept[key] = "/".join(url_path(key))
    kept.update(record.get("kx") or {})
    return pending, kept
