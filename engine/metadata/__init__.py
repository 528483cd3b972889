"""The metadata table (``.hoodie/metadata``): its records and what readers learn from it."""
