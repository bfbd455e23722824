"""The page worker's mirror writes alone: ``SafeTree.plan`` then ``write``.

    python bench/safefs_writes.py --project /path/to/tree --root /dev/shm/x

10,000 files (``--files``) of 2-4 KB in ten folders three levels down, as
the synthetic site's crawl writes them (``<host>/p/<n>/<i>.html``, in a
shuffled order), each planned and then written as the worker does
(webspider.pageworker.worker: ``plan`` when the page is read, ``write``
when it is stored), with the SafeTree of ``--project``'s tree. Prints the
wall time and this process's user and system CPU of the writes. ``--root``
must not exist (a fresh tree each run). On tmpfs (``/dev/shm``) it shows
the cost of the system calls themselves; on ext4 without a journal it
mostly shows how many recently deleted inodes the creations scan past
(bench/README.md, "The page worker's cost of writing the mirror's files").
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--project", type=Path, required=True)
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--files", type=int, default=10_000)
    args = parser.parse_args()
    if args.root.exists():
        parser.error(f"{args.root} exists: give a fresh folder")
    sys.path.insert(0, str(args.project))
    from webspider.mirror.safefs import SafeTree  # noqa: PLC0415 (--project's)

    rng = random.Random(1)
    paths = [
        ("127.0.0.1%3A8080", "p", str(i % 10), f"{i}.html") for i in range(args.files)
    ]
    rng.shuffle(paths)
    bodies = [rng.randbytes(rng.randint(2000, 4000)) for _ in range(64)]
    args.root.parent.mkdir(parents=True, exist_ok=True)
    tree = SafeTree(args.root)
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    for i, path in enumerate(paths):
        tree.plan(path)
        tree.write(path, bodies[i % len(bodies)])
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    tree.close()
    user, system = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    print(f"wall {wall:.3f} user {user:.3f} sys {system:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
