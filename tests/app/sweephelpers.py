"""A small sweep written by steptable's own StepLogger: runs that ended, one that crashed, live ones (no close),
each with a tinker-style config.json of its hyper-parameters; a sweep index read whole by its own thread; and a run
list's index entry made by hand (Row)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from steptable.app.sweep import SweepIndex
from steptable.logger.steplogger import StepLogger
from steptable.summary.sweep import RunDigest

LRS = (1e-6, 3e-6, 1e-5)
OPEN: list[StepLogger] = []


def write_run(root: Path, name: str, lr: float, steps: int, *, end: str = "live", level: float = 0.0,
              log_lr: bool = False) -> Path:
    """One run under ``root/name``: ``steps`` rows of reward and loss (and with ``log_lr`` its learning rate, decaying
    from ``lr`` to half of it); ``end``: "ended" (closed), "crashed" (an exception left the ``with`` block) or "live"
    (left open: its logger never closed)."""
    run = root / name
    run.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"lr": lr, "optim": {"beta1": 0.9}, "seed": int(level * 10)}))
    t0 = time.time() - steps
    sl = StepLogger(run_dir=run, console=False, alerts=False)
    for s in range(steps):
        row = {"step": s, "ts": t0 + s, "reward": level + s / steps, "loss": 2.0 - level - s / steps}
        sl.log({**row, "learning_rate": lr * (1 - s / steps / 2)} if log_lr else row)
    if end == "ended":
        sl.close()
    elif end == "crashed":
        try:
            with sl:
                raise RuntimeError("out of memory")
        except RuntimeError:
            pass
    else:
        OPEN.append(sl)  # still running: never closed while the test reads it
    return run


@contextmanager
def index_running(index: SweepIndex, post: Callable[[Any], Any]) -> Iterator[None]:
    """``index``'s own thread (its list taken as drawn) while the block runs; stopped and joined after it."""
    stop = threading.Event()
    index.drawn.set()
    worker = threading.Thread(target=index.run, args=(stop, post), daemon=True)
    worker.start()
    try:
        yield
    finally:
        stop.set()
        worker.join(10)
    assert not worker.is_alive()


def written_at(root: Path) -> float:
    """When the newest file under ``root`` was last written: the "now" a sweep's status line is judged at, as just
    after the runs were written (the machine's clock would make a slow run's live runs read stalled)."""
    return max(p.stat().st_mtime for p in root.rglob("*") if p.is_file())


def read_all(index: SweepIndex, post: Callable[[Any], Any]) -> None:
    """Run ``index``'s own thread until every run's digest is read, then stop it."""
    with index_running(index, post):
        deadline = time.monotonic() + 20
        while any(e.digest is None for e in index.entries()) and time.monotonic() < deadline:
            time.sleep(0.02)
    assert all(e.digest is not None for e in index.entries())


def write_sweep(root: Path, runs: int = 12, steps: int = 30) -> list[str]:
    """``runs`` runs named ``lr<lr>_s<i>``: the first ended, the second crashed, the rest live. Returns their
    names in order; run ``i`` reaches reward ``i / 10 + 1`` (the later the better)."""
    names = []
    for i in range(runs):
        lr = LRS[i % len(LRS)]
        name = f"lr{lr:g}_s{i}"
        write_run(root, name, lr, steps, end="ended" if i == 0 else "crashed" if i == 1 else "live", level=i / 10)
        names.append(name)
    return names


@dataclass
class Row:
    """An index entry of the run list (steptable.app.runrows.Entry) made by hand."""

    run_id: str
    name: str
    config: dict[str, Any] = field(default_factory=dict)
    digest: RunDigest | None = None
    size: int = 0
    mtime: float = 0.0
    path: Path = Path("metrics.jsonl")
