"""Extensions: crawl-wide services (skipped-URL log, progress, reports)."""
