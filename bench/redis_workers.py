# ruff: noqa: E501 -- figures printed on one line each
"""Many workers, one crawl: the Redis crawl state measured.

    python bench/redis_workers.py seen [--urls 1000000]
        Redis memory of the seen-set: URLs pushed through RedisState (added,
        leased, acknowledged: what a finished crawl keeps), ``INFO memory``
        used_memory before and after, per URL; and the seen-set's buckets
        alone (MEMORY USAGE of every ``s:*`` hash).

    python bench/redis_workers.py workers [--site latency|latency-docs|synthetic] [--pages 3000] [--workers 1 4] [--embedded] [-s NAME=VALUE] [--round-trips]
        Pages/s of 1 and of N ``scrapy crawl`` workers sharing one crawl on
        Redis, start-up included. ``latency``: the issue's latency-bound
        site, ``--pages`` small synthetic pages (bench/scale/synth.py, 2-4
        KB, 20-50 links) served by nginx behind a proxy adding 200 ms to
        every response (8 requests in flight per worker, 32 per origin
        allowed); ``latency-docs``: python3.11-doc behind the same proxy
        (546 big pages, depth 2: CPU-bound at 4 workers on 2 cores);
        ``synthetic`` is 10,000 small pages (32 per origin allowed: the
        workers share that limit). On the latency sites the proxy is
        checked alone first (48 clients: requests in flight and its CPU),
        and each worker sends ``User-Agent: bench-worker-<i>``.
        webspider's bytecode is compiled first (``compileall``, as ``pip
        install`` does; ``--no-compile``: not, so on a machine with
        PYTHONDONTWRITEBYTECODE each worker compiles it as it starts).
        ``--embedded``: one process on the embedded state first, for
        comparison. Each run prints its CPU seconds (workers and page
        workers; redis-server and the proxy apart) and the load average
        before it; on the latency sites also the requests in flight at the
        proxy (mean, and per second of the run) and each worker's first
        request (its start-up). ``-s``: a setting for every worker (may be
        repeated); ``--round-trips``: each worker counts its Redis round
        trips by call site (bench/roundtrips/sitecustomize.py), printed per
        page.

    python bench/redis_workers.py killone [--times 5] [--pages 600] [--seed 1]
        ``kill -9`` of 1 of 3 workers at a random moment (a random share of
        the pages written), ``--times`` runs; each run's outputs combined
        (``scrapy combine``) and compared with one process's crawl of the
        same site (a generated tree of pages with stylesheets, an image,
        broken links and a duplicate, served by nginx): pages lost or extra,
        pages fetched again (in two workers' files), mirror files missing,
        extra or with other bytes, relative links leading nowhere, broken
        links or referrers differing, summary counts differing.

A redis-server is started on a free port for the run (``redis-server`` from
the distribution). Figures go to stdout; bench/README.md keeps them.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import os
import random
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import redis  # noqa: E402
from sites import static_server  # noqa: E402

from webspider.frontier.redisstate import RedisState, crawl_prefix  # noqa: E402
from webspider.frontier.state import StoredRequest  # noqa: E402


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        binary = shutil.which("redis-server")
        if binary is None:
            raise SystemExit(
                "redis-server is not installed (apt-get install redis-server)"
            )
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--save", "", "--appendonly", "no",
             "--dir", str(directory)],
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        client = redis.Redis.from_url(self.url)
        for _ in range(200):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait()


def used_memory(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def bench_seen(url: str, n: int) -> None:
    client = redis.Redis.from_url(url)
    state = RedisState(url, "bench")
    before = used_memory(client)
    started = time.monotonic()
    batch = 2000
    # a site's URLs: one origin, paths of 20-40 characters
    for start in range(0, n, batch):
        requests = []
        for i in range(start, min(n, start + batch)):
            u = f"http://www.example.org/section{i % 97}/page-{i}.html"
            requests.append(StoredRequest(key=u, url=u, depth=1 + i % 5))
        state.add(requests)
    added = time.monotonic() - started
    after_add = used_memory(client)
    while True:
        leases = state.lease(5000, deadline=time.time() + 600, strict=False)
        if not leases:
            break
        state.ack([lease.ticket for lease in leases])
    drained = time.monotonic() - started - added
    after_done = used_memory(client)
    buckets = 0
    prefix = crawl_prefix("bench").replace("{", "\\{").replace("}", "\\}")
    encodings: dict[bytes, int] = {}
    for key in client.scan_iter(match=prefix + "s:*", count=1000):
        buckets += int(client.memory_usage(key, samples=0) or 0)
        enc = client.object("encoding", key)
        encodings[enc] = encodings.get(enc, 0) + 1
    started = time.monotonic()
    probes = [
        f"http://www.example.org/section{i % 97}/page-{i}.html"
        for i in range(0, n, max(1, n // 100_000))
    ]
    for i in range(0, len(probes), 1000):
        state.contains_many(probes[i : i + 1000])
    checks = len(probes) / (time.monotonic() - started)
    print(f"URLs: {n:,} (add {n / added:,.0f}/s, lease+ack {n / drained:,.0f}/s)")
    print(f"used_memory with all queued: {(after_add - before) / n:.1f} bytes/URL")
    print(
        f"used_memory when all done (the seen-set and counters): {(after_done - before) / n:.1f} bytes/URL"
    )
    print(
        f"seen-set buckets alone (MEMORY USAGE): {buckets / n:.1f} bytes/URL, encodings {encodings}"
    )
    print(f"membership checks (batches of 1000, one client): {checks:,.0f}/s")


def crawl_workers(
    site_url: str,
    workers: int,
    state_url: str | None,
    key: str,
    extra: list[str],
    *,
    round_trips: Path | None = None,
    name_workers: bool = False,
) -> tuple[float, int]:
    """Seconds and pages of ``workers`` workers on Redis at ``state_url``
    (None: one process on the embedded state); ``round_trips``: a folder
    where each worker writes its Redis round trips by call site;
    ``name_workers``: worker i sends ``User-Agent: bench-worker-i`` (the
    latency proxy logs it, so each worker's first request is seen)."""
    out = Path(tempfile.mkdtemp(prefix="webspider-bench-workers-"))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if round_trips is not None:
        env["PYTHONPATH"] = f"{HERE / 'roundtrips'}{os.pathsep}{ROOT}"
        env["WEBSPIDER_BENCH_ROUND_TRIPS"] = str(round_trips)
    shared = ["-s", f"WEBSPIDER_STATE={state_url}", "-s", f"WEBSPIDER_STATE_KEY={key}"]
    command = [
        sys.executable, "-m", "scrapy", "crawl", "webspider",
        "-a", f"url={site_url}", "-a", f"output={out}", "-a", "mirror=0",
        *(shared if state_url is not None else []),
        "-s", "WEBSPIDER_PROGRESS=off", "-s", "LOG_LEVEL=WARNING",
        *extra,
    ]  # fmt: skip
    commands = [
        [*command, "-s", f"USER_AGENT=bench-worker-{i}"] if name_workers else command
        for i in range(1, workers + 1)
    ]
    started = time.monotonic()
    procs = [subprocess.Popen(c, cwd=ROOT, env=env) for c in commands]
    codes = [p.wait() for p in procs]
    seconds = time.monotonic() - started
    if any(codes):
        print(f"  exit codes {codes}")
    files = out.glob("worker-*/pages.jsonl") if state_url else [out / "pages.jsonl"]
    pages = sum(sum(1 for _ in path.open()) for path in files)
    shutil.rmtree(out, ignore_errors=True)
    return seconds, pages


def children_cpu() -> float:
    """CPU seconds of the ended child processes (the workers, their page
    workers)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def redis_cpu(url: str) -> float:
    info = redis.Redis.from_url(url).info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def flight(timings: Path, started: float) -> str:
    """How many requests the latency proxy had in flight: the mean between
    the first request and the last response, the share of that time with
    fewer than 8, and per second of the crawl."""
    spans = []
    firsts: dict[str, float] = {}
    for line in timings.read_text().splitlines():
        begin, end, agent, _path = line.split(" ", 3)
        spans.append((float(begin), float(end)))
        firsts[agent] = min(firsts.get(agent, float(begin)), float(begin))
    timings.write_text("")  # the proxy appends: the next run starts empty
    if not spans:
        return "  no requests"
    first, last = min(b for b, _ in spans), max(e for _, e in spans)
    events = sorted([(b, 1) for b, _ in spans] + [(e, -1) for _, e in spans])
    level, prev, under8 = 0, first, 0.0
    per_second: list[float] = [0.0] * (int(last - started) + 1)
    for t, step in events:
        if level < 8:
            under8 += t - prev
        # spread the level over the seconds it covers
        a = prev
        while a < t:
            sec = int(a - started)
            b = min(t, started + sec + 1)
            per_second[sec] += level * (b - a)
            a = b
        level += step
        prev = t
    busy = sum(e - b for b, e in spans)
    workers = ""
    if len(firsts) > 1 or "-" not in firsts:
        workers = (
            "each worker's first request at "
            + ", ".join(f"{t - started:.1f}" for _agent, t in sorted(firsts.items()))
            + " s; "
        )
    return (
        f"  first request at {first - started:.1f} s, last response at {last - started:.1f} s; {workers}"
        f"in flight: mean {busy / (last - first):.1f}, fewer than 8 for {under8 / (last - first):.0%} of that time; "
        "per second: " + " ".join(f"{x:.0f}" for x in per_second)
    )


def proxy_cpu() -> float:
    """CPU seconds of the running latency proxy (a child of this process)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        for pid in (task / "children").read_text().split():
            with contextlib.suppress(OSError):
                if b"latency_proxy.py" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                    continue
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / tick
    return total


def proxy_check(
    site_url: str, timings: Path, clients: int = 48, seconds: float = 4.0
) -> str:
    """The proxy alone, before the crawls: ``clients`` keep-alive
    connections each fetching / again as soon as its answer came; the
    requests in flight at the proxy show whether it holds more than the
    32 the workers may have together."""
    import asyncio  # noqa: PLC0415

    parts = urlsplit(site_url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    request = (
        f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: check\r\n\r\n".encode()
    )

    async def client(stop: float) -> int:
        reader, writer = await asyncio.open_connection(host, port)
        done = 0
        while time.monotonic() < stop:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = re.search(rb"(?i)content-length: *(\d+)", head)
            await reader.readexactly(int(length.group(1)) if length else 0)
            done += 1
        writer.close()
        return done

    async def run() -> int:
        stop = time.monotonic() + seconds
        return sum(await asyncio.gather(*(client(stop) for _ in range(clients))))

    started = time.time()
    cpu = proxy_cpu()
    done = asyncio.run(run())
    cpu = proxy_cpu() - cpu
    return (
        f"proxy check: {clients} clients, {done / seconds:.0f} responses/s "
        f"(at most {clients / 0.2:.0f} with 200 ms each), proxy CPU {cpu / seconds:.2f} s a second;\n"
        + flight(timings, started)
    )


def round_trip_table(folder: Path, pages: int) -> str:
    """The workers' Redis round trips (bench/roundtrips), per page."""
    total: dict[str, int] = {}
    for path in folder.glob("*.json"):
        for site, n in json.loads(path.read_text()).items():
            total[site] = total.get(site, 0) + n
        path.unlink()
    overall = sum(total.values())
    rows = [f"  round trips: {overall} = {overall / max(pages, 1):.2f} a page"]
    for site, n in sorted(total.items(), key=lambda kv: -kv[1]):
        rows.append(f"    {n / max(pages, 1):6.2f}  {n:7d}  {site}")
    return "\n".join(rows)


def bench_workers(
    url: str,
    site_name: str,
    counts: list[int],
    embedded: bool,
    *,
    extra_settings: list[str] | None = None,
    count_round_trips: bool = False,
    pages: int = 3000,
    compiled: bool = True,
) -> None:
    from sites import latency_site, synthetic_site  # noqa: PLC0415

    timings: Path | None = None
    if site_name == "latency-docs":
        timings = Path(tempfile.mkdtemp(prefix="webspider-bench-flight-")) / "log"
        context = latency_site(0.2, timings)
        extra = ["-s", "CONCURRENT_REQUESTS=8", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=32",
                 "-a", "max_depth=2", "-a", "defer=0"]  # fmt: skip
    elif site_name == "latency":
        from scale.synth import generate  # noqa: PLC0415

        timings = Path(tempfile.mkdtemp(prefix="webspider-bench-flight-")) / "log"
        # pages only (no 404s, no twins): each request is a page of pages.jsonl
        root = generate(
            Path(tempfile.gettempdir()) / "webspider-bench-latency",
            pages,
            missing=0,
            duplicates=0,
        )
        about = f"{pages:,} synthetic small pages (bench/scale/synth.py)"
        context = latency_site(0.2, timings, root, about)
        extra = ["-s", "CONCURRENT_REQUESTS=8", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=32"]  # fmt: skip
    else:
        context = synthetic_site(10_000, 30)
        # the per-origin limit is shared by the workers (politeness): at
        # Scrapy's 8 it would hold back one worker already (16 requests
        # in flight allowed), and the site is meant to be CPU-bound
        extra = ["-s", "CONCURRENT_REQUESTS_PER_DOMAIN=32"]
    for setting in extra_settings or []:
        extra += ["-s", setting]
    round_trips = None
    if count_round_trips:
        round_trips = Path(tempfile.mkdtemp(prefix="webspider-bench-rt-"))
    runs: list[tuple[str, int, str | None]] = [
        (f"{n} worker(s)", n, url) for n in counts
    ]
    if embedded:
        runs.insert(0, ("embedded state, 1 process", 1, None))
    if compiled:
        # as an installed package has (pip compiles it): without, on a
        # machine that sets PYTHONDONTWRITEBYTECODE (this one does), every
        # worker compiles webspider from source as it starts
        compileall.compile_dir(ROOT / "webspider", quiet=1)
    with context as site:
        print(
            f"{site_name}: {site.description}; webspider's bytecode "
            + ("compiled first" if compiled else "not compiled (--no-compile)"),
            flush=True,
        )
        if timings is not None:
            print(proxy_check(site.url, timings), flush=True)
        for label, n, state_url in runs:
            load = os.getloadavg()[0]
            started = time.time()
            cpu, rcpu, pcpu = children_cpu(), redis_cpu(url), proxy_cpu()
            seconds, done = crawl_workers(
                site.url,
                n,
                state_url,
                f"bench-{site_name}-{n}",
                extra,
                round_trips=round_trips,
                name_workers=timings is not None,
            )
            cpu, rcpu = children_cpu() - cpu, redis_cpu(url) - rcpu
            proxy = f", proxy {proxy_cpu() - pcpu:.1f} s" if timings is not None else ""
            print(
                f"{site_name}: {label}: {done} pages in {seconds:.1f} s = {done / seconds:.1f} pages/s; "
                f"CPU {cpu:.1f} s (+ redis-server {rcpu:.1f} s{proxy}); load average {load:.2f} before",
                flush=True,
            )
            if round_trips is not None and state_url is not None:
                print(round_trip_table(round_trips, done), flush=True)
            if timings is not None and timings.exists():
                print(flight(timings, started))


# -- kill -9 of one worker ------------------------------------------------------------
_LINK = re.compile(rb"""(?:href|src)="([^"]*)"|url\(([^)]*)\)""")


def killone_site(root: Path, pages: int) -> None:
    """A tree of ``pages`` pages (two children each, a link home), a
    stylesheet (with an image) on every fifth, a broken link on every
    seventh, and a duplicate of page 4."""
    (root / "p").mkdir(parents=True)
    for i in range(pages):
        children = [f"/p/{c}.html" for c in (2 * i + 1, 2 * i + 2) if c < pages]
        links = [*children, "/index.html"]
        if i % 7 == 0:
            links.append(f"/missing/{i % 3}.html")
        if i == 9:
            links.append("/copy-of-4.html")
        head = '<link rel="stylesheet" href="/s.css">' if i % 5 == 0 else ""
        body = "".join(f'<a href="{link}">{link}</a> ' for link in links)
        text = f"<!DOCTYPE html><html><head><title>{i}</title>{head}</head><body>{body}</body></html>"
        (root / ("index.html" if i == 0 else f"p/{i}.html")).write_text(text)
    (root / "copy-of-4.html").write_bytes((root / "p/4.html").read_bytes())
    (root / "s.css").write_text("body { background: url(/img.png) }")
    (root / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))


def run_combine(inputs: list[Path], output: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    subprocess.run(
        [sys.executable, "-m", "scrapy", "combine", *map(str, inputs), "-o", str(output)],
        cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def crawl_command(site_url: str, out: Path, extra: list[str]) -> list[str]:
    return [
        sys.executable, "-m", "scrapy", "crawl", "webspider",
        "-a", f"url={site_url}", "-a", f"output={out}",
        "-s", "WEBSPIDER_PROGRESS=off", "-s", "LOG_LEVEL=WARNING",
        "-s", "RETRY_TIMES=0", "-s", "CONCURRENT_REQUESTS=4",
        *extra,
    ]  # fmt: skip


def outputs(folder: Path) -> dict[str, object]:
    """What is compared of a (combined) output folder."""
    pages = [json.loads(line)["url"] for line in (folder / "pages.jsonl").open()]
    mirror = folder / "mirror"
    files = {
        p.relative_to(mirror).as_posix(): p.read_bytes()
        for p in mirror.rglob("*")
        if p.is_file()
    }
    broken = {}
    for line in (folder / "broken-links.jsonl").open():
        record = json.loads(line)
        broken[record["url"]] = sorted(
            r["url"] if isinstance(r, dict) else r for r in record["referrers"]
        )
    summary = json.loads((folder / "summary.json").read_text())
    counts = {
        key: summary[key] for key in ("pages", "urls_seen", "broken", "duplicates")
    }
    dangling = 0
    for name, data in files.items():
        if not name.endswith((".html", ".css")):
            continue
        for match in _LINK.finditer(data):
            link = (match.group(1) or match.group(2)).decode().strip("'\"")
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or not parts.path:
                continue
            target = ((mirror / name).parent / unquote(parts.path)).resolve()
            dangling += not target.is_file()
    return {
        "pages": pages,
        "files": files,
        "broken": broken,
        "counts": counts,
        "dangling": dangling,
    }


def bench_killone(state_url: str, times: int, pages: int, seed: int) -> None:
    rng = random.Random(seed)
    work = Path(tempfile.mkdtemp(prefix="webspider-bench-killone-"))
    root = work / "site"
    killone_site(root, pages)
    lease = ["-s", "WEBSPIDER_STATE_LEASE_TIMEOUT=5"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with static_server(root) as (port, log):
        site_url = f"http://127.0.0.1:{port}/"
        alone = work / "alone"
        started = time.monotonic()
        subprocess.run(
            crawl_command(site_url, alone, []), cwd=ROOT, env=env, check=False
        )
        ref = outputs(alone)
        expected = len(ref["pages"])  # type: ignore[arg-type]
        print(f"one process: {time.monotonic() - started:.1f} s, {expected} pages, {len(ref['files'])} mirror files, "  # type: ignore[arg-type]
              f"{len(ref['broken'])} broken URLs, {ref['dangling']} dangling links")  # fmt: skip
        failed = 0
        for run in range(1, times + 1):
            out = work / f"run{run}"
            key = ["-s", f"WEBSPIDER_STATE_KEY=bench-killone-{seed}-{run}"]
            command = crawl_command(
                site_url, out, ["-s", f"WEBSPIDER_STATE={state_url}", *key, *lease]
            )
            log.mark()
            procs = [subprocess.Popen(command, cwd=ROOT, env=env) for _ in range(3)]
            share = rng.uniform(0.1, 0.9)
            started = time.monotonic()
            while True:
                written = sum(
                    path.read_bytes().count(b"\n")
                    for path in out.glob("worker-*/pages.jsonl")
                )
                if written >= share * expected or all(
                    p.poll() is not None for p in procs
                ):
                    break
                time.sleep(0.05)
            alive = [p for p in procs if p.poll() is None]
            victim = rng.choice(alive) if alive else None
            if victim is not None:
                victim.kill()
            codes = [p.wait() for p in procs]
            seconds = time.monotonic() - started
            combined = work / f"combined{run}"
            run_combine([out], combined)
            got = outputs(combined)
            lines: dict[str, int] = {}
            for path in out.glob("worker-*/pages.jsonl"):
                for line in path.read_text().splitlines():
                    with contextlib.suppress(ValueError):
                        url = json.loads(line)["url"]
                        lines[url] = lines.get(url, 0) + 1
            want, have = set(ref["pages"]), set(got["pages"])  # type: ignore[call-overload]
            ref_files, got_files = ref["files"], got["files"]
            assert isinstance(ref_files, dict) and isinstance(got_files, dict)
            differing_files = sum(
                1
                for name in ref_files.keys() & got_files.keys()
                if ref_files[name] != got_files[name]
            )
            ref_broken, got_broken = ref["broken"], got["broken"]
            assert isinstance(ref_broken, dict) and isinstance(got_broken, dict)
            broken_diff = sum(
                1
                for url in ref_broken.keys() | got_broken.keys()
                if ref_broken.get(url) != got_broken.get(url)
            )
            ref_counts, got_counts = ref["counts"], got["counts"]
            assert isinstance(ref_counts, dict) and isinstance(got_counts, dict)
            counts_diff = [k for k in ref_counts if ref_counts[k] != got_counts[k]]
            figures = {
                "lost": len(want - have),
                "extra": len(have - want),
                "repeated lines": len(got["pages"]) - len(have),  # type: ignore[arg-type]
                "files missing": len(ref_files.keys() - got_files.keys()),
                "files extra": len(got_files.keys() - ref_files.keys()),
                "files differing": differing_files,
                "dangling links": got["dangling"],
                "broken differing": broken_diff,
                "summary differing": len(counts_diff),
            }
            bad = any(figures.values())
            failed += bad
            refetched = sum(1 for n in lines.values() if n > 1)
            served: dict[str, int] = {}
            for hit in log.read():
                served[hit.path] = served.get(hit.path, 0) + 1
            twice = sum(
                1 for path, n in served.items() if n > 1 and path != "/robots.txt"
            )
            print(
                f"run {run}: killed a worker at {share:.0%} of the pages, exit codes {codes}, "
                f"{seconds:.1f} s; fetched twice at the server {twice} (robots.txt {served.get('/robots.txt', 0)} times), "
                f"pages in two workers' files {refetched}; "
                + ", ".join(f"{k} {v}" for k, v in figures.items())
                + (f" {counts_diff}" if counts_diff else "")
                + ("  <-- DIFFERS" if bad else "")
            )
        print(f"{times - failed} of {times} runs equal to one process's crawl")
    shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    seen = sub.add_parser("seen")
    seen.add_argument("--urls", type=int, default=1_000_000)
    work = sub.add_parser("workers")
    work.add_argument(
        "--site", choices=["latency", "latency-docs", "synthetic"], default="latency"
    )
    work.add_argument(
        "--pages",
        type=int,
        default=3000,
        help="pages of the latency site (bench/scale/synth.py; generated once)",
    )
    work.add_argument("--workers", type=int, nargs="+", default=[1, 4])
    work.add_argument(
        "--embedded",
        action="store_true",
        help="first one process on the embedded state",
    )
    work.add_argument(
        "-s",
        dest="settings",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting given to every worker (-s CONCURRENT_REQUESTS_PER_DOMAIN=32)",
    )
    work.add_argument(
        "--round-trips",
        action="store_true",
        help="count the workers' Redis round trips by call site (bench/roundtrips)",
    )
    work.add_argument(
        "--no-compile",
        dest="compiled",
        action="store_false",
        help="do not compile webspider's bytecode first (each worker then "
        "compiles it as it starts if PYTHONDONTWRITEBYTECODE is set)",
    )
    kill = sub.add_parser("killone")
    kill.add_argument("--times", type=int, default=5)
    kill.add_argument("--pages", type=int, default=600)
    kill.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(tmp))
        try:
            if args.what == "seen":
                bench_seen(server.url, args.urls)
            elif args.what == "killone":
                bench_killone(server.url, args.times, args.pages, args.seed)
            else:
                bench_workers(
                    server.url,
                    args.site,
                    args.workers,
                    args.embedded,
                    extra_settings=args.settings,
                    count_round_trips=args.round_trips,
                    pages=args.pages,
                    compiled=args.compiled,
                )
        finally:
            server.stop()


if __name__ == "__main__":
    main()
