"""steptable.app.messages: a feed's problems reach the user sanitized, as a notice, not the status line for good."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable.app.messages import FeedProblem
from tests.app.helpers import SIZE, make_runs, manual_app, sync

pytestmark = pytest.mark.anyio


async def test_one_runs_failure_is_a_notice_not_the_status_line_for_good(tmp_path: Path) -> None:
    """A per-run failure (a reader's internal error, an alert scan) is told once as a notice, and does not take
    the status line's note for the rest of the session (the feed's own note shows again)."""
    app, follower, _ = manual_app(make_runs(tmp_path, arms=("solo",)))
    async with app.run_test() as pilot:
        await sync(pilot, follower)
        app.post_message(FeedProblem("a/metrics.jsonl: internal error (KeyError: 'x')", lasting=False))
        await pilot.pause()
        assert app.problem == "" and any("internal error" in str(n.message) for n in app._notifications)
        app.post_message(FeedProblem("follower stopped: OSError: gone"))
        await pilot.pause()
        assert app.problem == "follower stopped: OSError: gone"


async def test_a_feed_problem_is_sanitized(tmp_path: Path) -> None:
    app, follower, _ = manual_app(make_runs(tmp_path, arms=("a",)))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await sync(pilot, follower)
        app.post_message(FeedProblem("follower stopped: bad \x1b]52;c;ZXZpbA==\x07name\x1b[2J"))
        await pilot.pause()
        texts = [str(n.message) for n in app._notifications] + [app.problem]
        assert any("follower stopped" in t for t in texts)
        assert not any(ch in t for t in texts for ch in "\x1b\x07")
