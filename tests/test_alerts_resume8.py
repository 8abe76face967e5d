"""A live reader's alerts at a resume read the rows the store holds now, not the crashed run's replaced ones: a run
restarted from step 0 in its directory was a "reward collapse" against the old run's rewards under tail -f and in
the app, while a one-shot read said nothing."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from steptable.alerts.engine import AlertConfig, replay_spans, resumed_engine
from steptable.app.alerting import AlertScanner
from steptable.app.messages import AlertsFound
from steptable.ingest import Follower
from tests.app.helpers import scan_rounds
from tests.cli.helpers import Live
from tests.helpers import write_rows


def _rows(steps: range, reward: float, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [{"step": s, "rew": reward + rng.gauss(0, 0.02), "loss": 1.0 + rng.gauss(0, 0.05)} for s in steps]


def _old_then_restart(root: Path) -> Path:
    path = root / "routeA" / "metrics.jsonl"
    write_rows(path, _rows(range(160), 0.85, 1))  # the finished run: rewards near .85
    return path


def test_tail_f_after_a_restart_from_step_0_says_no_collapse(tmp_path: Path) -> None:
    path = _old_then_restart(tmp_path)
    live = Live(tmp_path, ["--alerts-only"])
    live.step()
    write_rows(path, _rows(range(30), 0.2, 2))  # a new run from scratch in the same directory: rewards start low
    live.step()
    assert "collapse" not in live.out.getvalue(), live.out.getvalue()


def test_the_app_after_a_restart_from_step_0_says_no_collapse(tmp_path: Path) -> None:
    path = _old_then_restart(tmp_path)
    f = Follower([tmp_path])
    f.scan()
    posted: list[Any] = []
    scanner = AlertScanner(lambda: f.stores, posted.append)
    write_rows(path, [])

    def rounds() -> Any:
        yield set(f.stores)
        write_rows(path, _rows(range(30), 0.2, 2))
        f.scan()
        yield set(f.stores)

    scan_rounds(scanner, rounds())
    said = [a.line() for m in posted if isinstance(m, AlertsFound) for a in m.alerts]
    assert not any("collapse" in line for line in said), said


def test_a_resume_mid_run_still_sees_a_real_collapse_after_it(tmp_path: Path) -> None:
    # resumed at step 100 (the rows before it kept): a collapse after the resume is still a collapse
    path = tmp_path / "r" / "metrics.jsonl"
    write_rows(path, _rows(range(120), 0.8, 3))
    live = Live(tmp_path, ["--alerts-only"])
    live.step()
    write_rows(path, _rows(range(100, 130), 0.8, 4) + _rows(range(130, 160), 0.05, 5))
    live.step()
    assert "rew collapse" in live.out.getvalue(), live.out.getvalue()


def test_the_replay_is_bounded_and_keeps_the_early_rows() -> None:
    cfg = AlertConfig()
    assert replay_spans(10, cfg) == [(0, 10)]
    (head, tail) = replay_spans(1_000_000, cfg)
    assert head == (0, cfg.entropy_early) and tail[1] == 1_000_000 and tail[1] - tail[0] < 200


def test_a_resumed_engine_has_read_the_rows_before_the_resume(tmp_path: Path) -> None:
    write_rows(tmp_path / "r" / "metrics.jsonl", _rows(range(100), 0.8, 6))
    f = Follower([tmp_path])
    f.scan()
    (store,) = f.stores.values()
    with store.lock:
        eng = resumed_engine(store, 60)
    # the rows of steps < 60 were read: a drop to .05 at the resume is a collapse against them
    alerts = [a for s in range(60, 80) for a in eng.update(s, {"rew": 0.05})]
    assert any(a.kind == "reward_collapse" for a in alerts), alerts
