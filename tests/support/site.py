"""Link graphs served on the fly, and the crawl a breadth-first spider makes of them.

``Site`` maps paths to ``Node``s (links of kind "page" as ``<a href>``,
"requisite" as ``<img src>``, stylesheets and their ``url()``s);
``site.serve(server)`` adds the routes; ``site.predict(...)`` computes, for a
depth cap, the round and depth every page gets under webspider's semantics
(level-synchronous breadth-first rounds; over-depth page links deferred once
to the next round; requisites never deferred; deferred URLs fetched
meanwhile skipped)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.support.server import Page, TestServer, html

PAGE = "page"
REQUISITE = "requisite"


@dataclass
class Node:
    links: list[str] = field(default_factory=list)  # page links
    requisites: list[str] = field(default_factory=list)
    delay: float = 0.0
    content_type: str = "text/html"

    def body(self, path: str) -> str:
        if self.content_type == "text/css":
            return "".join(f"a{{background:url({u})}}\n" for u in self.requisites)
        if not self.content_type.startswith("text/html"):
            return "binary"
        head = "".join(
            f'<link rel="stylesheet" href="{u}">'
            for u in self.requisites
            if ".css" in u
        )
        imgs = "".join(f'<img src="{u}">' for u in self.requisites if ".css" not in u)
        anchors = "".join(f'<a href="{u}">{u}</a>' for u in self.links)
        return html(anchors + imgs, title=path, head=head)


@dataclass
class Prediction:
    #: path -> (round, depth)
    fetched: dict[str, tuple[int, int]]
    #: path -> (would-be depth, referer, round deferred in) left when max_rounds stopped
    left: dict[str, tuple[int, str, int]]
    #: distinct URLs deferred, over all rounds
    deferred: int
    #: deferred URLs skipped at their round's start (fetched meanwhile)
    seeds_fetched: int


class Site(dict[str, Node]):
    def serve(self, server: TestServer) -> None:
        for path, node in self.items():
            ctype = node.content_type
            if ctype.startswith("text/"):
                ctype += "; charset=utf-8"
            server.add(
                path, Page(node.body(path), content_type=ctype, delay=node.delay)
            )

    def predict(
        self,
        start: str = "/",
        max_depth: int | None = None,
        max_rounds: int | None = None,
        defer: bool = True,
    ) -> Prediction:
        fetched: dict[str, tuple[int, int]] = {}
        deferred: dict[str, tuple[int, str, int]] = {}
        total_deferred = seeds_fetched = 0
        seeds = [start]
        round_ = 0
        while True:
            queued = set(seeds)
            level, depth = list(seeds), 0
            while level:
                for path in level:
                    fetched[path] = (round_, depth)
                following: list[str] = []
                for path in level:
                    node = self[path]
                    kinds = [(u, PAGE) for u in node.links]
                    kinds += [(u, REQUISITE) for u in node.requisites]
                    for url, kind in kinds:
                        if url in queued or url in fetched:
                            continue
                        if (
                            max_depth is not None
                            and depth + 1 > max_depth
                            and kind == PAGE
                        ):
                            if defer and url not in deferred:
                                deferred[url] = (depth + 1, path, round_)
                                total_deferred += 1
                            continue
                        queued.add(url)
                        following.append(url)
                level, depth = following, depth + 1
            waiting = {u: v for u, v in deferred.items() if u not in fetched}
            seeds_fetched += len(deferred) - len(waiting)
            if not waiting or (max_rounds is not None and round_ + 1 > max_rounds):
                return Prediction(fetched, waiting, total_deferred, seeds_fetched)
            seeds = list(waiting)
            deferred = {}
            round_ += 1
