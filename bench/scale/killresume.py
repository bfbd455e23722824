"""Benchmark (not a test): kill the crawl at random moments, resume, compare.

    nice -n 5 python bench/scale/killresume.py    # 20 kills + 5 double Ctrl-C
    python bench/scale/killresume.py --kills 5 --sigints 2 --seed 7 --mirror 0

A synthetic site of --pages pages (bench/scale/synth.py: a deep one, with
--missing 404 URLs and --duplicates pairs of identical pages), served by
nginx, is crawled with ``-a max_depth=2`` (--max-depth; rounds and deferrals
happen) twice:

1. an uninterrupted reference crawl;
2. the same command, stopped --kills times with ``kill -9`` (the crawl's
   process, as the OOM killer or ``kill -9 PID`` does) and --sigints times
   with two SIGINTs 0.1 s apart (to its process group, as Ctrl-C twice in a
   terminal), in a seeded random order, each followed by the same command
   again, until a run finishes (the state says ``finished``).

Each stop waits until the server has served a random share of the site's
pages (seeded, spread from start-up to after the last page, i.e. also during
round changes and the end-of-crawl work) plus a random 0-0.3 s; a share
already reached stops the run 0-2 s after it started (start-up).

Then it prints pages lost (in the reference's pages.jsonl, not in the
killed crawl's), duplicated lines, invalid JSON lines in every .jsonl file,
refetched requests (the server's access log: URLs served more than once
during the killed crawl) and, of those, the refetches beyond what was in
flight at a stop: after each stop the crawl state is read (read-only, as
the next run finds it), and a URL served by that run that the state does
not hold as done (in flight, or done after the last commit) may be fetched
once more; any other fetch of a URL served before is counted. It compares
every output with the reference: pages.jsonl (URLs and fields;
``fetched_at`` ignored, ``referer`` checked to be a page that links to the
URL, since which of several is first depends on timing), broken-links.jsonl
(with the referrers), the duplicates, summary.json's figures about the site
(``requests``, ``bytes`` and times are the work done, not compared),
report.html's text (its times and bytes downloaded aside),
mirror-state.jsonl and changes.jsonl, deferred.jsonl and skipped.jsonl
(their ``referer`` checked as pages.jsonl's: the page that first defers or
skips a URL depends on the order pages are read, in an uninterrupted crawl
too), and the mirror tree (names and bytes). Exit status 1 when anything is lost,
duplicated, invalid, different or refetched beyond what was in flight.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import posixpath
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import contenders  # noqa: E402
import sites  # noqa: E402
import synth  # noqa: E402

STATE = ".webspider-state.sqlite3"
#: a URL's status in the crawl state's ``url`` table once its page is done
#: (webspider.frontier.sqliteschema.DONE: 0 from format 9, 3 before)
DONE = 0
#: summary.json keys compared (times, versions and paths are not)
SUMMARY_KEYS = (
    "finish_reason",
    "pages",
    "urls_seen",
    "links",
    "broken",
    "duplicates",
    "skipped",
    "rounds",
    "deferred_remaining",
    "status_codes",
)


@dataclass
class Run:
    n: int
    event: str
    target: float | None
    served_at_stop: int = 0
    seconds: float = 0.0
    exit: int | None = None
    finished: bool = False
    notes: list[str] = field(default_factory=list)
    #: paths this run's requests were served for (robots.txt aside)
    served: list[str] = field(default_factory=list)
    #: of those, the ones the state does not hold as done after the stop
    in_flight: list[str] = field(default_factory=list)
    #: the crawl's children at the stop (its page worker: a session of its
    #: own, out of the group a Ctrl-C reaches)
    children: list[int] = field(default_factory=list)


def children_of(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def alive(pid: int) -> bool:
    """Whether ``pid`` runs still (not gone, not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def command(url: str, out: Path, project: Path, extra: list[str]) -> list[str]:
    argv = [*contenders.webspider(url, out.parent, project).argv, *extra]
    argv[argv.index(f"output={out.parent / 'out'}")] = f"output={out}"
    return argv


def state_not_done(out: Path, urls: set[str]) -> set[str]:
    """Of ``urls``, those the crawl state (read-only) does not hold as done:
    what the next run fetches again."""
    path = out / STATE
    if not path.exists():
        return set(urls)
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        # a row's key without its origin's name when it begins with it
        # (webspider.frontier.sqliteschema, format 2)
        done = {
            key
            for (key,) in db.execute(
                "SELECT CASE WHEN substr(u.key, 1, 1) = '!' THEN substr(u.key, 2)"
                " WHEN u.key = '' OR substr(u.key, 1, 1) IN ('/', '?', '#')"
                " THEN o.name || u.key ELSE u.key END"
                " FROM url u JOIN origin o ON o.id = u.origin WHERE u.status = ?",
                (DONE,),
            )
        }
    finally:
        db.close()
    return urls - done


def state_finished(out: Path) -> bool | None:
    """What the crawl state says (read-only: nothing is checkpointed)."""
    path = out / STATE
    if not path.exists():
        return None
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            row = db.execute("SELECT value FROM meta WHERE name = 'finished'")
            value = row.fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return None
    return value is not None and value[0] == "1"


class Crawls:
    """Runs the crawl command, watching the server's access log."""

    def __init__(
        self,
        out: Path,
        *,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        access: Any,
        logs: Path,
    ) -> None:
        self.out, self.argv, self.env, self.cwd = out, argv, env, cwd
        self.access = access
        self.logs = logs
        logs.mkdir(parents=True, exist_ok=True)

    def served_pages(self) -> int:
        return len({s.path for s in self.access.read() if 200 <= s.status < 300})

    def run(self, run: Run, rng: random.Random, total: int) -> None:
        log_path = self.logs / f"{self.out.name}-{run.n:02d}-{run.event}.log"
        before = len(self.access.read())
        started = time.monotonic()
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                self.argv,
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                if run.event != "finish":
                    self._stop_at(proc, run, rng, total, started)
                run.exit = proc.wait(timeout=600)
            finally:
                if proc.poll() is None:
                    run.notes.append("still running after 600 s: killed")
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                self._reap(proc.pid, run)
        run.seconds = round(time.monotonic() - started, 2)
        run.finished = bool(state_finished(self.out))
        run.served = [
            s.path for s in self.access.read()[before:] if s.path != "/robots.txt"
        ]
        if not run.finished:
            origin = self.argv[self.argv.index("-a") + 1].split("=", 1)[1].rstrip("/")
            by_url = {origin + path: path for path in set(run.served)}
            run.in_flight = sorted(
                by_url[u] for u in state_not_done(self.out, set(by_url))
            )
        text = log_path.read_text(errors="replace")
        for marker in ("Traceback", "] ERROR:", "CRITICAL"):
            if marker in text:
                run.notes.append(f"{text.count(marker)} x {marker!r} in {log_path}")
        for line in text.splitlines():
            if "Resuming round" in line:
                run.notes.append(line.split("] ", 1)[-1][:160])

    def _stop_at(
        self,
        proc: subprocess.Popen[bytes],
        run: Run,
        rng: random.Random,
        total: int,
        started: float,
    ) -> None:
        assert run.target is not None
        want = min(run.target, 1.0) * total
        if self.served_pages() >= want:
            wait_until = started + rng.uniform(0, 2.0)
        else:
            while proc.poll() is None and self.served_pages() < want:
                time.sleep(0.05)
            extra = rng.uniform(0, 1.0) if run.target > 1 else 0.0
            wait_until = time.monotonic() + extra + rng.uniform(0, 0.3)
        while proc.poll() is None and time.monotonic() < wait_until:
            time.sleep(0.01)
        run.served_at_stop = self.served_pages()
        if proc.poll() is not None:
            run.notes.append("ended before the stop")
            return
        run.children = children_of(proc.pid)
        if run.event == "kill":
            proc.send_signal(signal.SIGKILL)
            return
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(0.1)
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            run.notes.append("did not stop within 120 s of two SIGINTs: killed")
            proc.send_signal(signal.SIGKILL)

    @staticmethod
    def _reap(pgid: int, run: Run) -> None:
        """The crawl's process group and its page worker (a session of its
        own, ended when its stdin is) should follow the crawl out; say if
        they did not."""

        def left() -> bool:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return any(alive(pid) for pid in run.children)
            return True

        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if not left():
                return
            time.sleep(0.05)
        run.notes.append("a process of the crawl outlived it by 5 s: killed")
        with suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        for pid in run.children:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


# --- reading the outputs ---------------------------------------------------------


def read_jsonl(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Objects, and what is wrong with the file (invalid lines, no final
    newline)."""
    if not path.exists():
        return [], []
    data = path.read_bytes()
    objects, problems = [], []
    if data and not data.endswith(b"\n"):
        problems.append(f"{path.name}: last line has no newline")
    for n, line in enumerate(data.splitlines(), 1):
        try:
            obj = json.loads(line)
        except ValueError:
            problems.append(f"{path.name}:{n}: invalid JSON: {line[:80]!r}")
            continue
        if isinstance(obj, dict):
            objects.append(obj)
        else:
            problems.append(f"{path.name}:{n}: not an object")
    return objects, problems


def tree(root: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under ``root``."""
    if not root.exists():
        return {}
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file()
    }


@dataclass
class Report:
    failures: list[str] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)

    def differ(self, part: str, what: str, examples: list[Any]) -> None:
        line = f"{part}: {what}" + (
            f" (e.g. {'; '.join(map(str, examples[:3]))})" if examples else ""
        )
        self.failures.append(line)


