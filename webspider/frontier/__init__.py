"""What is left to crawl: the scheduler, the seen-set, the queues, the depth
cap, rounds and the deferred frontier."""
