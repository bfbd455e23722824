"""Project commands (COMMANDS_MODULE): webspider's ``crawl`` replaces Scrapy's."""
