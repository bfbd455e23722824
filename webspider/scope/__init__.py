"""What makes a URL out of scope: host/domain/all, include/exclude prefixes
and exclude_re, with the downloader middlewares that apply them."""
