"""Which links are broken, and which pages link to them: a ledger in records.

The ledger behind ``broken-links.jsonl``. It is fed the links of every page
the spider follows (target, referring page, link text) and the outcome of
every request (good, broken, skipped), in any order, and answers with one
record per broken URL listing its referrers.

It lives in records (webspider.records), so the crawl state holds it: memory
stays flat however many links a site has, a resumed crawl continues it, and
it is committed with the acknowledgements of the pages it came from.

Every link is recorded before its outcome is known, so what waits for an
outcome is most of the ledger while a crawl runs (breadth-first, most links
point at pages still queued): it is keyed on *URL ids*, 12 characters (72
bits of BLAKE2b of the URL, base64; ``url_ids``), not on URL strings, and a
referring page's URL is written once, not once per link. Namespaces:

- ``reports.link_states``: id of a target's canonical URL → its state, ``1``
  answered 2xx, ``2`` will never be requested (skipped), ``3`` broken, ``5``
  broken but not reported (a redirect hop nobody links to, yet), ``0``
  linked, outcome unknown, ``4`` the same with aliases waiting for it (so
  that a 2xx of a URL nobody linked or redirected to costs no more queries).
- ``links.waiting`` (webspider.utils.waitinglinks), bit ``REPORTS``:
  ``"<target code>\\n<page code>"`` → the page's first link to it: its
  text (tag ``a``) or ``"\\0<tag>\\0<text>"``, behind the row's flags. The
  row is shared with the mirror's waiting link (bit ``MIRROR``): written
  once for both, each clears its bit (the row goes with the last). Kept
  while the outcome is unknown (a 2xx or a skip deletes them) and for
  broken targets; one per referring page, so a page read twice (fetched
  again after a kill) adds nothing. The codes are the crawl's shared URL
  codes (webspider.utils.urlcodes.UrlCodes, ``urls.codes``: a prefix of
  the URL's id, 4 characters for nearly every URL below a few million,
  mapped to the URL once for every feature): 9 characters a key where the
  target's 12-character id and the page's code took 16, on the ~8 rows a
  URL that wait while a crawl runs (the embedded state packs them further,
  by target: webspider.frontier.sqlitewaiting.SQLiteWaiting).
- ``reports.broken``: broken targets (canonical URL) → their outcome
  (written once).
- ``reports.referrer_counts``: broken targets (canonical URL) → how many
  pages link to them (those past ``max_referrers`` are counted, not kept).
- ``reports.redirect_aliases``: ``"<target id>\\n<alias id>"`` → ``[URL,
  internal, canonical URL]``: a URL that redirected to a target whose
  outcome was still unknown.
- ``reports.broken_totals``: ``internal`` and ``external`` counts.

Two URLs share an id with a probability of about n²/2⁷³ (1 in 10⁸ for ten
million URLs); they would then share an outcome and referrers in this report,
and nothing else (the crawl's seen-set is exact).

Records are streamed in canonical URL order (``reports.broken`` is keyed on
the URL): ``broken-links.jsonl`` lists broken URLs sorted by canonical URL,
each with its referrers sorted by URL. Past the cap, which referrers are kept
depends on the order pages were read (as before); while the outcome is
unknown all are kept, and the ``max_referrers`` listed are those of the
smallest page codes (nearly always the order of their ids).

Write-behind: a page's links are held in memory until ``flush`` (which the
crawl state's commit calls, through webspider.signals.crawl_state_committing,
and after FLUSH_LINKS links), and are then looked up in one query for every
page of the batch (a target linked from many of them once): the links whose
target answered 2xx or was skipped by then (the next page, an external link
the scope skips) cost no writes at all, and what is committed is the same as
if each page had been recorded at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any

from webspider.records import flag_text, flags_of, records_or_memory
from webspider.utils.recent import Recent
from webspider.utils.urlcodes import UrlCodes, url_id, url_ids
from webspider.utils.waitinglinks import NS_WAITING, REPORTS

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

    from webspider.records import Records, RecordStore

#: referrers kept per broken URL (all are counted in ``referrer_count``)
DEFAULT_MAX_REFERRERS = 1000

#: links held in memory before they are looked up and written (see flush)
FLUSH_LINKS = 5000
#: targets whose state a generation of the ledger's memory holds (two
#: generations; ~125 bytes each: the URL, the dict's slot). A site whose
#: pages link anywhere in it asks for its every URL again and again: 4,096
#: missed most of a 10,000-page site's, and the misses were most of
#: ``flush`` (bench/README.md, "What grows with the site")
STATES_KEPT = 16384

NS_LINKS = "reports.link_states"
#: the referrers' namespace (shared with the mirror: webspider.utils.waitinglinks)
NS_REFERRERS = NS_WAITING
NS_BROKEN = "reports.broken"
NS_COUNTS = "reports.referrer_counts"
NS_ALIASES = "reports.redirect_aliases"
NS_TOTALS = "reports.broken_totals"
NAMESPACES = (
    NS_LINKS,
    NS_REFERRERS,
    NS_BROKEN,
    NS_COUNTS,
    NS_ALIASES,
    NS_TOTALS,
)

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
#: outcome unknown, referrers (and with _ALIASED aliases) written
_STORED = (_PENDING, _ALIASED)
#: outcome unknown: a link's referrer is kept
_WAITING = (None, _PENDING, _ALIASED)


#: (page URL, link text or alt, tag)
Referrer = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class _Said:
    """A link as ``add_page`` is told it: what ``add_parsed`` reads of one."""

    text: str
    tag: str


def _text_tag(value: str) -> tuple[str, str]:
    if value.startswith("\0"):
        _, tag, text = value.split("\0", 2)
        return text, tag
    return value, "a"


def _mine(value: Any) -> bool:
    """Whether a ``links.waiting`` row holds the reports' part."""
    return bool(flags_of(value) & REPORTS)


