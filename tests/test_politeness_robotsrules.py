"""robots.txt conformance: RFC 9309's examples and the cases of Google's
robots.txt parser tests (google/robotstxt, robots_test.cc) that the RFC
backs, as plain tables of (robots.txt, user agent, URL, allowed).

Each case goes the crawl's whole way: the body's bytes through robots_text
(what is read of them), the rules through RobotsRules, the user agent
through product_token. Where Google's tests and the RFC disagree, the RFC's
answer is the one below (and said so); Google-only behaviour (index.html as
a directory, cutting lines at 16 KiB, an empty user agent allowed
everything) is left out."""

from __future__ import annotations

import pytest

from webspider.politeness.robots import robots_text
from webspider.politeness.robotsrules import RobotsRules, agent_of, path_of

RFC_5_1 = """\
User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot
"""
RFC_5_2 = """\
User-Agent: foobot
Allow: /example/page/
Disallow: /example/page/disallowed.gif
"""
EXAMPLEBOT_UA = (
    "Mozilla/5.0 (compatible; ExampleBot/0.1; https://www.example.com/bot.html)"
)
MERGED = """\
user-agent: ExampleBot
disallow: /foo
disallow: /bar

user-agent: ExampleBot
disallow: /baz
"""
STAR_ONLY = """\
user-agent: *
disallow: /foo
disallow: /bar

user-agent: BazBot
disallow: /baz
"""


def one(rule: str) -> str:
    """Disallow everything but ``rule`` (an Allow)."""
    return f"User-agent: FooBot\nDisallow: /\nAllow: {rule}\n"


def only(rule: str) -> str:
    """Disallow ``rule`` only."""
    return f"User-agent: *\nDisallow: {rule}\n"


E = "http://example.com"
F = "http://foo.bar"

