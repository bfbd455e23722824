"""Downloader middlewares: which requests go out (scope, robots.txt, politeness)."""
