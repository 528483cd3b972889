"""The timeline: instants, their states and the metadata they carry, and the markers naming the
files an instant writes."""
