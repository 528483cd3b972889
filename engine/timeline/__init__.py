"""The timeline: instants, their states and the metadata they carry."""