RFC_CASES = [
    # 5.1, the simple example: "*" for everyone without a group of its own
    (RFC_5_1, "otherbot", f"{E}/publications/x", True),
    (RFC_5_1, "otherbot", f"{E}/example/x", False),
    (RFC_5_1, "otherbot", f"{E}/pic.gif", False),
    (RFC_5_1, "otherbot", f"{E}/a/b/pic.gif", False),
    (RFC_5_1, "otherbot", f"{E}/pic.gif?x=1", True),  # "$": the end of the URL
    (RFC_5_1, "otherbot", f"{E}/index.html", True),
    (RFC_5_1, "otherbot", f"{E}/", True),
    # foobot: its own group, rules without a space after the colon
    (RFC_5_1, "foobot", f"{E}/example/page.html", True),
    (RFC_5_1, "foobot", f"{E}/example/allowed.gif", True),
    (RFC_5_1, "foobot", f"{E}/example/other.html", False),
    (RFC_5_1, "foobot", f"{E}/publications/x", False),
    (RFC_5_1, "foobot", f"{E}/", False),
    # barbot and bazbot: one group for two agents, and not the "*" group
    (RFC_5_1, "barbot", f"{E}/example/page.html", False),
    (RFC_5_1, "barbot", f"{E}/example/other.html", True),
    (RFC_5_1, "barbot", f"{E}/pic.gif", True),
    (RFC_5_1, "bazbot", f"{E}/example/page.html", False),
    (RFC_5_1, "bazbot", f"{E}/", True),
    # quxbot: an empty group at the end of the file allows everything
    (RFC_5_1, "quxbot", f"{E}/example/page.html", True),
    (RFC_5_1, "quxbot", f"{E}/pic.gif", True),
    # 5.2, the longest match
    (RFC_5_2, "foobot", f"{E}/example/page/", True),
    (RFC_5_2, "foobot", f"{E}/example/page/disallowed.gif", False),
    (RFC_5_2, "foobot", f"{E}/example/page/other.gif", True),
    # 2.2.1: the product token of a browser-style User-Agent is the bot's
    ("user-agent: ExampleBot\ndisallow: /x\n", EXAMPLEBOT_UA, f"{E}/x", False),
    ("user-agent: ExampleBot\ndisallow: /x\n", EXAMPLEBOT_UA, f"{E}/y", True),
    (
        "user-agent: Mozilla\ndisallow: /\n\nuser-agent: ExampleBot\nallow: /\n",
        EXAMPLEBOT_UA,
        f"{E}/x",
        True,
    ),
    # ... matched case-insensitively, and as a whole token
    ("user-agent: EXAMPLEBOT\ndisallow: /x\n", "examplebot", f"{E}/x", False),
    ("user-agent: Example\ndisallow: /x\n", EXAMPLEBOT_UA, f"{E}/x", True),
    ("user-agent: ExampleBotPro\ndisallow: /x\n", EXAMPLEBOT_UA, f"{E}/x", True),
    # ... groups of the same token are merged
    (MERGED, "ExampleBot", f"{E}/foo", False),
    (MERGED, "ExampleBot", f"{E}/bar", False),
    (MERGED, "ExampleBot", f"{E}/baz", False),
    (MERGED, "ExampleBot", f"{E}/qux", True),
    # ... no group of its own: the "*" group; no "*" group either: no rules
    (STAR_ONLY, "ExampleBot", f"{E}/foo", False),
    (STAR_ONLY, "ExampleBot", f"{E}/bar", False),
    (STAR_ONLY, "ExampleBot", f"{E}/baz", True),
    ("user-agent: BazBot\ndisallow: /\n", "ExampleBot", f"{E}/x", True),
    ("", "ExampleBot", f"{E}/x", True),
    # 2.1: a group's user-agent lines may be apart (blank lines)
    ("user-agent: a\n\nuser-agent: b\ndisallow: /x\n", "a", f"{E}/x", False),
    # 2.2.2: matching is case-sensitive and starts at the path's first octet
    (only("/Foo"), "bot", f"{E}/foo", True),
    (only("/Foo"), "bot", f"{E}/Foo", False),
    (only("/foo"), "bot", f"{E}/bar/foo", True),
    # ... equivalent Allow and Disallow: Allow
    ("user-agent: *\ndisallow: /x\nallow: /x\n", "bot", f"{E}/x", True),
    ("user-agent: *\nallow: /x\ndisallow: /x\n", "bot", f"{E}/x", True),
    # ... /robots.txt is implicitly allowed
    (only("/"), "bot", f"{E}/robots.txt", True),
    # ... rules outside any group are ignored
    ("disallow: /\nuser-agent: *\nallow: /x\n", "bot", f"{E}/y", True),
    # ... percent-encoding (the RFC's table, both ways round)
    (only("/foo/bar?baz=quz"), "bot", f"{E}/foo/bar?baz=quz", False),
    (
        only("/foo/bar?baz=https://foo.bar"),
        "bot",
        f"{E}/foo/bar?baz=https%3A%2F%2Ffoo.bar",
        False,
    ),
    (
        only("/foo/bar?baz=https%3A%2F%2Ffoo.bar"),
        "bot",
        f"{E}/foo/bar?baz=https://foo.bar",
        False,
    ),
    (
        only("/foo/bar?baz=https://foo.bar"),
        "bot",
        f"{E}/foo/bar?baz=http://foo.bar",
        True,
    ),
    (only("/foo/bar/ツ"), "bot", f"{E}/foo/bar/%E3%83%84", False),
    (only("/foo/bar/ツ"), "bot", f"{E}/foo/bar/%e3%83%84", False),
    (only("/foo/bar/%E3%83%84"), "bot", f"{E}/foo/bar/%E3%83%84", False),
    (only("/foo/bar/%e3%83%84"), "bot", f"{E}/foo/bar/%E3%83%84", False),
    # (Google's own tests say the next two the other way round)
    (only("/foo/bar/%E3%83%84"), "bot", f"{E}/foo/bar/ツ", False),
    (only("/foo/bar/%62%61%7A"), "bot", f"{E}/foo/bar/baz", False),
    (only("/foo/bar/baz"), "bot", f"{E}/foo/bar/%62%61%7A", False),
    (only("/foo/bar/%62%61%7A"), "bot", f"{E}/foo/bar/bax", True),
    # 2.2.3: "#" starts a comment, "$" ends the pattern, "*" is any octets
    ("user-agent: * # all\ndisallow: /a # not /b\n", "bot", f"{E}/a", False),
    ("user-agent: * # all\ndisallow: /a # not /b\n", "bot", f"{E}/b", True),
    ("# disallow: /\nuser-agent: *\nallow: / # all\n", "bot", f"{E}/x", True),
    (only("/this/path/exactly$"), "bot", f"{E}/this/path/exactly", False),
    (only("/this/path/exactly$"), "bot", f"{E}/this/path/exactly/x", True),
    (only("/this/*/exactly"), "bot", f"{E}/this/a/b/exactly", False),
    (only("/this/*/exactly"), "bot", f"{E}/this//exactly", False),
    (only("/this/*/exactly"), "bot", f"{E}/this/exactly", True),
    # ... written percent-encoded, they are the characters themselves
    (only("/path/file-with-a-%2A.html"), "bot", f"{E}/path/file-with-a-*.html", False),
    (only("/path/file-with-a-%2A.html"), "bot", f"{E}/path/file-with-a-x.html", True),
    (only("/path/foo-%24"), "bot", f"{E}/path/foo-$", False),
    (only("/path/foo-%24"), "bot", f"{E}/path/foo-", True),
    # 2.2.4: other records do not end a group
    (
        "user-agent: a\nsitemap: http://x/s.xml\nuser-agent: b\ndisallow: /\n",
        "a",
        f"{E}/x",
        False,
    ),
    (
        "user-agent: a\ncrawl-delay: 5\nuser-agent: b\ndisallow: /\n",
        "a",
        f"{E}/x",
        False,
    ),
    ("user-agent: a\nfoo: bar\nuser-agent: b\ndisallow: /\n", "a", f"{E}/x", False),
    (
        "user-agent: a\nsitemap: http://x/s.xml\nuser-agent: b\ndisallow: /\n",
        "b",
        f"{E}/x",
        False,
    ),
    # ... nor are they rules
    ("user-agent: *\nnoindex: /x\nclean-param: a /x\n", "bot", f"{E}/x", True),
    # 2.1: line ends are CR, LF or CRLF
    (b"User-agent: *\r\nAllow: /x\r\nDisallow: /\r\n", "bot", f"{E}/x", True),
    (b"User-agent: *\r\nAllow: /x\r\nDisallow: /\r\n", "bot", f"{E}/y", False),
    (b"User-agent: *\rAllow: /x\rDisallow: /\r", "bot", f"{E}/y", False),
    (b"User-agent: *\nAllow: /x\r\nDisallow: /\r", "bot", f"{E}/y", False),
    (b"User-agent: *\nDisallow: /", "bot", f"{E}/y", False),  # no final line end
]

