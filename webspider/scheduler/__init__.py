"""What sits under the crawl: the seen-set (duplicate filter) and, with later
components, the queues and the deferred frontier."""
