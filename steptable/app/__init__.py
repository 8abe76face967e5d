"""The Textual watch app: ``run_watch(paths, poll, theme, schema)`` for ``steptable watch``; ``make_app`` builds it
without running it (tests, benchmarks, embedding)."""

from __future__ import annotations

from steptable.app.app import StepTableApp
from steptable.app.watch import make_app, run_watch

__all__ = ["StepTableApp", "make_app", "run_watch"]