LINE_GROUPS = """\
allow: /foo/bar/

user-agent: FooBot
disallow: /
allow: /x/
user-agent: BarBot
disallow: /
allow: /y/


allow: /w/
user-agent: BazBot

user-agent: FooBot
allow: /z/
disallow: /
"""
FIRST_SPACE = (
    "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n"
)
GLOBAL = "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n"
SPECIFIC = (
    "user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\n"
    "user-agent: BazBot\ndisallow: /\n"
)
LONGEST = "user-agent: FooBot\n"
PAGE = f"{F}/x/page.html"
FISH = "user-agent: FooBot\ndisallow: /\nallow: /fish\n"
FISH_STAR = "user-agent: FooBot\ndisallow: /\nallow: /fish*\n"
FISH_SLASH = "user-agent: FooBot\ndisallow: /\nallow: /fish/\n"
PHP = "user-agent: FooBot\ndisallow: /\nallow: /*.php\n"
PHP_END = "user-agent: FooBot\ndisallow: /\nallow: /*.php$\n"
FISH_PHP = "user-agent: FooBot\ndisallow: /\nallow: /fish*.php\n"
BOM_RULES = b"User-Agent: foo\nDisallow: /AnyValue\n"

GOOGLE_CASES = [
    # ID_LineSyntax_Line: "key: value" lines; unknown keys are no rules
    ("user-agent: FooBot\ndisallow: /\n", "FooBot", f"{F}/x/y", False),
    ("foo: FooBot\nbar: /\n", "FooBot", f"{F}/x/y", True),
    # ID_LineSyntax_Groups
    (LINE_GROUPS, "FooBot", f"{F}/x/b", True),
    (LINE_GROUPS, "FooBot", f"{F}/z/d", True),
    (LINE_GROUPS, "FooBot", f"{F}/y/c", False),
    (LINE_GROUPS, "BarBot", f"{F}/y/c", True),
    (LINE_GROUPS, "BarBot", f"{F}/w/a", True),
    (LINE_GROUPS, "BarBot", f"{F}/z/d", False),
    (LINE_GROUPS, "BazBot", f"{F}/z/d", True),
    (LINE_GROUPS, "FooBot", f"{F}/foo/bar/", False),
    (LINE_GROUPS, "BarBot", f"{F}/foo/bar/", False),
    (LINE_GROUPS, "BazBot", f"{F}/foo/bar/", False),
    # ID_LineSyntax_Groups_OtherRules
    (
        "User-agent: BarBot\nSitemap: https://foo.bar/sitemap\nUser-agent: *\nDisallow: /\n",
        "FooBot",
        f"{F}/",
        False,
    ),
    (
        "User-agent: BarBot\nSitemap: https://foo.bar/sitemap\nUser-agent: *\nDisallow: /\n",
        "BarBot",
        f"{F}/",
        False,
    ),
    (
        "User-agent: FooBot\nInvalid-Unknown-Line: unknown\nUser-agent: *\nDisallow: /\n",
        "FooBot",
        f"{F}/",
        False,
    ),
    (
        "User-agent: FooBot\nInvalid-Unknown-Line: unknown\nUser-agent: *\nDisallow: /\n",
        "BarBot",
        f"{F}/",
        False,
    ),
    # ID_REPLineNamesCaseInsensitive
    ("USER-AGENT: FooBot\nALLOW: /x/\nDISALLOW: /\n", "FooBot", f"{F}/x/y", True),
    ("USER-AGENT: FooBot\nALLOW: /x/\nDISALLOW: /\n", "FooBot", f"{F}/a/b", False),
    ("user-agent: FooBot\nallow: /x/\ndisallow: /\n", "FooBot", f"{F}/x/y", True),
    ("user-agent: FooBot\nallow: /x/\ndisallow: /\n", "FooBot", f"{F}/a/b", False),
    ("uSeR-aGeNt: FooBot\nAlLoW: /x/\ndIsAlLoW: /\n", "FooBot", f"{F}/x/y", True),
    ("uSeR-aGeNt: FooBot\nAlLoW: /x/\ndIsAlLoW: /\n", "FooBot", f"{F}/a/b", False),
    # ID_UserAgentValueCaseInsensitive
    ("User-Agent: FOO BAR\nAllow: /x/\nDisallow: /\n", "Foo", f"{F}/x/y", True),
    ("User-Agent: FOO BAR\nAllow: /x/\nDisallow: /\n", "Foo", f"{F}/a/b", False),
    ("User-Agent: foo bar\nAllow: /x/\nDisallow: /\n", "Foo", f"{F}/x/y", True),
    ("User-Agent: foo bar\nAllow: /x/\nDisallow: /\n", "Foo", f"{F}/a/b", False),
    ("User-Agent: FoO bAr\nAllow: /x/\nDisallow: /\n", "foo", f"{F}/x/y", True),
    ("User-Agent: FoO bAr\nAllow: /x/\nDisallow: /\n", "foo", f"{F}/a/b", False),
    # ID_GlobalGroups_Secondary
    ("", "FooBot", f"{F}/x/y", True),
    (GLOBAL, "FooBot", f"{F}/x/y", False),
    (GLOBAL, "BarBot", f"{F}/x/y", True),
    (SPECIFIC, "QuxBot", f"{F}/x/y", True),
    # ID_AllowDisallow_Value_CaseSensitive
    ("user-agent: FooBot\ndisallow: /x/\n", "FooBot", f"{F}/x/y", False),
    ("user-agent: FooBot\ndisallow: /X/\n", "FooBot", f"{F}/x/y", True),
    # ID_LongestMatch
    (LONGEST + "disallow: /x/page.html\nallow: /x/\n", "FooBot", PAGE, False),
    (LONGEST + "allow: /x/page.html\ndisallow: /x/\n", "FooBot", PAGE, True),
    (LONGEST + "allow: /x/page.html\ndisallow: /x/\n", "FooBot", f"{F}/x/", False),
    (LONGEST + "disallow: \nallow: \n", "FooBot", PAGE, True),
    (LONGEST + "disallow: /\nallow: /\n", "FooBot", PAGE, True),
    (LONGEST + "disallow: /x\nallow: /x/\n", "FooBot", f"{F}/x", False),
    (LONGEST + "disallow: /x\nallow: /x/\n", "FooBot", f"{F}/x/", True),
    (LONGEST + "disallow: /x/page.html\nallow: /x/page.html\n", "FooBot", PAGE, True),
    (LONGEST + "allow: /page\ndisallow: /*.html\n", "FooBot", f"{F}/page.html", False),
    (LONGEST + "allow: /page\ndisallow: /*.html\n", "FooBot", f"{F}/page", True),
    (LONGEST + "allow: /x/page.\ndisallow: /*.html\n", "FooBot", PAGE, True),
    (
        LONGEST + "allow: /x/page.\ndisallow: /*.html\n",
        "FooBot",
        f"{F}/x/y.html",
        False,
    ),
    (
        "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n",
        "FooBot",
        f"{F}/x/page",
        True,
    ),
    (
        "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n",
        "FooBot",
        f"{F}/y/page",
        False,
    ),
    # ID_Encoding (those the RFC agrees with; see RFC_CASES for the others)
    (
        one("/foo/bar?qux=taz&baz=http://foo.bar?tar&par"),
        "FooBot",
        f"{F}/foo/bar?qux=taz&baz=http://foo.bar?tar&par",
        True,
    ),
    (one("/foo/bar/ツ"), "FooBot", f"{F}/foo/bar/%E3%83%84", True),
    (one("/foo/bar/%E3%83%84"), "FooBot", f"{F}/foo/bar/%E3%83%84", True),
    (one("/foo/bar/%62%61%7A"), "FooBot", f"{F}/foo/bar/%62%61%7A", True),
    # ID_SpecialCharacters
    (
        "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n",
        "FooBot",
        f"{F}/foo/bar/quz",
        False,
    ),
    (
        "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n",
        "FooBot",
        f"{F}/foo/quz",
        True,
    ),
    (
        "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n",
        "FooBot",
        f"{F}/foo//quz",
        True,
    ),
    (
        "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n",
        "FooBot",
        f"{F}/foo/bax/quz",
        True,
    ),
    (
        "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n",
        "FooBot",
        f"{F}/foo/bar",
        False,
    ),
    (
        "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n",
        "FooBot",
        f"{F}/foo/bar/qux",
        True,
    ),
    (
        "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n",
        "FooBot",
        f"{F}/foo/bar/",
        True,
    ),
    (
        "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n",
        "FooBot",
        f"{F}/foo/bar/baz",
        True,
    ),
    (
        "User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n",
        "FooBot",
        f"{F}/foo/bar",
        True,
    ),
    (
        "User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n",
        "FooBot",
        f"{F}/foo/quz",
        False,
    ),
    # GoogleOnly_DocumentationChecks: how paths match (RFC 2.2.2, 2.2.3)
    (FISH, "FooBot", f"{F}/bar", False),
    (FISH, "FooBot", f"{F}/fish", True),
    (FISH, "FooBot", f"{F}/fish.html", True),
    (FISH, "FooBot", f"{F}/fish/salmon.html", True),
    (FISH, "FooBot", f"{F}/fishheads", True),
    (FISH, "FooBot", f"{F}/fishheads/yummy.html", True),
    (FISH, "FooBot", f"{F}/fish.html?id=anything", True),
    (FISH, "FooBot", f"{F}/Fish.asp", False),
    (FISH, "FooBot", f"{F}/catfish", False),
    (FISH, "FooBot", f"{F}/?id=fish", False),
    (FISH_STAR, "FooBot", f"{F}/bar", False),
    (FISH_STAR, "FooBot", f"{F}/fish", True),
    (FISH_STAR, "FooBot", f"{F}/fish.html", True),
    (FISH_STAR, "FooBot", f"{F}/fish/salmon.html", True),
    (FISH_STAR, "FooBot", f"{F}/fishheads", True),
    (FISH_STAR, "FooBot", f"{F}/fishheads/yummy.html", True),
    (FISH_STAR, "FooBot", f"{F}/fish.html?id=anything", True),
    (FISH_STAR, "FooBot", f"{F}/Fish.bar", False),
    (FISH_STAR, "FooBot", f"{F}/catfish", False),
    (FISH_STAR, "FooBot", f"{F}/?id=fish", False),
    (FISH_SLASH, "FooBot", f"{F}/bar", False),
    (FISH_SLASH, "FooBot", f"{F}/fish/", True),
    (FISH_SLASH, "FooBot", f"{F}/fish/salmon", True),
    (FISH_SLASH, "FooBot", f"{F}/fish/?salmon", True),
    (FISH_SLASH, "FooBot", f"{F}/fish/salmon.html", True),
    (FISH_SLASH, "FooBot", f"{F}/fish/?id=anything", True),
    (FISH_SLASH, "FooBot", f"{F}/fish", False),
    (FISH_SLASH, "FooBot", f"{F}/fish.html", False),
    (FISH_SLASH, "FooBot", f"{F}/Fish/Salmon.html", False),
    (PHP, "FooBot", f"{F}/bar", False),
    (PHP, "FooBot", f"{F}/filename.php", True),
    (PHP, "FooBot", f"{F}/folder/filename.php", True),
    (PHP, "FooBot", f"{F}/folder/filename.php?parameters", True),
    (PHP, "FooBot", f"{F}//folder/any.php.file.html", True),
    (PHP, "FooBot", f"{F}/filename.php/", True),
    (PHP, "FooBot", f"{F}/index?f=filename.php/", True),
    (PHP, "FooBot", f"{F}/php/", False),
    (PHP, "FooBot", f"{F}/index?php", False),
    (PHP, "FooBot", f"{F}/windows.PHP", False),
    (PHP_END, "FooBot", f"{F}/bar", False),
    (PHP_END, "FooBot", f"{F}/filename.php", True),
    (PHP_END, "FooBot", f"{F}/folder/filename.php", True),
    (PHP_END, "FooBot", f"{F}/filename.php?parameters", False),
    (PHP_END, "FooBot", f"{F}/filename.php/", False),
    (PHP_END, "FooBot", f"{F}/filename.php5", False),
    (PHP_END, "FooBot", f"{F}/php/", False),
    (PHP_END, "FooBot", f"{F}/filename?php", False),
    (PHP_END, "FooBot", f"{F}/aaaphpaaa", False),
    (PHP_END, "FooBot", f"{F}//windows.PHP", False),
    (FISH_PHP, "FooBot", f"{F}/bar", False),
    (FISH_PHP, "FooBot", f"{F}/fish.php", True),
    (FISH_PHP, "FooBot", f"{F}/fishheads/catfish.php?parameters", True),
    (FISH_PHP, "FooBot", f"{F}/Fish.PHP", False),
    (LONGEST + "allow: /p\ndisallow: /\n", "FooBot", f"{E}/page", True),
    (
        LONGEST + "allow: /folder\ndisallow: /folder\n",
        "FooBot",
        f"{E}/folder/page",
        True,
    ),
    (LONGEST + "allow: /page\ndisallow: /*.htm\n", "FooBot", f"{E}/page.htm", False),
    (LONGEST + "allow: /$\ndisallow: /\n", "FooBot", f"{E}/", True),
    (LONGEST + "allow: /$\ndisallow: /\n", "FooBot", f"{E}/page.html", False),
    # ID_UTF8ByteOrderMarkIsSkipped: a byte order mark, whole or cut short,
    # is skipped; anything else there spoils the first line only
    (b"\xef\xbb\xbf" + BOM_RULES, "foo", f"{F}/AnyValue", False),
    (b"\xef\xbb" + BOM_RULES, "foo", f"{F}/AnyValue", False),
    (b"\xef" + BOM_RULES, "foo", f"{F}/AnyValue", False),
    (b"\xef\x11\xbf" + BOM_RULES, "foo", f"{F}/AnyValue", True),
    (
        b"User-Agent: foo\n\xef\xbb\xbfDisallow: /AnyValue\n",
        "foo",
        f"{F}/AnyValue",
        True,
    ),
    # ID_NonStandardLineExample_Sitemap: a Sitemap line anywhere is no rule
    (
        "Sitemap: http://foo.bar/sitemap.xml\nUser-Agent: foo\nDisallow: /x\n",
        "foo",
        f"{F}/x",
        False,
    ),
    (
        "User-Agent: foo\nSitemap: http://foo.bar/sitemap.xml\nDisallow: /x\n",
        "foo",
        f"{F}/x",
        False,
    ),
]


