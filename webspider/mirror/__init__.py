"""How a page becomes a file on disk: paths, safe writes, link rewriting, the
mirror's state, the store, the fix-up, update crawls and the item pipeline."""
