"""steptable: the per-step metrics table of a training run.

    from steptable import Col, StepLogger, setup_logging

The pure core (columns, formatting, render, schemas, ingest, alerts) imports neither textual, torch nor loguru;
the names below are loaded on first use so that ``import steptable.columns`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["Col", "ColumnError", "StepLogger", "__version__", "routing_columns", "setup_logging"]

if TYPE_CHECKING:
    from steptable.columns import Col, ColumnError
    from steptable.logger import StepLogger
    from steptable.logging import setup_logging
    from steptable.schemas.routing import routing_columns

_LAZY = {
    "Col": "steptable.columns",
    "ColumnError": "steptable.columns",
    "StepLogger": "steptable.logger",
    "setup_logging": "steptable.logging",
    "routing_columns": "steptable.schemas.routing",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'steptable' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
