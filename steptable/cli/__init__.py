"""The ``steptable`` command: one module per command."""
