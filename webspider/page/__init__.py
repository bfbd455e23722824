"""The one scan of a page: the response's side tables, the scanner, link
extraction and the link-following rules."""
