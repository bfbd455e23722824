"""The command line, as a user types it: `scrapy crawl webspider -a …`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.cli import ROOT, run_crawl, scrapy_command, scrapy_env
from tests.support.server import html

pytestmark = pytest.mark.e2e


#: DOWNLOAD_HANDLERS with the policy's handler, not the one that reaches the
#: lean client
GUARD = "webspider.addresses.handler.AddressGuardHandler"
GUARD_ONLY = ("-s", f'DOWNLOAD_HANDLERS={{"http": "{GUARD}", "https": "{GUARD}"}}')


def assert_one_line_error(proc, *fragments: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("webspider: error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0]
    assert "Traceback" not in proc.stderr + proc.stdout


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        ((), ("start_urls is required", "-a start_urls=https://example.org/")),
        (("-a", "start_urls=htp:/x"), ("'htp:/x'", "not supported")),
        (("-a", "start_urls=http://"), ("'http://'", "no host")),
        (("-a", "url=http://exa mple.org/"), ("'http://exa mple.org/'", "white space")),
        (("-a", "start_urls=ftp://example.org/"), ("'ftp://example.org/'",)),
        (
            ("-a", "start_urls=http://a.test/", "-a", "scope=planet"),
            ("'planet'", "host, domain, all, local"),
        ),
        (
            ("-a", "start_urls=@/nonexistent/urls.txt"),
            ("'/nonexistent/urls.txt'", "does not exist"),
        ),
        (
            ("-a", "start_urls=http://a.test/", "-a", "max_dept=2"),
            ("max_dept", "known:"),
        ),
        (
            ("-a", "start_urls=http://a.test/", "-a", "robots=maybe"),
            ("robots", "maybe"),
        ),
        (
            ("-a", "start_urls=http://a.test/", "-a", "http_client=curl"),
            ("http_client (WEBSPIDER_HTTP_CLIENT)", "twisted or lean", "'curl'"),
        ),
        (
            ("-a", "start_urls=http://a.test/", "-a", "http_client=lean", *GUARD_ONLY),
            ("http_client (WEBSPIDER_HTTP_CLIENT): lean needs", "HTTPClientHandler"),
        ),
        (
            ("-a", "start_urls=http://a.test/", "-a", "log_skipped=perhaps"),
            ("log_skipped", "perhaps"),
        ),
        # README: on/off values are 1/0 or true/false; any other number was
        # taken for "on" without a word (int("2") is true)
        (
            ("-a", "start_urls=http://a.test/", "-a", "robots=2"),
            ("robots (ROBOTSTXT_OBEY)", "1/0, true/false", "'2'"),
        ),
        (
            ("-a", "start_urls=http://a.test/", "-a", "mirror=0", "-a", "defer=-1"),
            ("defer (WEBSPIDER_DEPTH_DEFER)", "'-1'"),
        ),
        (
            ("-a", "start_urls=http://a.test/", "-s", "WEBSPIDER_MIRROR_UPDATE=10"),
            ("WEBSPIDER_MIRROR_UPDATE", "'10'"),
        ),
        # an empty value silently meant the default
        (("-a", "start_urls=http://a.test/", "-a", "scope="), ("scope", "''")),
        # one of the two was dropped without a word
        (
            ("-a", "start_urls=http://a.test/", "-a", "url=http://b.test/"),
            ("start_urls", "url", "one of"),
        ),
        # Scrapy's own numbers, read after the checks: a traceback (exit 1)
        (
            ("-a", "start_urls=http://a.test/", "-s", "CONCURRENT_REQUESTS=abc"),
            ("CONCURRENT_REQUESTS", "whole number", "'abc'"),
        ),
        (
            ("-a", "start_urls=http://a.test/", "-s", "DOWNLOAD_DELAY=x"),
            ("DOWNLOAD_DELAY", "number", "'x'"),
        ),
        (
            (
                "-a",
                "start_urls=http://a.test/",
                "-s",
                "WEBSPIDER_MAX_WAITING_REQUESTS=lots",
            ),
            ("WEBSPIDER_MAX_WAITING_REQUESTS", "whole number"),
        ),
        (
            (
                "-a",
                "start_urls=http://a.test/",
                "-s",
                "WEBSPIDER_POLITENESS_ENABLED=sometimes",
            ),
            ("WEBSPIDER_POLITENESS_ENABLED",),
        ),
        (
            (
                "-a",
                "start_urls=http://a.test/",
                "-s",
                "WEBSPIDER_MIRROR_CONVERT_LINK=0",
            ),
            (
                "unknown setting WEBSPIDER_MIRROR_CONVERT_LINK",
                "did you mean WEBSPIDER_MIRROR_CONVERT_LINKS?",
            ),
        ),
        (
            ("-a", "start_urls=http://a.test/", "-s", "WEBSPIDER_NOTHING_LIKE_IT=1"),
            ("unknown setting WEBSPIDER_NOTHING_LIKE_IT",),
        ),
        # Scrapy imported it when it installed the reactor: a traceback
        (
            ("-a", "start_urls=http://a.test/", "-s", "ASYNCIO_EVENT_LOOP=nope.Loop"),
            ("ASYNCIO_EVENT_LOOP 'nope.Loop' cannot be loaded", "nope"),
        ),
        (
            (
                "-a",
                "start_urls=http://a.test/",
                "-s",
                "ASYNCIO_EVENT_LOOP=asyncio.sleep",
            ),
            ("ASYNCIO_EVENT_LOOP 'asyncio.sleep'", "not an asyncio event loop"),
        ),
    ],
)
def test_bad_input_is_one_clear_line(tmp_path, args, fragments):
    out = tmp_path / "out"
    proc = run_crawl("-a", f"output={out}", *args)
    assert_one_line_error(proc, *fragments)
    assert not out.exists()  # nothing written


def test_an_empty_output_is_refused(tmp_path):
    # it silently meant the default folder, output/ in the project
    proc = run_crawl("-a", "start_urls=http://a.test/", "-a", "output=")
    assert_one_line_error(proc, "output", "empty")


@pytest.mark.parametrize("folder", ["output", "mirror"])
def test_a_folder_that_cannot_be_made_is_one_line(tmp_path, server, folder):
    # the mirror was made only once the crawl had started: a traceback per
    # page, no line in pages.jsonl, and exit status 0
    server.add("/", html('<a href="/a">a</a>'))
    server.add("/a", html("a"))
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    out = tmp_path / "out"
    args = {"output": str(out), "mirror": str(tmp_path / "mirror")}
    args[folder] = str(blocker / folder)
    proc = run_crawl(
        "-a",
        f"start_urls={server.url('/')}",
        *(x for name, value in args.items() for x in ("-a", f"{name}={value}")),
    )
    assert_one_line_error(proc, folder, str(blocker / folder), "cannot be made")
    assert server.requested() == []
    assert not out.exists()


def test_empty_url_file_is_named(tmp_path):
    empty = tmp_path / "urls.txt"
    empty.write_text("# nothing here\n")
    proc = run_crawl("-a", f"start_urls=@{empty}", "-a", f"output={tmp_path / 'out'}")
    assert_one_line_error(proc, str(empty), "holds no URL")


#: runs the crawl command in this process, counting the reads of URL list files
COUNT_LIST_READS = """
import sys
import webspider.utils.urllist as urllist
from scrapy.cmdline import execute
real, reads = urllist.read_list_file, []
def counting(name):
    reads.append(name)
    return real(name)
