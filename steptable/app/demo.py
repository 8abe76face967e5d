"""``steptable demo``: a synthetic three-arm routing run written live in a background thread, watched by the app."""

from __future__ import annotations

import threading
from pathlib import Path

from steptable.app.app import StepTableApp
from steptable.app.signals import run_until_quit
from steptable.app.watch import make_app

#: the column the demo starts on (the chart's): the hack rate, which the arms are about. The first column, ref_eq,
#: counts generations: a ramp alike in every arm.
START_COLUMN = "hack_s"


def run_demo_app(out_dir: str | Path, steps: int = 500, interval: float = 0.5, theme: str | None = None) -> int:
    """Write the demo run into ``out_dir`` while the app shows it; the writer stops when the app exits."""
    from steptable.demo.run import run_demo

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    writer = threading.Thread(
        target=run_demo,
        kwargs={"out_dir": out, "steps": steps, "interval": interval, "console": False, "stop": stop},
        name="steptable-demo-writer",
        daemon=True,
    )
    writer.start()
    try:
        app = make_app([str(out)], theme=theme)
        if isinstance(app, StepTableApp):  # (a test's stand-in app has no session)
            app.session.selected = START_COLUMN
        return run_until_quit(app)
    finally:
        stop.set()
        writer.join(timeout=5)
