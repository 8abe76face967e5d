"""Readers: one module per file format, each turning bytes into Parsed chunks for a RunStore."""