urllist.read_list_file = counting
try:
    execute(["scrapy", *sys.argv[1:]])
finally:
    print("list-file-reads", len(reads), file=sys.stderr)
"""


def test_a_start_url_file_is_read_once_per_crawl(tmp_path, server):
    # An @file may be a deferred.jsonl of millions of lines: the command's
    # checks and every component of the crawl share one read.
    server.add("/", html('<a href="/a.html">a</a>', "Home"))
    server.add("/a.html", html("", "A"))
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"{server.url('/')}\n{server.url('/a.html')}\n")
    out = tmp_path / "out"
    command = scrapy_command(
        "-a",
        f"start_urls=@{seeds}",
        "-a",
        f"output={out}",
        "-a",
        f"include={server.url('/')}",
    )
    proc = subprocess.run(
        [sys.executable, "-c", COUNT_LIST_READS, *command[3:]],
        cwd=ROOT,
        env=scrapy_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "list-file-reads 1\n" in proc.stderr
    assert sorted(server.requested()) == ["/", "/a.html", "/robots.txt"]
    pages = (out / "pages.jsonl").read_text().splitlines()
    assert len(pages) == 2


def test_crawl_from_the_command_line(tmp_path, server):
    server.add("/", html('<a href="/a.html">a</a><a href="/b.html">b</a>', "Home"))
    server.add("/a.html", html('<a href="/b.html">b</a>', "A"))
    server.add("/b.html", html('<a href="/">home</a>', "B"))
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"# my seeds\n{server.url('/')}\n\n{server.url('/a.html')}\n")
    out = tmp_path / "out"
    proc = run_crawl("-a", f"start_urls=@{seeds}", "-a", f"output={out}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    items = [
        json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()
    ]
    assert sorted((i["url"], i["depth"]) for i in items) == [
        (server.url("/"), 0),
        (server.url("/a.html"), 0),
        (server.url("/b.html"), 1),
    ]
    assert sorted(server.requested()) == ["/", "/a.html", "/b.html", "/robots.txt"]


def test_dash_capital_o_overrides_the_default_feed(tmp_path, server):
    server.add("/", html("only page", "Home"))
    out = tmp_path / "out"
    feed = tmp_path / "mine.jsonl"
    feed.write_text("old content\n")
    proc = run_crawl(
        "-a", f"url={server.url('/')}", "-a", f"output={out}", "-O", str(feed)
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [json.loads(line)["url"] for line in feed.read_text().splitlines()] == [
        server.url("/")
    ]
    assert not (out / "pages.jsonl").exists()


@pytest.mark.parametrize("enabled", [False, True])
def test_no_remote_control_unless_asked(tmp_path, server, enabled):
    # Scrapy 2.19's remote control (a code-running HTTP server and a job file
    # outside the output) is off by default; -s turns it back on.
    server.add("/", html("<p>hi</p>", "Home"))
    jobs = tmp_path / "jobs"
    args = ["-a", f"start_urls={server.url('/')}", "-a", f"output={tmp_path / 'o'}"]
    args += ["-s", f"REMOTE_CONTROL_JOBS_DIR={jobs}"]
    if enabled:
        args += ["-s", "REMOTE_CONTROL_ENABLED=True"]
    proc = run_crawl(*args)
    assert proc.returncode == 0, proc.stderr
    assert ("Remote control HTTP server" in proc.stderr) is enabled
    assert jobs.exists() is enabled


def imported_modules(proc: subprocess.CompletedProcess[str]) -> set[str]:
    """The modules a ``python -X importtime`` run imported."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


