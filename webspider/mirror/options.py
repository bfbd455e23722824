"""The mirror options: where it goes (``-a mirror=``) and how pages are
written, validated (docs/mirror.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from webspider import settings as defaults
from webspider.config import (
    ConfigError,
    Options,
    get_bool,
    get_int,
    get_output_dir,
    once,
)

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings
    from typing_extensions import Self


_OFF = frozenset({"0", "false", "no", "off", "none", ""})


def get_mirror_dir(settings: BaseSettings) -> Path | None:
    """The mirror root, or None when mirroring is off (``mirror=0``)."""
    return once(_mirror_dir, settings)


def _mirror_dir(settings: BaseSettings) -> Path | None:
    """The mirror root, or None when mirroring is off (``mirror=0``).

    The default (setting left empty) is ``<output>/mirror``. The mirror must
    not hold the crawl's own state: it may not be the output folder or a
    folder above it, nor be or hold JOBDIR."""
    raw = settings.get("WEBSPIDER_MIRROR")
    output = get_output_dir(settings)
    if raw is None or (isinstance(raw, str) and raw.strip() == ""):
        path = output / "mirror"
    elif raw is False or str(raw).strip().lower() in _OFF:
        return None
    elif raw is True or str(raw).strip().lower() in ("1", "true", "yes", "on"):
        path = output / "mirror"
    else:
        path = Path(str(raw)).expanduser()
    if path.exists() and not path.is_dir():
        raise ConfigError(f"mirror {str(path)!r} exists and is not a folder")
    mirror = path.resolve()
    if mirror == output.resolve() or mirror in output.resolve().parents:
        raise ConfigError(
            f"mirror {str(path)!r} must not be the output folder or hold it "
            f"(try -a mirror={output / 'mirror'})"
        )
    jobdir = settings.get("JOBDIR")
    if jobdir:
        job = Path(str(jobdir)).expanduser().resolve()
        if job == mirror or mirror in job.parents or job in mirror.parents:
            raise ConfigError(
                f"mirror {str(path)!r} and JOBDIR {str(jobdir)!r} must not overlap"
            )
    return path


@dataclass(frozen=True)
class MirrorOptions(Options):
    """How pages become files (webspider.mirror.store)."""

    #: None: no mirror (mirror=0)
    root: Path | None = None
    convert_links: bool = defaults.WEBSPIDER_MIRROR_CONVERT_LINKS
    keep_originals: bool = defaults.WEBSPIDER_MIRROR_KEEP_ORIGINALS
    #: conditional requests into an existing mirror
    update: bool = defaults.WEBSPIDER_MIRROR_UPDATE
    #: bodies larger than this (bytes) are written in a thread
    thread_size: int = defaults.WEBSPIDER_MIRROR_THREAD_SIZE
    #: with no mirror, stop downloading bodies nothing reads
    skip_bodies: bool = defaults.WEBSPIDER_SKIP_BODIES_ENABLED

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Self:
        return cls(
            root=get_mirror_dir(settings),
            convert_links=get_bool(settings, "WEBSPIDER_MIRROR_CONVERT_LINKS"),
            keep_originals=get_bool(settings, "WEBSPIDER_MIRROR_KEEP_ORIGINALS"),
            update=get_bool(settings, "WEBSPIDER_MIRROR_UPDATE"),
            thread_size=get_int(settings, "WEBSPIDER_MIRROR_THREAD_SIZE", minimum=0),
            skip_bodies=get_bool(settings, "WEBSPIDER_SKIP_BODIES_ENABLED"),
        )