def allowed(robots: str | bytes, agent: str, url: str) -> bool:
    body = robots.encode() if isinstance(robots, str) else robots
    text, _ = robots_text(body, 512 * 1024)
    return RobotsRules.parse(text).can_fetch(url, agent)


@pytest.mark.parametrize(("robots", "agent", "url", "expected"), RFC_CASES)
def test_rfc_9309(robots, agent, url, expected):
    assert allowed(robots, agent, url) is expected


@pytest.mark.parametrize(("robots", "agent", "url", "expected"), GOOGLE_CASES)
def test_google_parser_cases_the_rfc_backs(robots, agent, url, expected):
    assert allowed(robots, agent, url) is expected


# Where the RFC is silent, webspider reads what a site plainly meant, as
# Google's parser does: it can only make the crawl obey a site more.
@pytest.mark.parametrize(
    ("robots", "agent", "url", "expected"),
    [
        ("user-agent FooBot\ndisallow /\n", "FooBot", f"{F}/x/y", False),
        ("useragent: FooBot\ndissallow: /x\n", "FooBot", f"{F}/x", False),
        ("User agent: FooBot\ndisalow: /x\n", "FooBot", f"{F}/x", False),
        ("User-agent: FooBot/2.1\nDisallow: /x\n", "FooBot", f"{F}/x", False),
        ("User-agent: * FooBot\nDisallow: /x\n", "OtherBot", f"{F}/x", False),
        (FIRST_SPACE, "Foo", f"{F}/x/y", True),
        # a pattern that starts with neither "/" nor "*" matches nothing
        ("User-agent: *\nDisallow: x\n", "bot", f"{F}/x", True),
        # a User-agent value that is no token names nobody
        ("User-agent: /\nDisallow: /\n", "bot", f"{F}/x", True),
    ],
)
def test_lenient_reading(robots, agent, url, expected):
    assert allowed(robots, agent, url) is expected


