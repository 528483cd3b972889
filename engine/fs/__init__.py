"""The storage side of a table: storage access, file names, ``hoodie.properties`` and table
versions. Below the timeline: nothing here reads instants (the file system view over them is
:mod:`engine.view`)."""
