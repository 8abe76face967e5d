"""steptable: the per-step metrics table of a training run.

    from steptable import Col, StepLogger, setup_logging

The pure core (columns, formatting, render, schemas, ingest, alerts) imports neither textual, torch nor loguru;
the names below are loaded on first use so that ``import steptable.table.columns`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["Col", "ColumnError", "StepLogger", "__version__", "routing_columns", "setup_logging"]

if TYPE_CHECKING:
    from steptable.logger.setup import setup_logging
    from steptable.logger.steplogger import StepLogger
    from steptable.schemas.routing import routing_columns
    from steptable.table.columns import Col, ColumnError

_LAZY = {
    "Col": "steptable.table.columns",
    "ColumnError": "steptable.table.columns",
    "StepLogger": "steptable.logger.steplogger",
    "setup_logging": "steptable.logger.setup",
    "routing_columns": "steptable.schemas.routing",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'steptable' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
