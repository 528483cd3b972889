"""The record model: table schemas, record keys, payload merge semantics."""
