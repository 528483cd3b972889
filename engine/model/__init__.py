"""The record model: table schemas, record keys, meta fields, payload merge semantics."""