@pytest.mark.parametrize(
    ("robots", "agent", "delay"),
    [
        ("User-agent: *\nCrawl-delay: 5\n", "bot", 5.0),
        ("User-agent: *\nCrawl-delay: 0.5\n", "bot", 0.5),
        # a Crawl-delay is for the agents named since the last one
        ("User-agent: a\nCrawl-delay: 5\nUser-agent: b\nDisallow: /\n", "a", 5.0),
        ("User-agent: a\nCrawl-delay: 5\nUser-agent: b\nDisallow: /\n", "b", None),
        ("User-agent: a\nUser-agent: b\nCrawl-delay: 5\nDisallow: /\n", "b", 5.0),
        ("User-agent: a\nDisallow: /\nCrawl-delay: 3\nCrawl-delay: 4\n", "a", 4.0),
        ("User-agent: a\nCrawl-delay: 2\n\nUser-agent: a\nCrawl-delay: 7\n", "a", 7.0),
        ("User-agent: a\nCrawl-delay: 2\nUser-agent: *\nCrawl-delay: 9\n", "b", 9.0),
        ("User-agent: a\nCrawl-delay: 2\nUser-agent: *\nCrawl-delay: 9\n", "a", 2.0),
        ("User-agent: *\nCrawl-delay: soon\n", "bot", None),
        ("User-agent: *\nCrawl-delay: -1\n", "bot", None),
        ("User-agent: *\nCrawl-delay: nan\n", "bot", None),
        ("Crawl-delay: 5\nUser-agent: *\n", "bot", None),  # in no group
        ("User-agent: *\nDisallow: /\n", "bot", None),
    ],
)
def test_crawl_delay(robots, agent, delay):
    assert RobotsRules.parse(robots).crawl_delay(agent) == delay