def compare(ref: Path, got: Path, site_links: dict[str, list[str]]) -> Report:
    report = Report()
    invalid = []
    for path in sorted(got.glob("*.jsonl")):
        invalid += read_jsonl(path)[1]
    report.figures["invalid_lines"] = len(invalid)
    for problem in invalid:
        report.failures.append(problem)

    ref_pages = {p["url"]: p for p in read_jsonl(ref / "pages.jsonl")[0]}
    got_lines = read_jsonl(got / "pages.jsonl")[0]
    got_pages = {p["url"]: p for p in got_lines}
    lost = sorted(set(ref_pages) - set(got_pages))
    extra = sorted(set(got_pages) - set(ref_pages))
    dup = [(u, c) for u, c in Counter(p["url"] for p in got_lines).items() if c > 1]
    report.figures |= {
        "pages_reference": len(ref_pages),
        "pages_killed": len(got_pages),
        "pages_lost": len(lost),
        "pages_extra": len(extra),
        "duplicate_lines": sum(c - 1 for _u, c in dup),
    }
    if lost:
        report.differ("pages.jsonl", f"{len(lost)} pages lost", lost)
    if extra:
        report.differ("pages.jsonl", f"{len(extra)} pages not in the reference", extra)
    if dup:
        report.differ("pages.jsonl", f"{len(dup)} URLs on several lines", dup)
    base = next(iter(ref_pages), "http://x/").split("/", 3)
    origin = "/".join(base[:3])
    fields: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    bad_referers = []
    for url in set(ref_pages) & set(got_pages):
        a, b = ref_pages[url], got_pages[url]
        for key in sorted(set(a) | set(b)):
            if key in ("fetched_at", "referer"):
                continue
            if a.get(key) != b.get(key):
                fields[key] += 1
                examples.setdefault(key, []).append(
                    f"{url}: {a.get(key)!r} -> {b.get(key)!r}"
                )
        referer = b.get("referer")
        path = url[len(origin) :] or "/"
        if referer is None:
            if a.get("referer") is not None:
                bad_referers.append(url)
        elif path not in site_links.get(referer[len(origin) :] or "/", ()):
            bad_referers.append(f"{url} <- {referer}")
    for key, count in fields.items():
        part = "duplicates" if key == "duplicate_of" else "pages.jsonl"
        report.differ(part, f"field {key!r} differs on {count} pages", examples[key])
    if bad_referers:
        report.differ(
            "pages.jsonl",
            f"{len(bad_referers)} referers that do not link to the page",
            bad_referers,
        )

    _compare_broken(report, ref, got)
    _compare_summary(report, ref, got)
    _compare_report_html(report, ref, got)
    for name, key in (
        ("mirror-state.jsonl", ("path", "sha256", "hash")),
        ("changes.jsonl", ("change", "path")),
    ):
        _compare_keyed(report, name, ref / name, got / name, key)
    for name in ("deferred.jsonl", "skipped.jsonl"):
        _compare_keyed(report, name, ref / name, got / name, None, ignored=("referer",))
        _check_referers(report, name, got / name, origin, site_links)
    ref_tree, got_tree = tree(ref / "mirror"), tree(got / "mirror")
    report.figures["mirror_files"] = len(got_tree)
    missing = sorted(set(ref_tree) - set(got_tree))
    added = sorted(set(got_tree) - set(ref_tree))
    changed = sorted(
        p for p in set(ref_tree) & set(got_tree) if ref_tree[p] != got_tree[p]
    )
    if missing:
        report.differ("mirror", f"{len(missing)} files missing", missing)
    if added:
        report.differ("mirror", f"{len(added)} files not in the reference", added)
    spelled = [p for p in changed if _same_links(ref / "mirror", got / "mirror", p)]
    changed = [p for p in changed if p not in set(spelled)]
    report.figures["mirror_files_links_spelled_otherwise"] = len(spelled)
    if spelled:
        report.differ(
            "mirror",
            f"{len(spelled)} files whose links lead to the same files, "
            "spelled otherwise (e.g. ../0/5.html for 5.html)",
            spelled,
        )
    if changed:
        report.differ("mirror", f"{len(changed)} files with other bytes", changed)
    return report


