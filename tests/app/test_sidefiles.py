"""Review 7: hostile generations rows and failures in the app's background threads never take the app down, and are
told instead of passing silently."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from steptable.app.alerting import AlertScanner
from steptable.app.feed import Feed
from steptable.app.messages import AlertsFound, FeedProblem
from steptable.app.screens import generations as gen_screen
from steptable.app.screens.generations import GenerationsScreen
from steptable.app.sidefiles import SideIndex, build_index
from steptable.ingest import Follower
from tests.app.helpers import (
    make_runs,
    manual_app,
    open_generations,
    scan_rounds,
    sync,
    write_rows,
    write_side_file,
)

pytestmark = pytest.mark.anyio


def test_a_steps_field_that_is_not_a_list(tmp_path: Path) -> None:
    idx = build_index([write_side_file(tmp_path, '{"step": 10, "steps": 4, "reward": 1.0, "response": "r"}')])
    (s,) = idx.samples(10)
    assert s.completion == "" and "rollout" in s.title


def test_an_integer_reward_beyond_the_double_range(tmp_path: Path) -> None:
    idx = build_index([write_side_file(tmp_path, '{"step": 10, "prompt": "p", "completion": "c", "reward": 1'
                                             + "0" * 400 + "}")])
    (s,) = idx.samples(10)
    assert s.reward == math.inf and s.completion == "c"


def test_a_step_with_more_digits_than_int_converts(tmp_path: Path) -> None:
    idx = build_index([write_side_file(tmp_path, '{"step": 1' + "0" * 5000 + ', "completion": "c", "reward": 1}')])
    assert idx.steps == [0]  # the line goes with the rows before it, where it shows as a bad line
    good, bad = idx.samples(0)
    assert good.completion == "c" and "bad line" in bad.title and bad.reward is None


def viewer_text(screen: GenerationsScreen) -> str:
    return str(screen.query_one("#gen-text").render())


async def test_the_viewer_over_a_malformed_row_keeps_the_app(tmp_path: Path) -> None:
    root = make_runs(tmp_path, arms=("solo",))
    write_side_file(root / "solo", '{"step": 10, "steps": 4, "reward": 1.0, "response": "r"}')
    app, follower, _ = manual_app(root)
    async with app.run_test() as pilot:
        await sync(pilot, follower)
        screen = await open_generations(pilot)
        assert screen.step == 10
        await pilot.press("left")
        assert screen.step == 0 and app.screen is screen
    assert app.return_code is None


def _index_fails(paths: Any) -> SideIndex:
    raise RuntimeError("index bug")


def _read_fails(self: SideIndex, step: int) -> Any:
    raise RuntimeError("read bug")


@pytest.mark.parametrize(("target", "name", "bug", "said"), [
    (gen_screen, "build_index", _index_fails, ["could not index: RuntimeError: index bug"]),
    (SideIndex, "samples", _read_fails, ["could not read this step's samples", "RuntimeError: read bug"]),
])
async def test_a_viewer_failure_is_shown_not_fatal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: Any,
                                                   name: str, bug: Any, said: list[str]) -> None:
    """Indexing the side files, or reading one step's samples, raising: the viewer says why and the app stays."""
    monkeypatch.setattr(target, name, bug)
    root = make_runs(tmp_path, arms=("solo",))
    write_side_file(root / "solo")
    app, follower, _ = manual_app(root)
    async with app.run_test() as pilot:
        await sync(pilot, follower)
        text = viewer_text(await open_generations(pilot))
        assert all(x in text for x in said), text
    assert app.return_code is None


def test_the_alert_thread_survives_a_failing_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from steptable.alerts.engine import AlertEngine

    update = AlertEngine.update

    def boom(self: AlertEngine, step: int, row: dict[str, Any], wall_time: float | None = None) -> Any:
        if step >= 1000:  # run "bad" only
            raise ZeroDivisionError("detector bug")
        return update(self, step, row, wall_time)

    monkeypatch.setattr(AlertEngine, "update", boom)
    write_rows(tmp_path / "bad" / "metrics.jsonl", [{"step": 1000 + s, "loss": 1.0} for s in range(5)])
    write_rows(tmp_path / "good" / "metrics.jsonl", [{"step": s, "loss": 1.0} for s in range(5)])
    write_rows(tmp_path / "good" / "metrics.jsonl", [{"step": 5, "loss": None}])  # a logged NaN: an alert
    f = Follower([tmp_path])
    posted: list[Any] = []
    scanner = AlertScanner(lambda: f.stores, posted.append)
    (bad,) = [r for r in f.scan() if "bad" in r]
    # its next rows (the second round): the engine starts over, fails again, is not told again
    assert scan_rounds(scanner, [set(f.stores), {bad}])
    problems = [m.text for m in posted if isinstance(m, FeedProblem)]
    assert len(problems) == 1 and bad in problems[0] and "ZeroDivisionError: detector bug" in problems[0]
    assert any(isinstance(m, AlertsFound) and "good" in m.run for m in posted)
    assert bad not in scanner._engines


def test_a_readers_internal_error_is_told_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_runs(tmp_path, steps=5, arms=("solo",))
    follower = Follower([str(root)])
    feed = Feed([str(root)], follower=follower, preview_min_bytes=0)
    posted: list[Any] = []
    feed._post = posted.append
    feed._changed(follower.scan())

    def boom() -> bool:
        raise KeyError("reader bug \x1b]52;c;ZXZpbA==\x07")

    for src in follower._sources.values():
        monkeypatch.setattr(src, "poll", boom)
    for _ in range(2):  # the same error on every pass: one notice
        feed._changed(follower.scan())
    problems = [m.text for m in posted if isinstance(m, FeedProblem)]
    assert len(problems) == 1 and "internal error (KeyError: 'reader bug" in problems[0]
    assert "\x1b" not in problems[0] and "\x07" not in problems[0]
    assert follower.error_count == 2


async def test_one_runs_failure_is_a_notice_not_the_status_line_for_good(tmp_path: Path) -> None:
    """A per-run failure (a reader's internal error, an alert scan) is told once as a notice; before, it took the
    status line's note for the rest of the session (the feed's own note never showed again)."""
    app, follower, _ = manual_app(make_runs(tmp_path, arms=("solo",)))
    async with app.run_test() as pilot:
        await sync(pilot, follower)
        app.post_message(FeedProblem("a/metrics.jsonl: internal error (KeyError: 'x')", lasting=False))
        await pilot.pause()
        assert app.problem == "" and any("internal error" in str(n.message) for n in app._notifications)
        app.post_message(FeedProblem("follower stopped: OSError: gone"))
        await pilot.pause()
        assert app.problem == "follower stopped: OSError: gone"


def test_an_arm_title_says_where_its_run_was_resumed(tmp_path: Path) -> None:
    """The rows from a resume step on are a relaunch's: summary and tail -f say so, the app's title did not."""
    from steptable.app.widgets.arm import ArmPanel

    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, [{"step": s, "loss": 1.0} for s in range(30)])
    write_rows(path, [{"step": s, "loss": 0.9} for s in range(20, 40)])
    f = Follower([tmp_path])
    f.scan()
    (store,) = f.stores.values()
    assert list(store.resumes) == [20]
    assert "resumed 20" in ArmPanel("a", "a").title_text(store, len(store), now=0.0)
    fresh = tmp_path / "b" / "metrics.jsonl"
    write_rows(fresh, [{"step": s, "loss": 1.0} for s in range(5)])
    f.scan()
    assert "resumed" not in ArmPanel("b", "b").title_text(f.stores["b/metrics.jsonl"], 5, now=0.0)
