"""Table services: rollback, cleaning, compaction, archival, savepoints and restores, the
metadata table's own compaction and cleaning, and the table lock and heartbeats they run under.
Below the write, which runs them inline and takes their lock; they call no write code (a
compaction's data work comes in as a callable, the runner's ``compact``)."""
