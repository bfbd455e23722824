"""Reading URL lists given on the command line: ``a,b,c`` or ``@file``.

A file holds one URL per line (blank lines and ``#`` comments ignored), or is
JSON lines with a ``url`` field on each line (webspider's own
``deferred.jsonl`` and ``pages.jsonl``), so a later crawl can start where an
earlier one stopped."""

from __future__ import annotations

import json
from pathlib import Path

#: A URL list file larger than this is refused: it is almost certainly the
#: wrong file, and reading it would only fill memory.
MAX_LIST_FILE_BYTES = 256 * 1024 * 1024


class URLListError(ValueError):
    """The list cannot be read; the message names the file and the reason."""


def split_list(value: str | list[str] | tuple[str, ...] | None) -> list[str]:
    """``"a, b,,c"`` → ``["a", "b", "c"]``; lists pass through stripped."""
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else list(value)
    return [item.strip() for item in items if item and item.strip()]


def read_list(value: str | list[str] | tuple[str, ...] | None) -> list[str]:
    """Expand a comma-separated value whose items may be ``@file`` references."""
    result: list[str] = []
    for item in split_list(value):
        if item.startswith("@"):
            result.extend(read_list_file(item[1:]))
        else:
            result.append(item)
    return result


def read_list_file(name: str) -> list[str]:
    path = Path(name).expanduser()
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise URLListError(f"URL list {name!r} is not a file")
        if size > MAX_LIST_FILE_BYTES:
            raise URLListError(
                f"URL list {name!r} is {size} bytes, more than the "
                f"{MAX_LIST_FILE_BYTES} accepted"
            )
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise URLListError(f"URL list file {name!r} does not exist") from None
    except UnicodeDecodeError:
        raise URLListError(f"URL list file {name!r} is not UTF-8 text") from None
    except OSError as exc:
        raise URLListError(
            f"cannot read URL list file {name!r}: {exc.strerror}"
        ) from None
    urls: list[str] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("{"):
            urls.append(_url_from_json_line(name, lineno, line))
        else:
            urls.append(line)
    if not urls:
        raise URLListError(f"URL list file {name!r} holds no URL")
    return urls


def _url_from_json_line(name: str, lineno: int, line: str) -> str:
    try:
        record = json.loads(line)
    except ValueError:
        raise URLListError(f"{name}:{lineno}: not a valid JSON line") from None
    url = record.get("url") if isinstance(record, dict) else None
    if not isinstance(url, str) or not url:
        raise URLListError(f"{name}:{lineno}: JSON line has no 'url' string")
    return url
