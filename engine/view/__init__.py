"""The file system view: file groups and file slices as of an instant, replaced and pending
groups, and file slicing by completion time. Above the timeline, which it reads, and storage."""
