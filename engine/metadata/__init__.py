"""The metadata table (``.hoodie/metadata``): its records, what readers learn from it, and how
each data instant is recorded in it. Below the table services, which compact and clean it
(:mod:`engine.services.metadata_table`)."""
