"""Reads: query planning, the pure-Arrow reader, filters, log scanning."""