def test_sitemaps_are_read_anywhere():
    rules = RobotsRules.parse(
        "Sitemap: http://a/1.xml\nUser-agent: *\nSitemap: http://a/2.xml # x\n"
        "Disallow: /\nsitemap:http://a/3.xml\nSitemap:\n"
    )
    assert list(rules.sitemaps) == [
        "http://a/1.xml",
        "http://a/2.xml",
        "http://a/3.xml",
    ]


@pytest.mark.parametrize(
    ("value", "agent"),
    [
        ("*", "*"),
        ("* FooBot", "*"),
        ("*Bot", ""),
        ("FooBot", "foobot"),
        ("Foo-Bar_Baz/1.0", "foo-bar_baz"),
        ("Foo Bar", "foo"),
        ("", ""),
    ],
)
def test_agent_of(value, agent):
    assert agent_of(value) == agent


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("http://x.org", b"/"),
        ("http://x.org/a/b?c=http://d.e/#frag", b"/a/b?c=http://d.e/"),
        ("http://x.org/a;b?", b"/a;b?"),
        ("http://x.org/%E3%83%84?q=%2F", "/ツ?q=/".encode()),
        ("http://x.org/%zz%4", b"/%zz%4"),
    ],
)
def test_path_of(url, path):
    assert path_of(url) == path


def test_a_hostile_pattern_costs_no_backtracking():
    # A regex engine would try every way to place 30 stars in a long URL.
    rules = RobotsRules.parse("User-agent: *\nDisallow: /" + "*a" * 30 + "*b$\n")
    assert rules.can_fetch("http://x.org/" + "a" * 5_000, "bot")
    assert not rules.can_fetch("http://x.org/" + "a" * 40 + "b", "bot")
