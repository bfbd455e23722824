"""The page scan as it was before its fast paths, to compare the scan with.

``ReferenceScanner`` jumps with one case-insensitive regex (tags, comments
and "style" alike), reads every tag with the plain attribute loop, and
decides whether a meta refresh is inside ``<noscript>`` by looking back over
the page from it: slow (quadratic on some pages), obviously right.
"""

from __future__ import annotations

import re

from webspider.page import scan as htmlscan
from webspider.page import tags
from webspider.page.links import LINK_RULES


class ReferenceScanner(htmlscan._Scanner):
    def run(self):
        body = self.body
        names = set(self.table.by_tag) | tags.RAW_TEXT | {b"base", b"meta"}
        jump = re.compile(
            rb"<!--|<(?:"
            + b"|".join(sorted(names, key=len, reverse=True))
            + rb")(?=[\s/>])|style",
            re.IGNORECASE,
        )
        size = len(body)
        pos = 0
        while pos < size:
            found = jump.search(body, pos)
            if found is None:
                break
            at = found.start()
            if body[at] != ord("<"):
                lt = body.rfind(b"<", pos, at)
                end = self.tag(lt) if lt >= 0 else at
                pos = max(end, found.end())
            elif body.startswith((b"<!-->", b"<!--->"), at):  # empty comments
                pos = at + (5 if body[at + 4] == ord(">") else 6)
            elif found.group(0) == b"<!--":
                close = body.find(b"-->", at + 4)
                pos = size if close < 0 else close + 3
            else:
                pos = self.tag(at)
        return self.result

    def in_noscript(self, pos):
        low = self.low
        return low.rfind(b"<noscript", 0, pos) > low.rfind(b"</noscript", 0, pos)


def reference_scan(body, rules=LINK_RULES):
    return ReferenceScanner(body, "utf-8", tags.rule_table(tuple(rules)), False).run()
