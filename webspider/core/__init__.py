"""Replacements for parts of Scrapy's engine room."""