HREF = re.compile(rb'(?:href|src)="([^"]*)"')


def _same_links(ref: Path, got: Path, rel: str) -> bool:
    """Whether two versions of a mirrored page differ only in how their
    relative links are written, each leading to the same file."""
    a, b = (ref / rel).read_bytes(), (got / rel).read_bytes()
    if HREF.sub(b"", a) != HREF.sub(b"", b):
        return False
    folder = posixpath.dirname(rel)

    def targets(body: bytes) -> list[str]:
        out = []
        for value in HREF.findall(body):
            link = value.decode("utf-8", "replace")
            if "://" in link or link.startswith(("/", "#")):
                out.append(link)
            else:
                out.append(posixpath.normpath(posixpath.join(folder, link)))
        return out

    return targets(a) == targets(b)


def _compare_broken(report: Report, ref: Path, got: Path) -> None:
    def ledger(path: Path) -> dict[str, Any]:
        return {
            b["url"]: (
                b.get("status"),
                b.get("error"),
                b.get("referrer_count"),
                sorted(
                    (r.get("url"), r.get("text"), r.get("tag"))
                    for r in b.get("referrers", [])
                ),
            )
            for b in read_jsonl(path)[0]
        }

    a, b = ledger(ref / "broken-links.jsonl"), ledger(got / "broken-links.jsonl")
    report.figures["broken_reference"] = len(a)
    report.figures["broken_killed"] = len(b)
    if set(a) != set(b):
        gone, new = sorted(set(a) - set(b)), sorted(set(b) - set(a))
        report.differ(
            "broken-links.jsonl",
            f"{len(gone)} broken URLs missing, {len(new)} not in the reference",
            gone + new,
        )
    other = [
        f"{u}: {len(a[u][3])} referrers -> {len(b[u][3])}"
        for u in sorted(set(a) & set(b))
        if a[u] != b[u]
    ]
    if other:
        report.differ(
            "broken-links.jsonl", f"{len(other)} entries differ (referrers)", other
        )


