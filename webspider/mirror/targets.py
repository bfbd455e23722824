"""Where the URLs a page links to are stored (``TargetIndex``): the snapshot
of the mirror's state one conversion of a page's links reads, in the crawl's
process or in the page worker.

Pure: no Scrapy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from webspider.mirror.entry import split
from webspider.mirror.paths import url_path

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from webspider.mirror.entry import Segments


class Target:
    """Where a URL is stored (what conversion reads of an entry)."""

    __slots__ = ("path",)

    def __init__(self, path: Segments) -> None:
        self.path = path

    def __repr__(self) -> str:
        return f"Target({self.path!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Target) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)


@dataclass
class TargetIndex:
    """Where the URLs one page links to are stored, and their redirects: the
    snapshot of the mirror's state one conversion reads (in a thread, or in
    the page worker). A URL it does not know is taken as not mirrored yet,
    which the fix-up corrects.

    ``where`` holds the places as read (``where_value``, from the index
    records; ``1``: the path ``url_path`` gives), made Targets by ``get``
    when conversion asks: so the path of a URL is worked out where the
    page is converted (the page worker), and only for the links that need
    it."""

    entries: dict[str, Target] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    where: dict[str, str | int] = field(default_factory=dict)
    #: URLs of the links this run fetched and will not mirror (a 404):
    #: conversion writes their links as the fix-up would, absolute, so
    #: that the page need not be fixed up for them (MirrorState.mark_absent)
    absent: set[str] = field(default_factory=set)

    def get(self, url: str) -> Target | None:
        found = self._target(url)
        if found is None:
            target = self.aliases.get(url)
            if target is not None:
                found = self._target(target)
        return found

    def _target(self, url: str) -> Target | None:
        found = self.entries.get(url)
        if found is None:
            value = self.where.get(url)
            if value is not None:
                # url_path's segments as they are (not joined to be split
                # again): a link of every page the worker converts
                path = url_path(url) if value == 1 else split(str(value))
                found = self.entries[url] = Target(path)
        return found

    def subset(self, urls: Iterable[str]) -> TargetIndex:
        """What this index knows of ``urls`` (and of the URLs they redirect
        to): all a conversion of links to them reads."""
        entries, aliases, where = self.entries, self.aliases, self.where
        out = TargetIndex()
        for url in urls:
            for key in (url, aliases.get(url)):
                if key is None:
                    continue
                if key in entries:
                    out.entries[key] = entries[key]
                elif key in where:
                    out.where[key] = where[key]
            if url in aliases:
                out.aliases[url] = aliases[url]
            elif url in self.absent:
                out.absent.add(url)
        return out

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"aliases": self.aliases, "where": self.where}
        if self.entries:
            data["entries"] = {url: "/".join(t.path) for url, t in self.entries.items()}
        if self.absent:
            data["absent"] = sorted(self.absent)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TargetIndex:
        return cls(
            {
                url: Target(split(path))
                for url, path in (data.get("entries") or {}).items()
            },
            dict(data["aliases"]),
            dict(data.get("where") or {}),
            set(data.get("absent") or ()),
        )
