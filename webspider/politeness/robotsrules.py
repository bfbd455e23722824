"""The groups and rules of one robots.txt, read and matched as RFC 9309 says.

webspider's own parser, in place of protego's (Scrapy's default): protego
ends a group at any line that is not a User-agent line, so a ``Crawl-delay``
or an unknown line between two User-agent lines left the first agent with
an empty group (RFC 9309 2.2.4: other records must not end a group); it
matched group names at the start of any word of the user agent; and its
percent-decoding did not make the RFC's own equivalences hold. Each rule
below is checked by tests/test_politeness_robotsrules.py, a table of RFC
9309's examples and the cases of Google's robots.txt parser tests that the
RFC backs.

Reading (RFC 9309 2.1, 2.2):

- a line is ``key: value``; ``#`` starts a comment; keys are
  case-insensitive, and a few misspellings of User-agent and Disallow and a
  missing colon (``disallow /x``) are read as meant (as Google's parser
  does: reading them so only ever obeys a site more);
- a group is one or more User-agent lines and the rules after them; only a
  User-agent line *after a rule* starts a new group: blank lines,
  ``Crawl-delay``, ``Sitemap`` and unknown lines do not end one; rules
  before the first User-agent line belong to no group and are ignored;
- a User-agent value is ``*`` or a product token (letters, ``-`` and
  ``_``; whatever follows, such as ``/2.1``, is ignored);
- ``Crawl-delay`` belongs to its group; ``Sitemap`` lines to the file.

Matching (2.2.1-2.2.3):

- the groups whose User-agent is the crawler's product token (compared
  case-insensitively) are merged into one; if there are none, the ``*``
  groups; if there are none either, nothing is restricted;
- a rule matches when its pattern matches the start of the URL's path and
  query. Both sides are compared as octets after undoing their
  percent-encoding, so a character and its percent-encoded form are the
  same (``/foo/bar?baz=https://foo.bar`` is ``?baz=https%3A%2F%2Ffoo.bar``,
  ``/%62%61%7A`` is ``/baz``, ``ツ`` is ``%E3%83%84``); in a pattern ``*``
  is any octets and a final ``$`` the end of the URL, while ``%2A`` and
  ``%24`` stand for the characters ``*`` and ``$`` themselves;
- the matching rule with the most octets wins, Allow on a tie; no match:
  allowed; ``/robots.txt`` is always allowed.

Pure: nothing here knows Scrapy. Matching a wildcard pattern is a left-to-
right search per ``*``, never backtracking, so a hostile robots.txt cannot
make one URL cost more than (URL length x pattern length).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from urllib.parse import unquote_to_bytes, urlsplit

from webspider.config import product_token

USER_AGENT = "user-agent"
ALLOW = "allow"
DISALLOW = "disallow"
CRAWL_DELAY = "crawl-delay"
SITEMAP = "sitemap"

#: keys as written → the key they mean
_KEYS = {
    "user-agent": USER_AGENT,
    "useragent": USER_AGENT,
    "user agent": USER_AGENT,
    "allow": ALLOW,
    "disallow": DISALLOW,
    "dissallow": DISALLOW,
    "dissalow": DISALLOW,
    "disalow": DISALLOW,
    "diasllow": DISALLOW,
    "disallaw": DISALLOW,
    "crawl-delay": CRAWL_DELAY,
    "crawldelay": CRAWL_DELAY,
    "sitemap": SITEMAP,
    "site-map": SITEMAP,
}
# "disallow /x": the colon left out
_NO_COLON_RE = re.compile(r"(user-agent|useragent|allow|disallow)\s+(\S.*)", re.I)
_AGENT_RE = re.compile(r"[A-Za-z_-]*")

ROBOTS_PATH = b"/robots.txt"


@dataclass(frozen=True)
class Rule:
    """One Allow or Disallow line."""

    allow: bool
    #: the pattern cut at each ``*``, each part percent-decoded to octets
    parts: tuple[bytes, ...]
    #: the pattern ends with ``$``: it must match the whole path
    anchored: bool
    #: octets of the pattern (``*`` and ``$`` count one each): the longest
    #: matching rule wins
    length: int

    @classmethod
    def parse(cls, allow: bool, pattern: str) -> Rule:
        anchored = pattern.endswith("$")
        if anchored:
            pattern = pattern[:-1]
        parts = tuple(unquote_to_bytes(part) for part in pattern.split("*"))
        length = sum(map(len, parts)) + len(parts) - 1 + anchored
        return cls(allow, parts, anchored, length)

    def matches(self, path: bytes) -> bool:
        """Whether the rule matches ``path`` (path and query, as octets)."""
        parts = self.parts
        if not path.startswith(parts[0]):
            return False
        pos = len(parts[0])
        last = len(parts) - 1
        if last == 0:
            return not self.anchored or pos == len(path)
        for index in range(1, last + 1):
            part = parts[index]
            if index == last and self.anchored:
                # the last part ends the path; the earliest places for the
                # parts before it leave it the most room
                return len(path) - len(part) >= pos and path.endswith(part)
            found = path.find(part, pos)
            if found < 0:
                return False
            pos = found + len(part)
        return True


@dataclass
class Group:
    """User-agent lines and the rules after them."""

    #: lower-cased product tokens, ``*`` for the global group ("" for a
    #: User-agent value that is not a token: it matches nobody)
    agents: list[str] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    #: product token → Crawl-delay, seconds
    delays: dict[str, float] = field(default_factory=dict)
    #: agents[since_delay:] were named after the last Crawl-delay line
    since_delay: int = 0
    #: an Allow or Disallow line was read: the next User-agent starts a group
    closed: bool = False

    def add_delay(self, seconds: float) -> None:
        """A Crawl-delay line: it applies to the agents named since the
        group's last one (``User-agent: a / Crawl-delay: 2 / User-agent: b /
        Crawl-delay: 9`` gives a 2 s and b 9 s), or to all of them."""
        agents = self.agents[self.since_delay :] or self.agents
        for agent in agents:
            self.delays[agent] = max(seconds, self.delays.get(agent, 0.0))
        self.since_delay = len(self.agents)


def agent_of(value: str) -> str:
    """The product token a User-agent line names (``*`` for all)."""
    if value.startswith("*") and (len(value) == 1 or value[1] in " \t"):
        return "*"
    match = _AGENT_RE.match(value)
    return match.group(0).lower() if match else ""


def path_of(url: str) -> bytes:
    """What rules are matched against: the URL's path and query (the
    ``?`` kept even when the query is empty), percent-decoded to octets."""
    parts = urlsplit(url)
    path = parts.path or "/"
    if parts.query or "?" in url.partition("#")[0]:
        path += "?" + parts.query
    return unquote_to_bytes(path)


class RobotsRules:
    """One robots.txt, parsed. ``can_fetch(url, user_agent)``,
    ``crawl_delay(user_agent)`` and ``sitemaps`` answer as protego's
    parser of the same names (``user_agent`` is a product token or a whole
    User-Agent)."""

    def __init__(self, groups: list[Group], sitemaps: list[str]) -> None:
        self.groups = groups
        self.sitemaps = sitemaps
        self._chosen: dict[str, tuple[str, list[Group]]] = {}

    @classmethod
    def parse(cls, text: str) -> RobotsRules:
        groups: list[Group] = []
        sitemaps: list[str] = []
        group: Group | None = None
        for raw in text.split("\n"):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            key, colon, value = line.partition(":")
            if not colon:
                match = _NO_COLON_RE.fullmatch(line)
                if match is None:
                    continue
                key, value = match.groups()
            kind = _KEYS.get(" ".join(key.split()).lower())
            value = value.strip()
            if kind == USER_AGENT:
                if group is None or group.closed:
                    group = Group()
                    groups.append(group)
                group.agents.append(agent_of(value))
            elif kind in (ALLOW, DISALLOW):
                if group is None:
                    continue  # outside any group
                group.closed = True
                # an empty pattern matches nothing (not even "everything")
                if value:
                    group.rules.append(Rule.parse(kind == ALLOW, value))
            elif kind == CRAWL_DELAY:
                seconds = _seconds(value)
                if group is not None and seconds is not None:
                    group.add_delay(seconds)
            elif kind == SITEMAP and value:
                sitemaps.append(value)
        return cls(groups, sitemaps)

    def groups_for(self, user_agent: str) -> tuple[str, list[Group]]:
        """The groups that apply to ``user_agent`` and the name they know
        it by: its product token and the groups naming it, else ``*`` and
        the groups for all."""
        token = product_token(user_agent) if user_agent != "*" else "*"
        chosen = self._chosen.get(token)
        if chosen is None:
            groups = [g for g in self.groups if token and token in g.agents]
            name = token
            if not groups:
                name, groups = "*", [g for g in self.groups if "*" in g.agents]
            chosen = self._chosen[token] = (name, groups)
        return chosen

    def can_fetch(self, url: str, user_agent: str) -> bool:
        """Whether ``url`` may be fetched by ``user_agent``."""
        _, groups = self.groups_for(user_agent)
        if not groups:
            return True
        path = path_of(url)
        if path == ROBOTS_PATH:
            return True
        best: Rule | None = None
        for group in groups:
            for rule in group.rules:
                if (
                    best is None
                    or rule.length > best.length
                    or (rule.length == best.length and rule.allow and not best.allow)
                ) and rule.matches(path):
                    best = rule
        return best is None or best.allow

    def crawl_delay(self, user_agent: str) -> float | None:
        """The Crawl-delay of the groups that apply (the longest, if they
        disagree), or None."""
        name, groups = self.groups_for(user_agent)
        delays = [g.delays[name] for g in groups if name in g.delays]
        return max(delays) if delays else None


def _seconds(value: str) -> float | None:
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None