def _compare_summary(report: Report, ref: Path, got: Path) -> None:
    try:
        a = json.loads((ref / "summary.json").read_text())
        b = json.loads((got / "summary.json").read_text())
    except (OSError, ValueError) as exc:
        report.failures.append(f"summary.json: unreadable: {exc}")
        return
    for key in SUMMARY_KEYS:
        if a.get(key) != b.get(key):
            part = "duplicates" if key == "duplicates" else "summary.json"
            if key == "broken":
                part = "broken-links.jsonl"
            report.differ(part, f"{key}: {a.get(key)!r} -> {b.get(key)!r}", [])


#: report.html's words that tell when and how much was downloaded: the work
#: done, not the site (a killed crawl fetches some pages again)
_WORK = (
    re.compile(r"· started \S+ \S+ UTC · ran [0-9.hms ]+? (?=\d+ Pages)"),
    re.compile(r"[0-9.]+ [KMGT]?i?B Downloaded [0-9.hms ]+? Elapsed"),
)


def report_text(path: Path) -> list[str]:
    """report.html's words, markup and the work done left out (and the
    output folder, which differs)."""
    html = path.read_text("utf-8", errors="replace")
    html = html.replace(str(path.parent), "<output>")
    html = re.sub(r"<style.*?</style>", " ", html, flags=re.S)
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()
    for pattern in _WORK:
        text = pattern.sub(" ", text)
    return text.split()


