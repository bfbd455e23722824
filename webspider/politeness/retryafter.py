"""``Retry-After`` (RFC 9110 10.2.3): delay-seconds or an HTTP date."""

from __future__ import annotations

from email.utils import parsedate_to_datetime


def retry_after_seconds(value: str | bytes | None, now: float) -> float | None:
    """Seconds to wait from ``now`` (a Unix time) for a Retry-After value;
    None when absent or unreadable. A date in the past means 0."""
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    value = value.strip()
    if not value:
        return None
    if value.isdigit():
        return float(int(value))
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT
        return None
    return max(0.0, when.timestamp() - now)
