"""Where a worker of a shared (Redis) crawl writes its outputs.

Each worker writes its own files (pages.jsonl, the mirror, the reports):
two processes appending to one file would interleave their lines. Workers
on one machine may be given the same output folder; each then takes a
subfolder of its own, ``<output>/worker-<n>``, with ``n`` the smallest
number no running worker holds. A worker holds its number by an flock() on
``<output>/worker-<n>.lock`` for as long as it runs (the OS releases it
when the process dies, however it dies), so a worker started again after a
crash takes the folder of a dead one back and continues its files.

A worker's name in the shared state (its output offsets are its own) is
``<host>:<absolute worker folder>``.
"""

from __future__ import annotations

import fcntl
import socket
from pathlib import Path
from typing import IO

#: the lock of the worker folder this process holds (kept open while it runs)
_held: dict[Path, tuple[Path, IO[bytes]]] = {}

#: folders tried before giving up (more workers than this on one folder is a mistake)
MAX_WORKERS = 256


def claim_worker_dir(output: Path) -> Path:
    """``<output>/worker-<n>`` for this process (the same one on every call)."""
    output = output.resolve()
    held = _held.get(output)
    if held is not None:
        return held[0]
    output.mkdir(parents=True, exist_ok=True)
    for n in range(1, MAX_WORKERS + 1):
        fh = (output / f"worker-{n}.lock").open("ab")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            continue
        folder = output / f"worker-{n}"
        folder.mkdir(exist_ok=True)
        _held[output] = (folder, fh)
        return folder
    raise OSError(f"{output}: {MAX_WORKERS} workers already write into this folder")


def worker_name(folder: Path) -> str:
    return f"{socket.gethostname()}:{folder.resolve()}"
