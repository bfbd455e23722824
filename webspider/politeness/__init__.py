"""Being a good guest: robots.txt (RFC 9309), Crawl-delay, Retry-After, the
waiting room, per-host concurrency and sitemaps."""
