"""How many requests of a slow origin one worker of a shared crawl holds.

A worker leases a batch of requests at a time. An origin with a delay
between starts (Crawl-delay, ``DOWNLOAD_DELAY``) starts one request per
delay for all workers together (webspider.politeness.shared), so the
requests one worker leased beyond the next start or two only wait in its
waiting room: the first worker to lease an origin's queue took all of it,
and the others idled while it waited out the delays alone. So a worker
holds at most ``PER_DELAYED_ORIGIN`` requests of such an origin (leased,
not acknowledged yet): one going, one waiting for its turn. Leases beyond
that are put back at once (the head of the origin's queue), and the origin
is skipped by the next leases until one is done. Origins without a delay
are not bounded here: their requests start as soon as there is a place.

Pure: no Scrapy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from webspider.utils.url import origin_of

if TYPE_CHECKING:
    from collections.abc import Iterable

    from webspider.frontier.state import Lease
    from webspider.utils.url import Origin

#: requests of an origin with a delay one worker holds at most
PER_DELAYED_ORIGIN = 2


class OriginHolds:
    """The requests of delayed origins this worker holds, by origin."""

    def __init__(self, download_delay: float) -> None:
        self.all_delayed = download_delay > 0
        #: origins whose robots.txt asks for a Crawl-delay
        self.delayed: set[Origin] = set()
        #: the state's origin name → requests of it held
        self.held: dict[str, int] = {}
        #: ticket → the state's origin name, of the requests counted
        self._tickets: dict[int, str] = {}

    @property
    def active(self) -> bool:
        return self.all_delayed or bool(self.delayed)

    def crawl_delay(self, origin: Origin, delay: float) -> None:
        if delay > 0:
            self.delayed.add(origin)
        else:
            self.delayed.discard(origin)

    def full(self) -> list[str]:
        """The origins not to lease from now."""
        return [o for o, n in self.held.items() if n >= PER_DELAYED_ORIGIN]

    def admit(self, leases: Iterable[Lease]) -> tuple[list[Lease], list[int]]:
        """The leases to keep, and the tickets to put back (beyond the
        bound of their origin)."""
        kept: list[Lease] = []
        back: list[int] = []
        for lease in leases:
            request = lease.request
            if not self.all_delayed and origin_of(request.url) not in self.delayed:
                kept.append(lease)
                continue
            name = request.origin
            count = self.held.get(name, 0)
            if count >= PER_DELAYED_ORIGIN:
                back.append(lease.ticket)
                continue
            self.held[name] = count + 1
            self._tickets[lease.ticket] = name
            kept.append(lease)
        return kept, back

    def done(self, tickets: Iterable[int]) -> None:
        """These leases were acknowledged or released."""
        if not self._tickets:
            return
        for ticket in tickets:
            name = self._tickets.pop(ticket, None)
            if name is None:
                continue
            left = self.held[name] - 1
            if left:
                self.held[name] = left
            else:
                del self.held[name]

    def clear(self) -> None:
        self.held.clear()
        self._tickets.clear()
