"""steptable.app.screens.generations: the generations viewer: hostile text inert, a big step paged, long
completions clipped, malformed rows and failures shown, not fatal; a tracker's generations beside side files."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual.widgets import Static

from steptable.app.screens import generations as gen_screen
from steptable.app.screens.generations import GenerationsScreen
from steptable.app.sidefiles import SideIndex, build_index
from steptable.app.widgets.arm import ArmPanel
from tests.app.helpers import (
    HOSTILE,
    SIZE,
    append,
    make_runs,
    manual_app,
    open_generations,
    static_text,
    sync,
    until,
    write_generations,
    write_side_file,
)

pytestmark = pytest.mark.anyio


async def test_generations_viewer_hostile_text(tmp_path: Path) -> None:
    root = make_runs(tmp_path)
    write_generations(root / "routeA")
    app, follower, _ = manual_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        screen = await open_generations(pilot)
        assert screen.step == 20  # following: the newest step with samples
        await pilot.press("left")
        assert screen.step == 10
        shown = static_text(screen.query_one("#gen-text", Static))
        assert "\x1b" not in shown and "\u202e" not in shown and "\x07" not in shown
        assert "[bold red]markup[/]" in shown and "[link=https://evil.example]click[/link]" in shown
        assert "reward +1" in shown and "12 tokens" in shown
        assert "clearscreen" in shown and "titlepwned" not in shown
        await pilot.press("right", "right")
        assert screen.step == 20
        append(root, "routeA", 40, 45)  # rows arrive while the viewer is open: the tables behind it update
        await pilot.press("l")  # table keys do nothing over the viewer
        await sync(pilot, follower)
        assert app.screen is screen and not app.main.query_one("#legend-box").display
        assert max(p.grid.rows for p in app.main.query(ArmPanel)) == 45
        await pilot.press("a")  # one arm with generations: stays
        await pilot.press("escape")
        assert not isinstance(app.screen, GenerationsScreen)


async def test_generations_absent_notifies(tmp_path: Path) -> None:
    app, follower, _ = manual_app(make_runs(tmp_path, arms=("solo",)))
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        await pilot.press("v")
        assert not isinstance(app.screen, GenerationsScreen)


def test_hostile_constant_is_hostile() -> None:
    assert "\x1b[2J" in HOSTILE and "\x1b]52;" in HOSTILE and "\u202e" in HOSTILE and "[bold red]" in HOSTILE


async def test_generations_viewer_pages_a_big_step(tmp_path: Path) -> None:
    """A GRPO group of 128 long completions: the viewer shows a page (laying out all of it would freeze the UI
    for seconds), n and p move between pages."""

    root = make_runs(tmp_path, arms=("solo",))
    path = root / "solo" / "emergence" / "generations.jsonl"
    path.parent.mkdir(parents=True)
    body = "\n".join(f"reasoning line {i}" for i in range(200))
    path.write_text("".join(json.dumps({"step": 5, "prompt": "q", "completion": f"{k}\n{body}", "reward": 0.5})
                            + "\n" for k in range(128)))
    app, follower, _ = manual_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        screen = await open_generations(pilot)
        first = static_text(screen.query_one("#gen-text", Static))
        assert "── 1/128 " in first and "── 128/128 " not in first and "> for the next ones" in first
        await pilot.press("greater_than_sign")
        second = static_text(screen.query_one("#gen-text", Static))
        assert "── 1/128 " not in second and second != first
        await pilot.press("less_than_sign")
        assert static_text(screen.query_one("#gen-text", Static)) == first
        await pilot.press("less_than_sign")  # no page before the first
        assert static_text(screen.query_one("#gen-text", Static)) == first


def test_long_completions_are_clipped_and_paged() -> None:
    from steptable.app.screens.generations import PAGE_LINES, clip, sample_text
    from steptable.app.sidefiles import Sample

    runaway = "\n".join(f"line {i}" for i in range(32_000))
    shown = clip(runaway)
    assert shown.startswith("line 0\n") and shown.endswith("line 31999") and "lines, " in shown
    assert shown.count("\n") < 200 and clip("short\ntext") == "short\ntext"
    one_line = "x" * 1_000_000
    assert len(clip(one_line)) < 20_000 and "999,9" not in clip(one_line)[:100]
    samples = [Sample(7, "generation", 0.5, "q", "\n".join(["y"] * 200)) for _ in range(128)]
    text, nxt = sample_text(samples, "arm", 7)
    assert nxt is not None and 1 < nxt < 128 and text.plain.count("\n") <= PAGE_LINES + 250
    assert f"samples 1-{nxt} of 128 shown" in text.plain
    pages = 1
    while nxt is not None:
        text, nxt = sample_text(samples, "arm", 7, nxt)
        pages += 1
    assert pages > 1 and "128/128" in text.plain
    one, _ = sample_text(samples[:1], "arm", 7)
    assert "step 7 · 1 sample\n" in one.plain and "step 7 · 128 samples" in sample_text(samples, "arm", 7)[0].plain


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


def _index_fails(*_: Any) -> SideIndex:
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


async def _search_samples(pilot: Any, screen: GenerationsScreen, text: str) -> None:
    await pilot.press("slash", "ctrl+a", "ctrl+k", *text, "enter")
    searching = [w for w in pilot.app.workers if w.group == "gen-search"]
    if searching:
        await pilot.app.workers.wait_for_complete(searching)
    await pilot.pause()
    await pilot.pause()


def _title(screen: GenerationsScreen) -> str:
    return static_text(screen.query_one("#gen-title", Static))


@asynccontextmanager
async def _viewer(tmp_path: Path, arms: tuple[str, ...] = ("routeA",)) -> AsyncIterator[tuple[Any, GenerationsScreen]]:
    """The app over three arms, ``arms`` with generations files, and its generations viewer open and indexed."""
    root = make_runs(tmp_path)
    for arm in arms:
        write_generations(root / arm)
    app, follower, _ = manual_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        yield pilot, await open_generations(pilot)


async def test_search_moves_to_the_matching_samples(tmp_path: Path) -> None:
    """/ in the viewer finds text in the arm's samples (every step), ignoring case; n / N move to the next /
    previous matching sample (wrapping), which is shown first; the title says "k of m" or that nothing matched."""
    async with _viewer(tmp_path) as (pilot, screen):
        await pilot.press("left", "left")
        assert screen.step == 0
        await _search_samples(pilot, screen, "ANSWER 1")
        assert screen.step == 0 and "1 of 3" in _title(screen)
        assert viewer_text(screen).split("\n── ")[1].startswith("2/2 ")  # the match first on the page
        await pilot.press("n")
        await pilot.pause()
        assert screen.step == 10 and "2 of 3" in _title(screen)
        await pilot.press("n", "n")
        await pilot.pause()
        assert screen.step == 0 and "1 of 3" in _title(screen)
        await pilot.press("N")
        await pilot.pause()
        assert screen.step == 20 and "3 of 3" in _title(screen)
        await _search_samples(pilot, screen, "no such words")
        assert "no match for 'no such words'" in _title(screen) and screen.step == 20


async def test_search_finds_untrusted_text_and_shows_it_inert(tmp_path: Path) -> None:
    async with _viewer(tmp_path) as (pilot, screen):
        await _search_samples(pilot, screen, "[bold red]markup")
        assert screen.step == 10 and "1 of 1" in _title(screen)
        shown = viewer_text(screen)
        assert "[bold red]markup[/]" in shown and "\x1b" not in shown
        text = screen.query_one("#gen-text", Static).content
        assert isinstance(text, Text)
        marked = [text.plain[s.start : s.end] for s in text.spans if s.style == "reverse"]
        assert marked == ["[bold red]markup"]  # the match is marked, where it shows


async def test_another_arm_forgets_the_search(tmp_path: Path) -> None:
    async with _viewer(tmp_path, ("routeA", "absorb")) as (pilot, screen):
        app = pilot.app
        await _search_samples(pilot, screen, "answer 1")
        assert "3 of 3" in _title(screen)  # from the step on screen (the newest) on
        await pilot.press("a")
        indexing = [w for w in app.workers if w.group == "gen-index"]
        if indexing:
            await app.workers.wait_for_complete(indexing)
        await pilot.pause()
        await pilot.press("n")  # no matches of the other arm's samples to go to
        await pilot.pause()
        assert screen.finder.text == "" and "of 3" not in _title(screen) and screen.step is not None


def _handled(monkeypatch: pytest.MonkeyPatch, handler: str) -> list[Any]:
    """The messages GenerationsScreen's ``handler`` gets from now on, each handled as before."""
    real = getattr(GenerationsScreen, handler)
    handled: list[Any] = []

    def record(self: GenerationsScreen, message: Any) -> None:
        handled.append(message)
        real(self, message)

    monkeypatch.setattr(GenerationsScreen, handler, record)
    return handled


