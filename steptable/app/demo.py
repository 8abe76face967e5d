"""``steptable demo``: a synthetic three-arm routing run written live in a background thread, watched by the app."""

from __future__ import annotations

import threading
from pathlib import Path

from steptable.app.app import make_app


def run_demo_app(out_dir: str | Path, steps: int = 500, interval: float = 0.5, theme: str | None = None) -> int:
    """Write the demo run into ``out_dir`` while the app shows it; the writer stops when the app exits."""
    from steptable.demo import run_demo

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
        app.run()
        return app.return_code or 0
    finally:
        stop.set()
        writer.join(timeout=5)
