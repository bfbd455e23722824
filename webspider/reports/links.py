"""Which links are broken, and which pages link to them: a ledger in records.

The ledger behind ``broken-links.jsonl``. It is fed the links of every page
the spider follows (target, referring page, link text) and the outcome of
every request (good, broken, skipped), in any order, and answers with one
record per broken URL listing its referrers.

It lives in records (webspider.records), so the crawl state holds it: memory
stays flat however many links a site has, a resumed crawl continues it, and
it is committed with the acknowledgements of the pages it came from.
Namespaces (keys are canonical URLs):

- ``reports.links``: a target's state, ``1`` answered 2xx, ``2`` will never
  be requested (skipped), ``3`` broken, ``5`` broken but not reported (a
  redirect hop nobody links to, yet), ``0`` linked, outcome unknown, ``4``
  the same with aliases waiting for it (so that a 2xx of a URL nobody
  linked or redirected to costs no more queries).
- ``reports.referrers``: ``"<target>\\n<referring page>"`` → ``[text, tag]``
  of the page's first link to it. Kept while the outcome is unknown (a 2xx
  deletes them) and for broken targets; one per referring page, so a page
  read twice (fetched again after a kill) adds nothing.
- ``reports.broken``: broken targets → their outcome (written once).
- ``reports.referrer_counts``: broken targets → how many pages link to them
  (those past ``max_referrers`` are counted, not kept).
- ``reports.aliases``: ``"<target>\\n<alias>"`` → ``[URL, internal]``: a URL
  that redirected to a target whose outcome was still unknown.
- ``reports.broken_totals``: ``internal`` and ``external`` counts.

Records are streamed in key order: ``broken-links.jsonl`` lists broken URLs
sorted by canonical URL, each with its referrers sorted by URL.

Write-behind: the referrers of targets whose outcome is unknown are held in
memory until ``flush`` (which the crawl state's commit calls, through
webspider.signals.crawl_state_committing, and at most FLUSH_ROWS rows), so
the many targets that answer 2xx or are skipped soon after they are linked
(the next page, an external link the scope skips) cost no writes at all;
what is committed is the same as if they were written at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any

from webspider.records import records_or_memory

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from webspider.records import RecordStore

#: referrers kept per broken URL (all are counted in ``referrer_count``)
DEFAULT_MAX_REFERRERS = 1000

#: referrer rows held in memory before they are written (see flush)
FLUSH_ROWS = 5000

NS_LINKS = "reports.links"
NS_REFERRERS = "reports.referrers"
NS_BROKEN = "reports.broken"
NS_COUNTS = "reports.referrer_counts"
NS_ALIASES = "reports.aliases"
NS_TOTALS = "reports.broken_totals"
NAMESPACES = (NS_LINKS, NS_REFERRERS, NS_BROKEN, NS_COUNTS, NS_ALIASES, NS_TOTALS)

# states of a target in NS_LINKS
_PENDING = 0
_GOOD = 1
_SKIPPED = 2
_BROKEN = 3
_ALIASED = 4
#: broken, not reported until something links to it (a redirect hop)
_HOP = 5
#: broken, reported or not
_FAILED = (_BROKEN, _HOP)
#: outcome unknown, referrers (and with _ALIASED aliases) kept
_WAITING = (_PENDING, _ALIASED)

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


_OUTCOME_FIELDS = tuple(Outcome.__dataclass_fields__)


class LinkLedger:
    """Links seen and outcomes known, keyed on canonical URLs, in ``store``
    (in memory without one)."""

    def __init__(
        self,
        store: RecordStore | None = None,
        max_referrers: int = DEFAULT_MAX_REFERRERS,
    ) -> None:
        self.max_referrers = max_referrers
        #: target → referrer → [text, tag], not written yet (see flush)
        self._buffer: dict[str, dict[str, list[str]]] = {}
        self._buffered = 0
        self.open(records_or_memory(store))
        #: bumped whenever the broken records change (to know when to rewrite)
        self.version = 0

    def open(self, store: RecordStore) -> None:
        """Keep the ledger in ``store`` from now on (what it holds is read)."""
        self._links = store.records(NS_LINKS)
        self._referrers = store.records(NS_REFERRERS)
        self._broken = store.records(NS_BROKEN)
        self._counts = store.records(NS_COUNTS)
        self._aliases = store.records(NS_ALIASES)
        self._totals = store.records(NS_TOTALS)
        self.broken_internal = int(self._totals.get("internal") or 0)
        self.broken_external = int(self._totals.get("external") or 0)

    def clear(self) -> None:
        """Start empty (a new crawl on a state an earlier one finished)."""
        for records in (
            self._links,
            self._referrers,
            self._broken,
            self._counts,
            self._aliases,
            self._totals,
        ):
            records.clear()
        self.broken_internal = self.broken_external = 0
        self._buffer.clear()
        self._buffered = 0
        self.version += 1

    def flush(self) -> None:
        """Write the referrers held in memory (before the state commits)."""
        buffer = self._buffer
        if not buffer:
            return
        keys = list(buffer)
        states = self._links.get_many(keys)
        self._links.put_many(
            (key, _PENDING)
            for key, state in zip(keys, states, strict=True)
            if state is None
        )
        self._referrers.put_many(
            (f"{key}\n{referrer}", value)
            for key, rows in buffer.items()
            for referrer, value in rows.items()
        )
        buffer.clear()
        self._buffered = 0

    # -- what pages link to ---------------------------------------------------
    def add_page(self, referrer: str, links: Iterable[tuple[str, str, str]]) -> None:
        """Record the links of page ``referrer``: (target key, text, tag) each."""
        first: dict[str, list[str]] = {}
        for key, text, tag in links:
            if key not in first:
                first[key] = [text, tag]
        if not first:
            return
        keys = list(first)
        # one query for the page's targets; the unknown ones wait in memory
        states = self._links.get_many(keys)
        buffer = self._buffer
        for key, state in zip(keys, states, strict=True):
            if state is None or state in _WAITING:
                rows = buffer.get(key)
                if rows is None:
                    rows = buffer[key] = {}
                if referrer not in rows:
                    rows[referrer] = first[key]
                    self._buffered += 1
            elif state in _FAILED:
                self._link_broken(key, state, referrer, first[key])
        if self._buffered > FLUSH_ROWS:
            self.flush()

    def _link_broken(
        self, key: str, state: int, referrer: str, value: list[str]
    ) -> None:
        ref_key = f"{key}\n{referrer}"
        if self._referrers.get(ref_key) is not None:
            return  # this page was read before (fetched again after a kill)
        # Past the cap a referring page is counted, not kept; so it is not
        # idempotent there: a page read again after a kill may count twice.
        if self._counts.incr(key) <= self.max_referrers:
            self._referrers.put(ref_key, value)
        if state == _HOP:  # a redirect hop, now linked: reported
            self._links.put(key, _BROKEN)
            record = self._broken.get(key)
            self._count(bool(record and record["internal"]))
        self.version += 1

    # -- what requests found ----------------------------------------------------
    def good(self, key: str) -> None:
        """``key`` answered 2xx: its links are fine, forget their referrers."""
        state = self._links.get(key)
        if state == _GOOD or state in _FAILED:
            # broken: e.g. a redirect hop that also failed on another path
            return
        self._links.put(key, _GOOD)
        self._unbuffer(key)
        if state in _WAITING:
            self._forget_referrers(key)
        if state == _ALIASED:
            for alias_key, _, _ in self._pop_aliases(key):
                self.good(alias_key)

    def skipped(self, key: str) -> None:
        """``key`` will never be requested: its outcome will stay unknown."""
        state = self._links.get(key)
        if state == _SKIPPED or state in _FAILED:
            return
        self._links.put(key, _SKIPPED)
        self._unbuffer(key)
        if state in _WAITING:
            self._forget_referrers(key)

    def broken(self, key: str, outcome: Outcome) -> None:
        state = self._links.get(key)
        if state == _GOOD or state in _FAILED:
            return  # the first failure is the one reported
        rows = self._unbuffer(key)
        if rows:
            self._referrers.put_many(
                (f"{key}\n{referrer}", value) for referrer, value in rows.items()
            )
            if state is None:
                state = _PENDING
        stored = self._referrers.count(f"{key}\n") if state in _WAITING else 0
        reported = outcome.requested or stored > 0
        self._links.put(key, _BROKEN if reported else _HOP)
        self._broken.put(
            key,
            {
                "url": outcome.url,
                "status": outcome.status,
                "error": outcome.error,
                "detail": outcome.detail,
                "internal": outcome.internal,
                "redirected_to": outcome.redirected_to,
                "requested": outcome.requested,
            },
        )
        if stored:
            self._counts.put(key, stored)
        if reported:
            self._count(outcome.internal)
        self.version += 1
        if state == _ALIASED:
            for alias_key, alias_url, internal in self._pop_aliases(key):
                self.broken(alias_key, _redirected(alias_url, outcome, internal))

    def redirected(
        self, key: str, url: str, target_key: str, internal: bool | None = None
    ) -> None:
        """``key`` (requested as ``url``) redirected to ``target_key``, which
        was requested before: ``key`` shares whatever ``target_key`` gets
        (``internal``: whether ``key`` is, when it differs from the target)."""
        state = self._links.get(target_key)
        if state == _GOOD:
            self.good(key)
            return
        if state in _FAILED:
            record = self._broken.get(target_key)
            if record is not None:
                self.broken(key, _redirected(url, _outcome(record), internal))
                return
        self._aliases.put(f"{target_key}\n{key}", [url, internal])
        if state is None or state == _PENDING:
            self._links.put(target_key, _ALIASED)

    def _count(self, internal: bool) -> None:
        # Counts what records() reports (a hop nobody links to is not).
        if internal:
            self.broken_internal = self._totals.incr("internal")
        else:
            self.broken_external = self._totals.incr("external")

    def _unbuffer(self, key: str) -> dict[str, list[str]] | None:
        rows = self._buffer.pop(key, None)
        if rows:
            self._buffered -= len(rows)
        return rows

    def _forget_referrers(self, key: str) -> None:
        self._referrers.delete_prefix(f"{key}\n")

    def _pop_aliases(self, key: str) -> list[tuple[str, str, bool | None]]:
        prefix = f"{key}\n"
        found = list(self._aliases.items(prefix))
        if not found:
            return []
        self._aliases.delete([k for k, _ in found])
        return [(k[len(prefix) :], url, internal) for k, (url, internal) in found]

    # -- the report -----------------------------------------------------------------
    @property
    def broken_count(self) -> int:
        return self.broken_internal + self.broken_external

    def pending_count(self) -> int:
        """Referrers kept for targets not resolved yet (for tests and
        diagnostics; counts the namespace)."""
        self.flush()
        return sum(
            1
            for key, _ in self._referrers.items()
            if self._links.get(key.partition("\n")[0]) in _WAITING
        )

    def records(self, max_referrers: int | None = None) -> Iterator[dict[str, Any]]:
        """One record per broken URL, in canonical URL order, streamed, with
        at most ``max_referrers`` referrers (the ledger's cap by default)."""
        limit = self.max_referrers if max_referrers is None else max_referrers
        self.flush()
        rows = self._broken.items()
        while chunk := list(islice(rows, 256)):
            keys = [key for key, _ in chunk]
            states = self._links.get_many(keys)
            counts = self._counts.get_many(keys)
            for (key, stored), state, count in zip(chunk, states, counts, strict=True):
                if state != _BROKEN:
                    continue  # a redirect hop nobody links to
                yield self._record(key, stored, count or 0, limit)

    def _record(
        self, key: str, stored: dict[str, Any], count: int, limit: int
    ) -> dict[str, Any]:
        prefix = f"{key}\n"
        cut = len(prefix)
        referrers = [
            {"url": ref_key[cut:], "text": text, "tag": tag}
            for ref_key, (text, tag) in islice(self._referrers.items(prefix), limit)
        ]
        record: dict[str, Any] = {
            "url": stored["url"],
            "status": stored["status"],
            "error": stored["error"],
            "detail": stored["detail"],
            "internal": stored["internal"],
            "referrer_count": count,
            "referrers": referrers,
        }
        if stored.get("redirected_to"):
            record["redirected_to"] = stored["redirected_to"]
        return record


def _outcome(record: dict[str, Any]) -> Outcome:
    return Outcome(**{name: record[name] for name in _OUTCOME_FIELDS})


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
