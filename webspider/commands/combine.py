"""``scrapy combine OUT [OUT …] -o COMBINED``: the workers' outputs of a shared
crawl as one crawl's (webspider.reports.combine says what it chooses).

Each OUT is a worker's folder or a folder holding ``worker-<n>`` folders
(the ``-a output`` given to workers on one machine); folders copied from
several machines are given side by side. Bad input (a missing folder, one
that is not a webspider output, an output overlapping an input, an output
that holds something else) is one line, ``webspider: error: …``, and exit
status 2, before anything is written; the inputs are only read. A
combination stopped halfway (Ctrl-C: one line, exit status 130; a kill; an
error reading an input) is replaced by running the same command again.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from webspider.config import ConfigError
from webspider.reports.options import ReportOptions

if TYPE_CHECKING:
    import argparse

logger = logging.getLogger(__name__)

EXIT_USAGE = 2
#: stopped with Ctrl-C (128 + SIGINT, as a shell reports it)
EXIT_INTERRUPTED = 130


class Command(ScrapyCommand):
    requires_project = False
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": True}

    def syntax(self) -> str:
        return "OUTPUT [OUTPUT ...] -o COMBINED"

    def short_desc(self) -> str:
        return "Combine the output folders of a shared crawl's workers into one"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "-o",
            "--output",
            metavar="FOLDER",
            required=True,
            help="the combined output (a new or empty folder, or an earlier "
            "combination, which is replaced)",
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if not args:
            raise UsageError("give the output folders to combine")
        assert self.settings is not None
        # Scrapy's command line imports every command module to list the
        # commands, so each `scrapy crawl` (every worker) would load and,
        # without bytecode, compile the combination's code it never runs
        from webspider.reports.combine import combine, worker_folders  # noqa: PLC0415

        try:
            given = [Path(a).expanduser() for a in args]
            inputs = worker_folders(given)
            largest = ReportOptions.of(self.settings).report_largest
            output = Path(opts.output).expanduser()
            result = combine(inputs, output, largest=largest, given=given)
        except (ConfigError, OSError) as exc:
            print(f"webspider: error: {exc}", file=sys.stderr)
            self.exitcode = EXIT_USAGE
            return
        except KeyboardInterrupt:
            print(
                f"webspider: interrupted: {opts.output} is incomplete; run the "
                "same command again to combine",
                file=sys.stderr,
            )
            self.exitcode = EXIT_INTERRUPTED
            return
        logger.info(
            "Combined %d outputs into %s: %d pages (%d repeated lines and %d "
            "unreadable ones left out), %d mirror files (%d written by more "
            "than one worker, %d of them with different copies; %d links "
            "fixed up in %d pages)",
            len(inputs),
            opts.output,
            result.pages_lines,
            result.repeated,
            result.unreadable,
            result.mirror.files,
            result.mirror.shared,
            result.mirror.differing,
            result.fixed.links,
            result.fixed.pages,
        )
        for line in result.summary.log_lines():
            logger.info("%s", line)
