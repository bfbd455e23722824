"""Pure helpers: nothing in this package imports the crawler, so each module is
tested with plain tables of inputs and outputs."""
