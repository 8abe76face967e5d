"""Delivery of steptable's text to coding agents: the MCP server (``steptable mcp``).

Named ``agents`` rather than ``mcp`` so that no module path of ours reads as the ``mcp`` SDK (``steptable.mcp``
beside ``import mcp``, an import-linter contract naming ``mcp``, a script run from inside the package). The tools run
the CLI's own commands (handed in by ``steptable.cli``, which this package does not import) and return their text:
one code path, the same token budgets. Importing this package does not import the SDK.
"""
