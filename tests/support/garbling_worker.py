"""The page worker, but the index records its store answers carry say the
page is a byte larger than it is (a worker that answers what does not match
the page): run as ``python -m tests.support.garbling_worker``."""

import sys

from webspider.pageworker import worker

_store = worker.Worker.store


def store(self, header):
    answer, spans = _store(self, header)
    record = answer.get("record")
    if record is not None:
        record[1] += 1
    return answer, spans


worker.Worker.store = store

if __name__ == "__main__":
    sys.exit(worker.main())
