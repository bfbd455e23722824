"""Which links are broken, and which pages link to them.

The ledger behind ``broken-links.jsonl``. It is fed the links of every page
the spider follows (target, referring page, link text) and the outcome of
every request (good, broken, skipped), in any order, and answers with one
record per broken URL listing all its referrers.

Memory is what matters here: a link-heavy site has many times more link
instances than pages. So referrers are kept only for targets whose outcome is
unknown or broken; once a target answers 2xx (the common case) its list is
dropped and later links to it cost one dict lookup. A target keeps at most
``max_referrers`` referrers (all are counted). Referrer URLs are the page's
own ``response.url`` object, shared by all the links of that page, and link
texts are the strings the parser made.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

#: referrers kept per broken URL (all are counted in ``referrer_count``)
DEFAULT_MAX_REFERRERS = 1000

# States of a target that needs no referrers (kept as small ints, not objects).
_GOOD = 1
_SKIPPED = 2

#: (page URL, link text or alt, tag)
Referrer = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class Outcome:
    """Why a URL is broken."""

    #: the URL as requested
    url: str
    #: HTTP status, None when no response came
    status: int | None
    #: a code from webspider.reports.errors (None for a plain HTTP error)
    error: str | None = None
    #: the error message or the redirect target, for people
    detail: str | None = None
    #: within the crawl's scope (False for links checked with check_external)
    internal: bool = True
    #: the final URL when the URL redirected to a broken one
    redirected_to: str | None = None
    #: requested directly (start URL or followed link), not only a redirect hop
    requested: bool = True


class _Target:
    __slots__ = ("count", "outcome", "referrers")

    def __init__(self) -> None:
        self.referrers: list[Referrer] = []
        self.count = 0
        self.outcome: Outcome | None = None


class LinkLedger:
    """Links seen and outcomes known, keyed on canonical URLs."""

    def __init__(self, max_referrers: int = DEFAULT_MAX_REFERRERS) -> None:
        self.max_referrers = max_referrers
        self._state: dict[str, _Target | int] = {}
        #: target → (key, URL, internal) of URLs that redirected to it after
        #: it was requested, while its outcome was still unknown
        self._aliases: dict[str, list[tuple[str, str, bool | None]]] = {}
        self.broken_internal = 0
        self.broken_external = 0
        #: bumped whenever the broken records change (to know when to rewrite)
        self.version = 0

    # -- what pages link to ---------------------------------------------------
    def add_page(self, referrer: str, links: Iterable[tuple[str, str, str]]) -> None:
        """Record the links of page ``referrer``: (target key, text, tag) each."""
        state = self._state
        cap = self.max_referrers
        changed = False
        for key, text, tag in links:
            entry = state.get(key)
            if entry is None:
                entry = state[key] = _Target()
            elif entry.__class__ is int:
                continue  # known good or not checked: nothing to remember
            assert isinstance(entry, _Target)
            entry.count += 1
            if len(entry.referrers) < cap:
                entry.referrers.append((referrer, text, tag))
            outcome = entry.outcome
            if outcome is not None:
                changed = True
                if entry.count == 1 and not outcome.requested:
                    self._count(outcome)  # a redirect hop, now linked: reported
        if changed:
            self.version += 1

    # -- what requests found ----------------------------------------------------
    def good(self, key: str) -> None:
        """``key`` answered 2xx: its links are fine, forget their referrers."""
        if self._is_broken(key):
            return  # e.g. a redirect hop that also failed on another path
        self._state[key] = _GOOD
        for alias_key, _, _ in self._aliases.pop(key, ()):
            self.good(alias_key)

    def skipped(self, key: str) -> None:
        """``key`` will never be requested: its outcome will stay unknown."""
        if not self._is_broken(key):
            self._state[key] = _SKIPPED

    def broken(self, key: str, outcome: Outcome) -> None:
        state = self._state.get(key)
        if state == _GOOD:
            return
        if not isinstance(state, _Target):
            state = self._state[key] = _Target()
        if state.outcome is not None:
            return  # the first failure is the one reported
        state.outcome = outcome
        if outcome.requested or state.count:
            self._count(outcome)
        self.version += 1
        for alias_key, alias_url, internal in self._aliases.pop(key, ()):
            self.broken(alias_key, _redirected(alias_url, outcome, internal))

    def redirected(
        self, key: str, url: str, target_key: str, internal: bool | None = None
    ) -> None:
        """``key`` (requested as ``url``) redirected to ``target_key``, which
        was requested before: ``key`` shares whatever ``target_key`` gets
        (``internal``: whether ``key`` is, when it differs from the target)."""
        state = self._state.get(target_key)
        if state == _GOOD:
            self.good(key)
        elif isinstance(state, _Target) and state.outcome is not None:
            self.broken(key, _redirected(url, state.outcome, internal))
        else:
            self._aliases.setdefault(target_key, []).append((key, url, internal))

    def _count(self, outcome: Outcome) -> None:
        # Counts what records() reports (a hop nobody links to is not).
        if outcome.internal:
            self.broken_internal += 1
        else:
            self.broken_external += 1

    def _is_broken(self, key: str) -> bool:
        state = self._state.get(key)
        return isinstance(state, _Target) and state.outcome is not None

    # -- the report -----------------------------------------------------------------
    @property
    def broken_count(self) -> int:
        return self.broken_internal + self.broken_external

    def pending_count(self) -> int:
        """Targets linked but not resolved yet (for tests and diagnostics)."""
        return sum(
            1
            for s in self._state.values()
            if isinstance(s, _Target) and s.outcome is None
        )

    def records(self) -> Iterator[dict[str, Any]]:
        """One record per broken URL, in the order they were found broken
        (dict order is insertion order; a target's first link comes first)."""
        for entry in self._state.values():
            if not isinstance(entry, _Target) or entry.outcome is None:
                continue
            outcome = entry.outcome
            if not entry.count and not outcome.requested:
                continue  # a redirect hop nobody links to
            record: dict[str, Any] = {
                "url": outcome.url,
                "status": outcome.status,
                "error": outcome.error,
                "detail": outcome.detail,
                "internal": outcome.internal,
                "referrer_count": entry.count,
                "referrers": [
                    {"url": url, "text": text, "tag": tag}
                    for url, text, tag in entry.referrers
                ],
            }
            if outcome.redirected_to:
                record["redirected_to"] = outcome.redirected_to
            yield record

    # -- a paused crawl (JOBDIR) ----------------------------------------------------
    def dump(self) -> dict[str, Any]:
        """Everything the ledger knows, as JSON-able data (see ``load``)."""
        good, skipped, targets = [], [], []
        for key, state in self._state.items():
            if state == _GOOD:
                good.append(key)
            elif state == _SKIPPED:
                skipped.append(key)
            elif isinstance(state, _Target):
                outcome = asdict(state.outcome) if state.outcome is not None else None
                targets.append([key, state.count, state.referrers, outcome])
        return {
            "version": 1,
            "good": good,
            "skipped": skipped,
            "targets": targets,
            "aliases": self._aliases,
        }

    def load(self, data: dict[str, Any]) -> None:
        """Continue from what ``dump`` returned (a crawl resumed from JOBDIR)."""
        for key in data.get("good", ()):
            self._state[key] = _GOOD
        for key in data.get("skipped", ()):
            self._state[key] = _SKIPPED
        for key, count, referrers, outcome in data.get("targets", ()):
            entry = _Target()
            entry.count = count
            entry.referrers = [tuple(r) for r in referrers]
            self._state[key] = entry
            if outcome is not None:
                self.broken(key, Outcome(**outcome))
        for target, aliases in data.get("aliases", {}).items():
            for alias in aliases:
                key, url, *internal = alias
                self._aliases.setdefault(target, []).append(
                    (key, url, internal[0] if internal else None)
                )


def _redirected(url: str, outcome: Outcome, internal: bool | None = None) -> Outcome:
    return Outcome(
        url=url,
        status=outcome.status,
        error=outcome.error,
        detail=outcome.detail,
        internal=outcome.internal if internal is None else internal,
        redirected_to=outcome.redirected_to or outcome.url,
        requested=True,
    )
