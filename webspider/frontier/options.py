"""The frontier options: depth cap, rounds, shuffle (docs/depth-and-rounds.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from scrapy.settings import SETTINGS_PRIORITIES

from webspider import settings as defaults
from webspider.config import ConfigError, Options, get_bool, get_float, get_int

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings
    from typing_extensions import Self


@dataclass(frozen=True)
class DepthOptions(Options):
    """Depth cap and rounds (see docs/depth-and-rounds.md)."""

    #: None: no cap
    max_depth: int | None = defaults.WEBSPIDER_DEPTH_MAX
    #: rounds after the first; None: unlimited
    max_rounds: int | None = defaults.WEBSPIDER_DEPTH_MAX_ROUNDS
    #: defer over-depth links to a later round (else drop them)
    defer: bool = defaults.WEBSPIDER_DEPTH_DEFER
    #: strict breadth-first levels (the scheduler's level barrier)
    strict: bool = defaults.WEBSPIDER_DEPTH_STRICT
    #: the depth middleware (off: no cap, no deferral, no depth stats)
    enabled: bool = defaults.WEBSPIDER_DEPTH_ENABLED
    #: shuffle each page's links before anyone sees them
    shuffle: bool = defaults.WEBSPIDER_SHUFFLE_ENABLED

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Self:
        if get_int(settings, "DEPTH_LIMIT", 0):
            raise ConfigError(
                "DEPTH_LIMIT is not used by webspider: use -a max_depth=N (over-depth "
                "links are deferred to a later round; -a defer=0 drops them)"
            )
        return cls(
            max_depth=_optional_int(settings, "WEBSPIDER_DEPTH_MAX"),
            max_rounds=_optional_int(settings, "WEBSPIDER_DEPTH_MAX_ROUNDS"),
            defer=get_bool(settings, "WEBSPIDER_DEPTH_DEFER"),
            strict=get_bool(settings, "WEBSPIDER_DEPTH_STRICT"),
            enabled=get_bool(settings, "WEBSPIDER_DEPTH_ENABLED"),
            shuffle=get_bool(settings, "WEBSPIDER_SHUFFLE_ENABLED"),
        )


def _optional_int(settings: BaseSettings, name: str) -> int | None:
    raw = settings.get(name)
    if raw is None or (isinstance(raw, str) and raw.strip().lower() in ("", "none")):
        return None
    return get_int(settings, name, minimum=0)


def get_depth_options(settings: BaseSettings) -> DepthOptions:
    return DepthOptions.of(settings)


#: URL schemes of WEBSPIDER_STATE (redis-py's)
STATE_SCHEMES = ("redis", "rediss", "unix")
_KEY_RE = re.compile(r"[A-Za-z0-9._-]{1,100}")


def mask_password(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``: the form every
    message and log line shows."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        host = parts.netloc.rsplit("@", 1)[1]
        return parts._replace(netloc=f"{parts.username or ''}:***@{host}").geturl()
    except ValueError:
        return "<a URL that cannot be read>"


@dataclass(frozen=True)
class StateOptions(Options):
    """Where the crawl state lives: embedded (SQLite), or shared on Redis."""

    #: redis://, rediss:// or unix:// URL; "" for the embedded state
    url: str = defaults.WEBSPIDER_STATE
    #: the crawl's name on Redis ("" derived: webspider.frontier.resume)
    key: str = defaults.WEBSPIDER_STATE_KEY
    lease_timeout: float = defaults.WEBSPIDER_STATE_LEASE_TIMEOUT
    #: seconds after which a commit is due
    commit_interval: float = defaults.WEBSPIDER_STATE_COMMIT_INTERVAL
    #: pages done after which a commit is due, whatever the time (0: none)
    commit_pages: int = defaults.WEBSPIDER_STATE_COMMIT_PAGES

    @property
    def shared(self) -> bool:
        return bool(self.url)

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Self:
        url = str(settings.get("WEBSPIDER_STATE") or "").strip()
        if url:
            _check_state_url(url)
        key = str(settings.get("WEBSPIDER_STATE_KEY") or "").strip()
        if key and not _KEY_RE.fullmatch(key):
            raise ConfigError(
                f"WEBSPIDER_STATE_KEY must be 1 to 100 letters, digits, '.', '_' "
                f"or '-', got {key!r}"
            )
        timeout = get_float(settings, "WEBSPIDER_STATE_LEASE_TIMEOUT")
        if timeout <= 0:
            raise ConfigError(
                f"WEBSPIDER_STATE_LEASE_TIMEOUT must be more than 0 seconds, "
                f"got {timeout:g}"
            )
        interval = get_float(settings, "WEBSPIDER_STATE_COMMIT_INTERVAL")
        if interval <= 0:
            raise ConfigError(
                f"WEBSPIDER_STATE_COMMIT_INTERVAL must be more than 0 seconds, "
                f"got {interval:g}"
            )
        return cls(
            url=url,
            key=key,
            lease_timeout=timeout,
            commit_interval=interval,
            commit_pages=get_int(settings, "WEBSPIDER_STATE_COMMIT_PAGES", minimum=0),
        )


def _check_state_url(url: str) -> None:
    shown = mask_password(url)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError on a bad port
    except ValueError as exc:
        raise ConfigError(f"WEBSPIDER_STATE {shown!r} is not a URL ({exc})") from None
    if parts.scheme not in STATE_SCHEMES:
        raise ConfigError(
            f"WEBSPIDER_STATE must be a redis://, rediss:// or unix:// URL "
            f"(empty: the embedded state), got {shown!r}"
        )
    if parts.scheme != "unix" and not parts.hostname:
        raise ConfigError(f"WEBSPIDER_STATE {shown!r} names no host")
    if parts.scheme == "unix" and not parts.path:
        raise ConfigError(f"WEBSPIDER_STATE {shown!r} names no socket path")
    db = parts.path.lstrip("/")
    if parts.scheme != "unix" and db and not db.isdigit():
        raise ConfigError(
            f"WEBSPIDER_STATE {shown!r}: the path must be a database number (/0)"
        )
    try:
        import redis  # noqa: F401, PLC0415 -- optional: only a shared state needs it
    except ImportError:
        raise ConfigError(
            "WEBSPIDER_STATE needs redis-py: pip install 'webspider[redis]'"
        ) from None


#: CONCURRENT_ITEMS of a worker on a shared (Redis) state, where webspider's
#: default (2) is in force. Such a worker sends the new links to Redis in one
#: round trip a reactor turn (webspider.frontier.scheduler), and Scrapy hands
#: a callback's output to its tasks through a queue of 2 x CONCURRENT_ITEMS:
#: at 2, a page of 41 links took up to 11 turns and as many round trips
#: (tests/test_e2e_redis.py: 41 round trips for 311 pages against 18 at 8).
SHARED_CONCURRENT_ITEMS = 8


def set_shared_concurrent_items(settings: BaseSettings) -> None:
    """CONCURRENT_ITEMS = SHARED_CONCURRENT_ITEMS for a crawl on a shared
    state, unless CONCURRENT_ITEMS was given (on the command line, by the
    spider, or another value in a project's settings). Called before the
    settings are frozen (the spider's ``from_crawler``)."""
    if not str(settings.get("WEBSPIDER_STATE") or "").strip():
        return
    given = settings.getpriority("CONCURRENT_ITEMS") or 0
    if given > SETTINGS_PRIORITIES["project"]:
        return
    if settings.getint("CONCURRENT_ITEMS") != defaults.CONCURRENT_ITEMS:
        return
    settings.set("CONCURRENT_ITEMS", SHARED_CONCURRENT_ITEMS, priority="project")