@pytest.mark.parametrize("switched_on", [False, True])
def test_switched_off_components_are_not_imported(tmp_path, server, switched_on):
    # Scrapy imports every component it lists, even one whose switch is off;
    # the command leaves those out (SWITCHED_OFF_COMPONENTS), and turning
    # the switch on brings them back.
    server.add("/", html("<p>hi</p>", "Home"))
    args = ["-a", f"start_urls={server.url('/')}", "-a", f"output={tmp_path / 'o'}"]
    if switched_on:
        args += ["-s", "REMOTE_CONTROL_ENABLED=True", "-s", "COOKIES_ENABLED=True"]
        args += ["-s", f"REMOTE_CONTROL_JOBS_DIR={tmp_path / 'jobs'}"]
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *scrapy_command(*args)[1:]],
        cwd=ROOT,
        env=scrapy_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    # (-X importtime lists what import statements import: the components'
    # own modules, loaded by importlib, are not listed, what they import is)
    modules = imported_modules(proc)
    assert ("aiohttp" in modules) is switched_on  # RemoteControl
    assert ("tldextract" in modules) is switched_on  # CookiesMiddleware
    assert "twisted.conch" not in modules  # TelnetConsole, TELNETCONSOLE_ENABLED=False
    assert ("Remote control HTTP server" in proc.stderr) is switched_on
    assert ("CookiesMiddleware" in proc.stderr) is switched_on  # enabled, listed


#: a sitecustomize that counts, in every process it starts in, the calls of
#: inspect.getouterframes (inspect.stack()'s reading of each frame's source)
#: and the modules inspect mapped to their files (getmodule's first call)
COUNT_STACKS = """
import atexit
import inspect
import os
import sys

_calls = []
_real = inspect.getouterframes


def _counted(*args, **kwargs):
    _calls.append(1)
    return _real(*args, **kwargs)


inspect.getouterframes = _counted
atexit.register(
    lambda: open(os.environ["STACKS_FILE"], "a").write(
        f"{sys.argv[0]} {len(_calls)} {len(inspect.modulesbyfile)}\\n"
    )
)
"""


def test_a_crawl_reads_no_whole_stack_at_start_up(tmp_path, server):
    # Scrapy's TLS aliases read the whole stack three times and look their
    # module up as they are imported (a tenth of a second of every start);
    # the command imports them through webspider.internals.import_tls_aliases
    # instead.
    server.add("/", html('<a href="/a.html">a</a>', "Home"))
    server.add("/a.html", html("<p>a</p>", "A"))
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(COUNT_STACKS, "utf-8")
    stacks = tmp_path / "stacks.txt"
    env = scrapy_env()
    env["PYTHONPATH"] = f"{shim}:{env['PYTHONPATH']}"
    env["STACKS_FILE"] = str(stacks)
    out = tmp_path / "out"
    proc = subprocess.run(
        scrapy_command("-a", f"start_urls={server.url('/')}", "-a", f"output={out}"),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len((out / "pages.jsonl").read_text().splitlines()) == 2
    counts = [line.split() for line in stacks.read_text().splitlines()]
    # the crawl's process, and its page worker's when it was up before the
    # crawl ended (a worker still starting is killed, with no atexit)
    assert any("scrapy" in name for name, _, _ in counts), counts
    assert [(calls, mapped) for _, calls, mapped in counts] == [("0", "0")] * len(
        counts
    )
