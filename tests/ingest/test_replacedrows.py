"""What a store keeps of the rows a resume drops (steptable.ingest.replacedrows): the findings of its resume
reader, within a budget of rows read that grows with the run."""

from __future__ import annotations

import math

from steptable.alerts.replaced import read_replaced
from steptable.ingest import RunStore
from steptable.ingest.parsed import Parsed

NAN = float("nan")


def test_a_crash_late_in_a_long_run_is_read_from_the_rows_the_resume_replaced() -> None:
    """The rows a resume replaced may be read for more the longer the run (a fiftieth of its rows on top, not less):
    a NaN loss 1M steps into a run, restarted from 10 steps before it, is still said. (The first 1M rows are bare:
    what they hold does not matter here, and bare rows keep the test fast.)"""
    n = 1_000_000
    store = RunStore("run", "/nonexistent/metrics.jsonl", on_resume=read_replaced)
    store.add(Parsed(steps=range(n), cols={}), now=math.nan)
    tail = [{"step": s, "loss": NAN if s == n + 10 else 0.5 + 0.01 * (s % 3)} for s in range(n, n + 20)]
    store.add(Parsed(steps=[r["step"] for r in tail], rows=tail), now=math.nan)
    store.add(Parsed(steps=[n], rows=[{"step": n, "loss": 0.5}]), now=math.nan)
    assert store.resumes == [n]
    assert [(a.step, a.column, a.level) for a in store.replaced] == [(n + 10, "loss", "E")]