def _compare_report_html(report: Report, ref: Path, got: Path) -> None:
    try:
        a, b = report_text(ref / "report.html"), report_text(got / "report.html")
    except OSError as exc:
        report.failures.append(f"report.html: unreadable: {exc}")
        return
    if a != b:
        at = next(
            (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
            min(len(a), len(b)),
        )
        report.differ(
            "report.html",
            f"the text differs from word {at}",
            [" ".join(a[at - 5 : at + 8]), " ".join(b[at - 5 : at + 8])],
        )


def _compare_keyed(
    report: Report,
    name: str,
    ref: Path,
    got: Path,
    keys: tuple[str, ...] | None,
    *,
    ignored: tuple[str, ...] = (),
) -> None:
    """``name``'s lines in both, as multisets (``keys``: only the URL and
    those fields; ``ignored``: all but those fields)."""

    def rows(path: Path) -> Counter[str]:
        out: Counter[str] = Counter()
        for obj in read_jsonl(path)[0]:
            kept = obj if keys is None else {k: obj.get(k) for k in ("url", *keys)}
            for key in ignored:
                kept.pop(key, None)
            out[json.dumps(kept, sort_keys=True)] += 1
        return out

    a, b = rows(ref), rows(got)
    if a != b:
        report.differ(
            name,
            f"{sum((a - b).values())} lines missing, "
            f"{sum((b - a).values())} not in the reference",
            list((a - b) or (b - a))[:3],
        )


def _check_referers(
    report: Report,
    name: str,
    got: Path,
    origin: str,
    site_links: dict[str, list[str]],
) -> None:
    """Each of ``name``'s referers is a page of the site that links to the
    line's URL (or the line has none)."""
    bad = []
    for obj in read_jsonl(got)[0]:
        referer, url = obj.get("referer"), obj["url"]
        if referer is None or not url.startswith(origin):
            continue
        path = url[len(origin) :] or "/"
        if path not in site_links.get(referer[len(origin) :] or "/", ()):
            bad.append(f"{url} <- {referer}")
    if bad:
        report.differ(name, f"{len(bad)} referers that do not link to the URL", bad)


# --- the run ---------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pages", type=int, default=2000)
    p.add_argument("--kills", type=int, default=20)
    p.add_argument("--sigints", type=int, default=5, help="double SIGINTs")
    p.add_argument("--seed", type=int, default=14)
    p.add_argument("--max-depth", type=int, default=2, help="0: no depth cap")
    p.add_argument("--mirror", type=int, default=1, help="0: crawl with mirror=0")
    p.add_argument("--missing", type=int, default=30, help="404 URLs in the site")
    p.add_argument("--duplicates", type=int, default=5)
    p.add_argument("--workdir", type=Path, default=Path("/tmp/webspider-killresume"))
    p.add_argument("--project", type=Path, default=HERE.parent.parent)
    p.add_argument("--out", type=Path, default=HERE.parent / "results")
    p.add_argument("--name", default="killresume")
    p.add_argument(
        "-s",
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="Scrapy setting for every crawl, e.g. WEBSPIDER_STATE_COMMIT_PAGES=0",
    )
    args = p.parse_args(argv)
    # a plain kill ends the run as Ctrl-C does: nginx and the crawl stopped
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    rng = random.Random(args.seed)
    root = synth.generate(
        args.workdir,
        args.pages,
        seed=args.seed,
        spread=0.02,
        missing=args.missing,
        duplicates=args.duplicates,
        links=True,
    )
    site_links: dict[str, list[str]] = synth.manifest(root)["links"]  # type: ignore[assignment]
    extra = ["-s", "WEBSPIDER_PROGRESS=off"]
    for setting in args.set:
        extra += ["-s", setting]
    if args.max_depth:
        extra += ["-a", f"max_depth={args.max_depth}"]
    if not args.mirror:
        extra += ["-a", "mirror=0"]
    project = args.project.resolve()
    env = contenders.webspider("http://x/", args.workdir, project).env
    ref_out, got_out = args.workdir / "reference", args.workdir / "killed"
    for out in (ref_out, got_out, args.workdir / "logs"):
        shutil.rmtree(out, ignore_errors=True)
    with sites.static_server(root) as (port, access):
        url = f"http://127.0.0.1:{port}/"
        logs = args.workdir / "logs"
        access.mark()
        reference = Crawls(
            ref_out,
            argv=command(url, ref_out, project, extra),
            env=env,
            cwd=project,
            access=access,
            logs=logs,
        )
        ref_run = Run(0, "finish", None)
        reference.run(ref_run, rng, 0)
        total = reference.served_pages()
        print(
            f"reference: {total} pages served in {ref_run.seconds} s, "
            f"exit {ref_run.exit}, finished {ref_run.finished} {ref_run.notes}",
            file=sys.stderr,
        )
        if ref_run.exit != 0 or not ref_run.finished:
            print("the reference crawl did not finish", file=sys.stderr)
            return 2
        time.sleep(0.1)
        access.mark()
        killed = Crawls(
            got_out,
            argv=command(url, got_out, project, extra),
            env=env,
            cwd=project,
            access=access,
            logs=logs,
        )
        events = ["kill"] * args.kills + ["sigint"] * args.sigints
        rng.shuffle(events)
        targets = sorted(rng.uniform(0, 1.08) for _ in events)
        runs: list[Run] = []
        for event, target in zip(events, targets, strict=True):
            run = Run(len(runs) + 1, event, round(target, 3))
            killed.run(run, rng, total)
            runs.append(run)
            _print_run(run)
            if run.finished:
                break
        while not (runs and runs[-1].finished) and len(runs) < len(events) + 5:
            run = Run(len(runs) + 1, "finish", None)
            killed.run(run, rng, total)
            runs.append(run)
            _print_run(run)
        time.sleep(0.1)
        served = Counter(
            (s.method, s.path) for s in access.read() if s.path != "/robots.txt"
        )
    report = compare(ref_out, got_out, site_links)
    again = {u: c for u, c in served.items() if c > 1}
    beyond = refetched_beyond_in_flight(runs)
    report.figures |= {
        "runs": len(runs),
        "kills": sum(r.event == "kill" for r in runs),
        "double_sigints": sum(r.event == "sigint" for r in runs),
        "finished": bool(runs and runs[-1].finished),
        "requests": sum(served.values()),
        "refetched_urls": len(again),
        "refetched_requests": sum(c - 1 for c in again.values()),
        "fetched_3_times_or_more": sum(c > 2 for c in again.values()),
        "in_flight_at_stops": sum(len(r.in_flight) for r in runs),
        "refetched_beyond_in_flight": sum(beyond.values()),
    }
    if beyond:
        report.differ(
            "refetched",
            f"{sum(beyond.values())} fetches of {len(beyond)} URLs beyond "
            "what was in flight at a stop",
            sorted(beyond.items())[:3],
        )
    if not report.figures["finished"]:
        report.failures.append("the killed crawl never finished")
    failed = bool(report.failures)
    text = _text(report, runs, failed)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(
        json.dumps(
            {
                "command": "python bench/scale/killresume.py "
                + " ".join(sys.argv[1:] if argv is None else argv),
                "figures": report.figures,
                "failures": report.failures,
                "runs": [
                    {k: v for k, v in r.__dict__.items() if k != "served"}
                    | {"served": len(r.served)}
                    for r in runs
                ],
            },
            indent=1,
        )
        + "\n"
    )
    return 1 if failed else 0


def refetched_beyond_in_flight(runs: list[Run]) -> Counter[str]:
    """Fetches of a URL beyond its first and one more per stop at which it
    was in flight (served by the stopped run, not done in the state)."""
    fetched: Counter[str] = Counter()
    allowed: Counter[str] = Counter()
    beyond: Counter[str] = Counter()
    for run in runs:
        for path in run.served:
            fetched[path] += 1
            if fetched[path] > 1 + allowed[path]:
                beyond[path] += 1
        for path in run.in_flight:
            allowed[path] += 1
    return beyond


def _print_run(run: Run) -> None:
    print(
        f"run {run.n:2d} {run.event:<6} at {run.target} -> served {run.served_at_stop}"
        f", {run.seconds} s, exit {run.exit}, finished {run.finished}"
        + (f"; {'; '.join(run.notes)}" if run.notes else ""),
        file=sys.stderr,
    )


def _text(report: Report, runs: list[Run], failed: bool) -> str:
    f = report.figures
    lines = [
        f"{f['runs']} runs: {f['kills']} kill -9, {f['double_sigints']} double "
        f"SIGINT; finished: {f['finished']}",
        f"pages: reference {f['pages_reference']}, killed crawl {f['pages_killed']}; "
        f"lost {f['pages_lost']}, duplicate lines {f['duplicate_lines']}, "
        f"invalid lines {f['invalid_lines']}",
        f"requests {f['requests']} (robots.txt aside); refetched "
        f"{f['refetched_requests']} requests of {f['refetched_urls']} URLs "
        f"({f['fetched_3_times_or_more']} fetched 3 times or more); in flight at "
        f"the stops {f['in_flight_at_stops']}, refetched beyond that "
        f"{f['refetched_beyond_in_flight']}",
    ]
    lines += ["differs (must not):"] + [f"  {x}" for x in report.failures or ["-"]]
    lines.append("FAILED" if failed else "OK")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
