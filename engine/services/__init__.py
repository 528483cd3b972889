"""Table services: cleaning, compaction, archival, and the table lock they run under."""
