"""The file system side of a table: storage, file names, properties, the file system view."""