class _States:
    """``reports.link_states`` by canonical URL (the record's key is its id,
    ``url_ids``), remembering the states read or written lately: ``flush``
    asks for every link of the pages of a commit, most of them the links
    every page repeats, and a remembered one costs a dict lookup where it
    cost its id (a BLAKE2b) and a read of the records: half of ``flush``
    in a profile, which takes 0.4 s of CPU instead of 0.65 a 4,000-page
    crawl remembered (bench/README.md, "The store's work a page, second
    pass"). Two generations of ``STATES_KEPT`` URLs (webspider.utils.recent).
    Every write of the namespace goes through here (the ledger's), and on
    an embedded state the crawl process is its only writer, so what is
    remembered is what is stored; a shared (Redis) state's other workers
    write it too: ``remember=False``, every state read."""

    __slots__ = ("recent", "records")

    def __init__(self, records: Records, remember: bool) -> None:
        self.records = records
        self.recent: Recent[str, Any] | None = Recent(STATES_KEPT) if remember else None

    def get(self, key: str) -> Any | None:
        return self.get_many([key])[0]

    def get_many(self, keys: Sequence[str]) -> list[Any | None]:
        recent = self.recent
        if recent is None:
            return self.records.get_many(url_ids(keys))
        out, at, asked = recent.lookup(keys)
        if asked:
            recent.fill(out, at, asked, self.records.get_many(url_ids(asked)))
        return out

    def get_map(self, keys: Iterable[str]) -> dict[str, Any | None]:
        """The state of each distinct key of ``keys`` (which may repeat), in
        the order they first come: ``get_many`` without a list of them made
        distinct first, nor one of their states."""
        recent = self.recent
        if recent is None:
            distinct = list(dict.fromkeys(keys))
            return dict(
                zip(distinct, self.records.get_many(url_ids(distinct)), strict=True)
            )
        out, asked = recent.lookup_map(keys)
        if asked:
            recent.fill_map(out, asked, self.records.get_many(url_ids(asked)))
        return out

    def put(self, key: str, state: int) -> None:
        self.put_many([(key, state)])

    def put_many(self, items: Sequence[tuple[str, Any]]) -> None:
        keys = [key for key, _ in items]
        self.records.put_many(
            list(zip(url_ids(keys), [state for _, state in items], strict=True))
        )
        if self.recent is not None:
            self.recent.keep(items)

    def clear(self) -> None:
        if self.recent is not None:
            self.recent.clear()
        self.records.clear()


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
        #: (referring page, {target key: row text}) not looked up yet
        self._held: list[tuple[str, dict[str, str]]] = []
        self._held_links = 0
        #: (target key, _GOOD or _SKIPPED) not applied yet (see _settle)
        self._outcomes: list[tuple[str, int]] = []
        self.open(records_or_memory(store))
        #: bumped whenever the broken records change (to know when to rewrite)
        self.version = 0

    def open(self, store: RecordStore) -> None:
        """Keep the ledger in ``store`` from now on (what it holds is read)."""
        self._links = _States(
            store.records(NS_LINKS), not getattr(store, "shared", False)
        )
        self._referrers = store.records(NS_REFERRERS)
        self._broken = store.records(NS_BROKEN)
        self._counts = store.records(NS_COUNTS)
        self._aliases = store.records(NS_ALIASES)
        self._totals = store.records(NS_TOTALS)
        self._codes = UrlCodes.of(store)
        self.broken_internal = int(self._totals.get("internal") or 0)
        self.broken_external = int(self._totals.get("external") or 0)

    def clear(self) -> None:
        """Start empty (a new crawl on a state an earlier one finished)."""
        for records in (
            self._links,
            self._broken,
            self._counts,
            self._aliases,
            self._totals,
        ):
            records.clear()
        self._referrers.unflag_prefix("", REPORTS)  # the mirror's part stays
        self.broken_internal = self.broken_external = 0
        self._held = []
        self._held_links = 0
        self._outcomes = []
        self.version += 1

    # -- what pages link to ---------------------------------------------------
    def add_page(self, referrer: str, links: Iterable[tuple[str, str, str]]) -> None:
        """Record the links of page ``referrer``: (target key, text, tag) each.
        Held in memory until ``flush``."""
        said = list(links)
        self.add_parsed(
            referrer,
            [key for key, _, _ in said],
            [_Said(text, tag) for _, text, tag in said],
        )

    def add_parsed(
        self, referrer: str, keys: Sequence[str], links: Sequence[Any]
    ) -> None:
        """``add_page`` of a parsed page's links (objects with ``text`` and
        ``tag``, webspider.page.links.Link) and their keys, in one pass: no
        tuple a link (the crawl's spider hands every page's links here).
        A referrer row's text is the link's text alone for the usual ``<a>``,
        else NUL, the tag, NUL, the text (a parsed text never holds NUL: HTML
        parsers replace it; ``_text_tag`` reads it back)."""
        first: dict[str, str] = {}
        for key, link in zip(keys, links, strict=True):
            if key not in first:
                tag = link.tag
                first[key] = link.text if tag == "a" else f"\0{tag}\0{link.text}"
        self._hold(referrer, first)

    def _hold(self, referrer: str, first: dict[str, str]) -> None:
        if not first:
            return
        self._held.append((referrer, first))
        self._held_links += len(first)
        if self._held_links > FLUSH_LINKS:
            self.flush()

    def flush(self) -> None:
        """Look up the held links' targets and write the referrers of those
        whose outcome is unknown (before the state commits)."""
        self._settle()
        held = self._held
        if not held:
            return
        self._held = []
        self._held_links = 0
        state_of = self._links.get_map([key for _, first in held for key in first])
        #: (page, [(target, value)]) of links whose outcome is unknown
        waiting: list[tuple[str, list[tuple[str, Any]]]] = []
        late: list[tuple[str, str, Any]] = []
        for referrer, first in held:
            mine: list[tuple[str, Any]] = []
            for key, value in first.items():
                state = state_of[key]
                if state in _WAITING:
                    mine.append((key, value))
                elif state in _FAILED:
                    late.append((key, referrer, value))
            if mine:
                waiting.append((referrer, mine))
        new = [(key, _PENDING) for key, state in state_of.items() if state is None]
        if new:
            self._links.put_many(new)
        if not waiting and not late:
            return
        # the pages' and the targets' codes (the crawl's shared ones)
        urls = dict.fromkeys([page for page, _ in waiting])
        urls.update(dict.fromkeys([t for _, mine in waiting for t, _ in mine]))
        urls.update(dict.fromkeys([page for _, page, _ in late]))
        urls.update(dict.fromkeys([key for key, _, _ in late]))
        code_of = self._codes.give(list(urls))
        if waiting:
            self._referrers.flag_many(
                [
                    (code_of[target] + "\n" + code_of[page], REPORTS, value)
                    for page, mine in waiting
                    for target, value in mine
                ]
            )
        if late:
            # links to targets already broken (a few a crawl)
            self._link_broken(
                [
                    (key, code_of[key] + "\n" + code_of[page], value)
                    for key, page, value in late
                ],
                state_of,
            )

    def _link_broken(
        self,
        late: list[tuple[str, str, Any]],
        state_of: dict[str, Any],
    ) -> None:
        """Add referrers to broken targets: ``(key, referrer's key, value)``
        each; a target's count grows once for all."""
        ref_keys = [ref_key for _, ref_key, _ in late]
        found = self._referrers.get_many(ref_keys)
        new: dict[str, list[tuple[str, Any]]] = {}
        seen: set[str] = set()
        for (key, ref_key, value), old in zip(late, found, strict=True):
            if _mine(old) or ref_key in seen:
                continue  # this page was read before (fetched again after a kill)
            seen.add(ref_key)
            new.setdefault(key, []).append((ref_key, value))
        rows: list[tuple[str, int, str]] = []
        for key, referrers in new.items():
            # Past the cap a referring page is counted, not kept; so it is
            # not idempotent there: a page read again after a kill may count
            # twice.
            total = self._counts.incr(key, len(referrers))
            room = max(0, self.max_referrers - (total - len(referrers)))
            rows += ((ref_key, REPORTS, value) for ref_key, value in referrers[:room])
            if state_of[key] == _HOP:  # a redirect hop, now linked: reported
                self._links.put(key, _BROKEN)
                state_of[key] = _BROKEN
                record = self._broken.get(key)
                self._count(bool(record and record["internal"]))
            self.version += 1
        if rows:
            self._referrers.flag_many(rows)

    # -- what requests found ----------------------------------------------------
    def good(self, key: str) -> None:
        """``key`` answered 2xx: its links are fine, forget their referrers."""
        self._outcomes.append((key, _GOOD))
        if len(self._outcomes) > FLUSH_LINKS:
            self._settle()

    def skipped(self, key: str) -> None:
        """``key`` will never be requested: its outcome will stay unknown."""
        self._outcomes.append((key, _SKIPPED))
        if len(self._outcomes) > FLUSH_LINKS:
            self._settle()

    def _settle(self) -> None:
        """Apply the held good and skipped outcomes, in order, as if each had
        been applied when it came: one lookup and one write for all."""
        while held := self._outcomes:
            self._outcomes = []
            keys = list(dict.fromkeys([key for key, _ in held]))
            before = dict(zip(keys, self._links.get_many(keys), strict=True))
            now = dict(before)
            aliased: list[str] = []
            for key, outcome in held:
                state = now[key]
                if state == outcome or state in _FAILED:
                    # broken: e.g. a redirect hop that also failed elsewhere
                    continue
                now[key] = outcome
                if state == _ALIASED and outcome == _GOOD:
                    aliased.append(key)
            self._links.put_many(
                [(key, state) for key, state in now.items() if state != before[key]]
            )
            forget = [
                key
                for key, state in before.items()
                if state in _STORED and now[key] != state
            ]
            if forget:
                code_of = self._codes.find(forget)
                self._referrers.unflag_prefixes(
                    [code_of[key] + "\n" for key in forget if key in code_of],
                    REPORTS,
                )
            for key in aliased:
                for alias_key, _, _ in self._pop_aliases(url_id(key)):
                    self._outcomes.append((alias_key, _GOOD))  # the next turn

    def broken(self, key: str, outcome: Outcome) -> None:
        self._settle()
        target_id = url_id(key)
        state = self._links.get(key)
        if state == _GOOD or state in _FAILED:
            return  # the first failure is the one reported
        # referrers still held in memory are added by the next flush
        stored = (
            sum(1 for _, v in self._referrers.items(self._head(key)) if _mine(v))
            if state in _STORED
            else 0
        )
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
            for alias_key, alias_url, internal in self._pop_aliases(target_id):
                self.broken(alias_key, _redirected(alias_url, outcome, internal))

    def redirected(
        self, key: str, url: str, target_key: str, internal: bool | None = None
    ) -> None:
        """``key`` (requested as ``url``) redirected to ``target_key``, which
        was requested before: ``key`` shares whatever ``target_key`` gets
        (``internal``: whether ``key`` is, when it differs from the target)."""
        self._settle()
        target_id = url_id(target_key)
        state = self._links.get(target_key)
        if state == _GOOD:
            self.good(key)
            return
        if state in _FAILED:
            record = self._broken.get(target_key)
            if record is not None:
                self.broken(key, _redirected(url, _outcome(record), internal))
                return
        self._aliases.put(f"{target_id}\n{url_id(key)}", [url, internal, key])
        if state is None or state == _PENDING:
            self._links.put(target_key, _ALIASED)

    def _head(self, key: str) -> str:
        """What the keys of ``key``'s referrers start with (a code no URL
        has when ``key`` has none: it has no referrers)."""
        code = self._codes.find([key]).get(key)
        return "\n" if code is None else code + "\n"

    def _count(self, internal: bool) -> None:
        # Counts what records() reports (a hop nobody links to is not).
        if internal:
            self.broken_internal = self._totals.incr("internal")
        else:
            self.broken_external = self._totals.incr("external")

    def _pop_aliases(self, target_id: str) -> list[tuple[str, str, bool | None]]:
        found = list(self._aliases.items(f"{target_id}\n"))
        if not found:
            return []
        self._aliases.delete([k for k, _ in found])
        return [(key, url, internal) for _, (url, internal, key) in found]

    # -- the report -----------------------------------------------------------------
    @property
    def broken_count(self) -> int:
        return self.broken_internal + self.broken_external

    def pending_count(self) -> int:
        """Referrers kept for targets not resolved yet (for tests and
        diagnostics; counts the namespace)."""
        self.flush()
        targets = [
            key.partition("\n")[0]
            for key, value in self._referrers.items()
            if _mine(value)
        ]
        urls = self._codes.urls(targets)
        return sum(
            1 for url in urls if url is not None and self._links.get(url) in _WAITING
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
        mine = (row for row in self._referrers.items(self._head(key)) if _mine(row[1]))
        rows = list(islice(mine, limit))
        urls = self._codes.urls([ref_key.partition("\n")[2] for ref_key, _ in rows])
        referrers = []
        for (_, value), url in sorted(
            zip(rows, urls, strict=True), key=lambda row: row[1] or ""
        ):
            if url is None:
                continue  # not in a state this version wrote
            text, tag = _text_tag(flag_text(value))
            referrers.append({"url": url, "text": text, "tag": tag})
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
