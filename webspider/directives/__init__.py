"""Page directives: meta robots, X-Robots-Tag, rel=nofollow, and the page
events (signals and the spider's own hook)."""
