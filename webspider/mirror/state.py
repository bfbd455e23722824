"""What the mirror remembers between crawls, in one JSON lines file.

``<output>/mirror-state.jsonl`` (beside the mirror, never inside it, where a
URL could name a file the same): a header line, then one line per stored URL
(the last line for a URL wins; the file is compacted at the end of a crawl)
and one per redirect alias. Appending as the crawl goes means an interrupted
crawl still knows everything it wrote.

Pure: no Scrapy, plain JSON (nothing is unpickled from disk).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, TypeVar

from webspider.utils.atomic import write_atomic

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping
    from pathlib import Path

logger = logging.getLogger(__name__)

T = TypeVar("T")

VERSION = 1


@dataclass
class Entry:
    """One URL stored in the mirror."""

    url: str  # canonical URL
    path: tuple[str, ...]  # segments below the mirror root
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

    def to_json(self) -> dict[str, Any]:
        # A shallow copy: the values are strings, numbers and flat str lists and
        # dicts, which json.dumps only reads. dataclasses.asdict deep-copies
        # every pending/kept/restore entry, and on a link-heavy site that was
        # the crawl's top hot spot.
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["path"] = "/".join(self.path)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Entry:
        data = dict(data)
        data["path"] = tuple(str(data["path"]).split("/"))
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in known})


class MirrorState:
    def __init__(self, path: Path, root: str) -> None:
        self.path = path
        self.root = root
        self.entries: dict[str, Entry] = {}
        #: redirecting URL → the canonical URL it led to
        self.aliases: dict[str, str] = {}
        #: case-folded path → URL: who owns a file name
        self.owners: dict[str, str] = {}
        self._file: IO[str] | None = None
        self._fresh = False
        #: told where each URL is now (None: nowhere) and of each alias, as
        #: the state changes: the page worker keeps a copy for converting
        self.on_index: Callable[[str, tuple[str, ...] | None], None] | None = None
        self.on_alias: Callable[[str, str], None] | None = None
        #: the last crawl that wrote this state, and whether it finished
        self.run = 0
        self.finished = True
        self._load()

    def _load(self) -> None:
        try:
            lines = self.path.read_text("utf-8").splitlines()
        except FileNotFoundError:
            return
        for number, line in enumerate(lines):
            try:
                data = json.loads(line)
                if number == 0:
                    if data.get("mirror_root") != self.root:
                        logger.warning(
                            "%s describes another mirror (%s); starting afresh",
                            self.path,
                            data.get("mirror_root"),
                        )
                        self._fresh = True
                        return
                    continue
                if "run" in data and "url" not in data:
                    self.run, self.finished = int(data["run"]), bool(data["finished"])
                elif "alias" in data:
                    self.aliases[data["alias"]] = data["url"]
                else:
                    self._index(Entry.from_json(data))
            except (ValueError, KeyError, TypeError):
                # a line cut by a crash: everything before it still counts
                logger.warning("%s: skipping unreadable line %d", self.path, number + 1)

    def _index(self, entry: Entry) -> None:
        old = self.entries.get(entry.url)
        if old is not None and old.path != entry.path:
            key = path_key(old.path)
            if self.owners.get(key) == entry.url:
                del self.owners[key]
        self.entries[entry.url] = entry
        # the first URL stored under a name owns it (twins share a file)
        self.owners.setdefault(path_key(entry.path), entry.url)
        if self.on_index is not None:
            self.on_index(entry.url, entry.path)

    def _append(self, data: dict[str, Any]) -> None:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fresh = self._fresh or not self.path.exists()
            mode = "w" if fresh else "a"
            self._file = self.path.open(mode, encoding="utf-8", buffering=1)
            if fresh:
                self._file.write(json.dumps(self.header()) + "\n")
        self._file.write(json.dumps(data, ensure_ascii=False) + "\n")

    def header(self) -> dict[str, Any]:
        return {"mirror_root": self.root, "version": VERSION}

    def get(self, url: str) -> Entry | None:
        return find(self.entries, self.aliases, url)

    def owner(self, path: tuple[str, ...]) -> str | None:
        return self.owners.get(path_key(path))

    def reserve(self, entry: Entry) -> Entry | None:
        """Know ``entry`` (for links to it) before its file is written,
        without recording it; returns the entry it replaces."""
        old = self.entries.get(entry.url)
        self._index(entry)
        return old

    def release(self, entry: Entry, old: Entry | None) -> None:
        """Its file was not written after all: forget ``entry`` again."""
        key = path_key(entry.path)
        if self.owners.get(key) == entry.url:
            del self.owners[key]
        if old is not None:
            self._index(old)
        elif self.entries.pop(entry.url, None) is not None and self.on_index:
            self.on_index(entry.url, None)

    def put(self, entry: Entry) -> None:
        self._index(entry)
        self._append(entry.to_json())

    def alias(self, url: str, target: str) -> None:
        if url != target and self.aliases.get(url) != target:
            self.aliases[url] = target
            self._append({"alias": url, "url": target})
            if self.on_alias is not None:
                self.on_alias(url, target)

    def start_run(self, run: int) -> None:
        """Record that crawl ``run`` started (an interrupted one stays
        unfinished, so resuming it can go on with the same run)."""
        self.run, self.finished = run, False
        self._append({"run": run, "finished": False})

    def __iter__(self) -> Iterator[Entry]:
        return iter(list(self.entries.values()))

    def close(self, finished: bool = True) -> None:
        """Compact: one line per URL, written atomically."""
        self.finished = finished
        if self._file is not None:
            self._file.close()
            self._file = None
        if not self.entries and not self.aliases:
            return
        lines = [json.dumps(self.header()) + "\n"]
        lines += (
            json.dumps(entry.to_json(), ensure_ascii=False) + "\n"
            for entry in self.entries.values()
        )
        lines += (
            json.dumps({"alias": url, "url": target}) + "\n"
            for url, target in self.aliases.items()
        )
        lines.append(json.dumps({"run": self.run, "finished": self.finished}) + "\n")
        write_atomic(self.path, "".join(lines))


def find(entries: Mapping[str, T], aliases: Mapping[str, str], url: str) -> T | None:
    """The entry of ``url``, or of the URL it redirected to."""
    entry = entries.get(url)
    if entry is None:
        target = aliases.get(url)
        if target is not None:
            entry = entries.get(target)
    return entry


def path_key(path: tuple[str, ...]) -> str:
    """Names that differ only in case are one file on some file systems."""
    return "/".join(path).casefold()