async def test_an_index_that_ends_after_the_next_arms_is_not_shown(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """``a`` while the arm's side files are being indexed: that index, ending after the next arm's, is not shown
    in its place (the title naming one arm over the other arm's samples)."""
    root = make_runs(tmp_path)
    write_generations(root / "routeA")
    write_generations(root / "absorb")
    with open(root / "absorb" / "emergence" / "generations.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"step": 30, "prompt": "p", "completion": "absorb only", "reward": 0.5}) + "\n")
    real_build = build_index
    release = threading.Event()
    built: dict[tuple[Path, ...], SideIndex] = {}

    def build(paths: list[Path], *rest: Any) -> SideIndex:
        if not built and not release.is_set():  # the first arm's: ends once the test says so
            built[tuple(paths)] = SideIndex()
            assert release.wait(30)
        idx = built[tuple(paths)] = real_build(paths, *rest)
        return idx

    monkeypatch.setattr(gen_screen, "build_index", build)
    handled = _handled(monkeypatch, "on_index_ready")
    app, follower, _ = manual_app(root)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await sync(pilot, follower)
            await pilot.press("v")
            screen = app.screen
            assert isinstance(screen, GenerationsScreen) and len(screen.sources) == 2
            await until(pilot, lambda: len(built) == 1)
            await pilot.press("a")
            await until(pilot, lambda: len(handled) == 1)
            release.set()
            await until(pilot, lambda: len(handled) == 2)
            await pilot.pause()
            shown = built[tuple(screen.sources[1].files)]
            assert screen.arm_i == 1 and screen.index is shown
            assert f"{len(shown.steps)} steps with samples" in _title(screen) and screen.step == shown.steps[-1]
    finally:
        release.set()


@pytest.mark.parametrize("first", ["answer 1", "step 20"])
async def test_a_search_that_ends_after_the_next_one_is_not_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  first: str) -> None:
    """A second search while the first still reads the samples: the first's matches, ending last, do not replace
    the second's, also where both asked for the same text (the files may have changed between)."""
    real_matches = gen_screen.sample_matches
    release = threading.Event()
    asked: list[str] = []

    def matches(index: SideIndex, text: str) -> list[tuple[int, int]]:
        asked.append(text)
        found = real_matches(index, text)
        if len(asked) == 1:
            assert release.wait(30)
            return found[:1]  # what the files held when the first search read them
        return found

    monkeypatch.setattr(gen_screen, "sample_matches", matches)
    handled = _handled(monkeypatch, "on_search_done")
    try:
        async with _viewer(tmp_path) as (pilot, screen):
            await pilot.press("slash", "ctrl+a", "ctrl+k", *first, "enter")
            await until(pilot, lambda: len(asked) == 1)
            await pilot.press("slash", "ctrl+a", "ctrl+k", *"step 20", "enter")
            await until(pilot, lambda: len(handled) == 1)
            release.set()
            await until(pilot, lambda: len(handled) == 2)
            await pilot.pause()
            assert screen.finder.text == "step 20" and "search 'step 20': 1 of 2" in _title(screen)
    finally:
        release.set()


@pytest.mark.parametrize(("fixture", "arm", "title"), [
    ("verl_trackio_run", "verl-exp", "val/generations #0"),
    ("verl_tensorboard_run", "verl-tb", "val/generations sample 1"),
])
async def test_a_trackers_generations_are_its_runs(request: pytest.FixtureRequest, tmp_path: Path, fixture: str,
                                                   arm: str, title: str) -> None:
    """verl's validation generations logged to trackio (traces) or TensorBoard (text) are shown for its run, as
    side files are for the arms beside it, each arm its own samples."""
    import shutil

    from tests.ingest.dumpwriters import VERL_VAL_SAMPLES, VERL_VAL_STEPS

    root = make_runs(tmp_path)
    write_generations(root / "routeA")
    shutil.copytree(request.getfixturevalue(fixture), root / arm)
    app, follower, _ = manual_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        screen = await open_generations(pilot)
        labels = [s.label for s in screen.sources]
        assert len(labels) == 2 and arm in labels
        while screen.arm != arm:
            await pilot.press("a")
            indexing = [w for w in app.workers if w.group == "gen-index"]
            if indexing:
                await app.workers.wait_for_complete(indexing)
            await pilot.pause()
        assert screen.index is not None and screen.index.steps == list(VERL_VAL_STEPS)
        assert screen.step == VERL_VAL_STEPS[-1]
        shown = viewer_text(screen)
        assert all(f"answer {i} at {VERL_VAL_STEPS[-1]}" in shown for i in range(VERL_VAL_SAMPLES))
        assert title in shown


async def test_a_trl_runs_trackio_tables_are_its_generations(trl_trackio_run: Path, tmp_path: Path) -> None:
    """TRL's completions logged to trackio as tables (no traces) open for its run, each step's grouped."""
    import shutil

    shutil.copytree(trl_trackio_run, tmp_path / "trackio")
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        screen = await open_generations(pilot)
        assert len(screen.sources) == 1 and screen.index is not None and screen.index.steps == [1, 2, 3]
        shown = viewer_text(screen)
        assert screen.step == 3 and "completion · reward" in shown and "group 1/" in shown


async def test_the_text_of_a_run_hidden_as_a_copy_opens_with_the_run_it_copies(tmp_path: Path) -> None:
    """One training logged to W&B and to TensorBoard, its samples as TensorBoard text: the TensorBoard run is hidden
    as the W&B run's copy, and v said "no generations side files" (the samples went with it). They open with the
    run kept."""
    pytest.importorskip("torch")
    pytest.importorskip("wandb")
    from tests.ingest.writers import run_writer

    run_writer("""
        import math, os, random, wandb
        from torch.utils.tensorboard import SummaryWriter
        rng = random.Random(0)
        run = wandb.init(project="grpo", name="grpo")
        tb = SummaryWriter(os.environ["TB_DIR"])
        for s in range(60):
            m = {"train/loss": 0.7 * math.exp(-s / 30) + rng.gauss(0, 0.02), "train/reward": rng.random()}
            run.log(m, step=s)
            for k, v in m.items():
                tb.add_scalar(k, v, s)
            if s % 20 == 0:
                tb.add_text("generations", f"sample at {s}", s)
        tb.close()
        run.finish()
    """, {"WANDB_DIR": str(tmp_path), "TB_DIR": str(tmp_path / "tb" / "grpo")})
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        await until(pilot, lambda: bool(app.seedgroups.copies.of))
        screen = await open_generations(pilot)
        assert screen.step == 40 and "sample at 40" in viewer_text(screen)
