"""Where the mirror goes (``-a mirror=``), validated."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from webspider.config import ConfigError, get_output_dir

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


_OFF = frozenset({"0", "false", "no", "off", "none", ""})


def get_mirror_dir(settings: BaseSettings) -> Path | None:
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
