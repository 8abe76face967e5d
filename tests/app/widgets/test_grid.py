"""The watch app on the Textual of the day: what changed under it (the review of version 10)."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable.app.widgets.grid import StepGrid
from tests.app.helpers import SIZE, make_runs, manual_app, sync

pytestmark = pytest.mark.anyio


async def test_the_cursor_column_is_shaded_in_every_theme(tmp_path: Path) -> None:
    """The column under the cursor (the one the chart plots and p pins) was shaded with $boost, which Textual 8.2.5
    and later make transparent in a theme that sets $panel: no shading at all in steptable's three themes."""
    app, follower, _ = manual_app(make_runs(tmp_path, arms=("solo",)))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        for theme in ("dark", "light", "high-contrast", "textual-dark"):
            app.theme = theme
            await pilot.pause()
            grid = app.query_one(StepGrid)
            shade = grid.get_component_styles("grid--column").background
            base = grid.styles.background if grid.styles.background.a else app.screen.styles.background
            assert shade.a > 0, theme
            assert base.blend(shade, shade.a).rgb != base.rgb, theme
