"""steptable.app.screens.generations: ``a`` moves to the next arm with generations at the step being viewed, or the
nearest step that arm has samples for; the step the user chose stays chosen across arms."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from steptable.app.screens import generations as gen_screen
from steptable.app.screens.generations import GenerationsScreen
from steptable.app.sidefiles import SideIndex, build_index
from tests.app.helpers import SIZE, make_runs, manual_app, open_generations, sync, until

pytestmark = pytest.mark.anyio

#: absorb samples every 10 steps; routeA at verl's validation cadence (before training, then every 120 steps)
EVERY_10, EVERY_120 = tuple(range(0, 120, 10)), (0, 120, 240)


def write_samples(run_dir: Path, steps: tuple[int, ...]) -> None:
    path = run_dir / "emergence" / "generations.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"step": s, "prompt": "p", "completion": f"{run_dir.name} at {s}",
                                        "reward": 1.0}) + "\n" for s in steps))


async def next_arm(pilot: Any) -> None:
    """Press a and wait until the next arm's files are indexed and its step shown."""
    await pilot.press("a")
    indexing = [w for w in pilot.app.workers if w.group == "gen-index"]
    if indexing:
        await pilot.app.workers.wait_for_complete(indexing)
    await pilot.pause()
    await pilot.pause()


def shown(screen: GenerationsScreen) -> tuple[str, int | None]:
    text = str(screen.query_one("#gen-text").render())
    assert screen.step is None or f"{screen.arm} at {screen.step}" in text  # (the text is of the step said)
    return screen.arm, screen.step


def _every_10_and_every_120(tmp_path: Path) -> tuple[Any, Any]:
    """The app over absorb (samples every 10 steps) and routeA (every 120), and its follower."""
    root = make_runs(tmp_path, arms=("absorb", "routeA"))
    write_samples(root / "absorb", EVERY_10)
    write_samples(root / "routeA", EVERY_120)
    app, follower, _ = manual_app(root)
    return app, follower


async def test_the_next_arm_opens_at_the_nearest_step_it_has(tmp_path: Path) -> None:
    """Viewing absorb's step 110, a showed routeA's step 0 (the last at or before 110) where its step 120 is 10
    steps away."""
    app, follower = _every_10_and_every_120(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        screen = await open_generations(pilot)
        assert [s.label for s in screen.sources] == ["absorb", "routeA"] and shown(screen) == ("absorb", 110)
        await next_arm(pilot)
        assert shown(screen) == ("routeA", 120)


async def test_cycling_arms_keeps_the_step_chosen(tmp_path: Path) -> None:
    """Back to the first arm, the step is the one the user chose there, not the nearest to where the other arm
    landed (100 -> routeA's 120 -> absorb's 110 drifted); a step chosen in another arm is then the one kept."""
    app, follower = _every_10_and_every_120(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        screen = await open_generations(pilot)
        await pilot.press("left")
        assert shown(screen) == ("absorb", 100)
        await next_arm(pilot)
        assert shown(screen) == ("routeA", 120)
        await next_arm(pilot)
        assert shown(screen) == ("absorb", 100)
        await next_arm(pilot)
        await pilot.press("right")
        await pilot.pause()
        assert shown(screen) == ("routeA", 240)
        await next_arm(pilot)
        assert shown(screen) == ("absorb", 110)


async def test_a_pressed_while_an_arm_is_indexed_keeps_the_step(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """a, then a again before the arm passed over has its index: the third arm showed its newest step, the step
    being viewed lost with the arm that had none shown yet."""
    root = make_runs(tmp_path)
    for arm in ("vanilla", "routeA", "absorb"):
        write_samples(root / arm, (*EVERY_10, 200))
    release = threading.Event()
    real_build = build_index

    def build(paths: list[Path], *rest: Any) -> SideIndex:
        if "routeA" in str(paths[0]):  # the arm passed over: indexed once the test says so
            assert release.wait(30)
        return real_build(paths, *rest)

    app, follower, _ = manual_app(root)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await sync(pilot, follower)
            screen = await open_generations(pilot)
            assert [s.label for s in screen.sources] == ["absorb", "routeA", "vanilla"]
            await pilot.press("left")
            assert shown(screen) == ("absorb", 110)
            monkeypatch.setattr(gen_screen, "build_index", build)
            await pilot.press("a", "a")
            await until(pilot, lambda: screen.arm == "vanilla" and screen.step is not None)
            assert shown(screen) == ("vanilla", 110)
            release.set()
    finally:
        release.set()
