"""The second process that reads pages and writes the mirror's HTML and CSS:
the crawl's client, the read-ahead middleware, the worker program and its
wire protocol."""
