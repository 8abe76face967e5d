"""The watch names a key with no visible character by its escapes, as the console, tail and legend do (its header
was ``?``), and says once that the empty key, which no column can show, has values (it dropped it without a word)."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable import StepLogger
from tests.app.helpers import SIZE, manual_app, screen_text, sync

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("xdg")]

NAMES = {"\u200b": '"\\u200b"', " ": '"\\x20"', "\t": '"\\t"', "\u2060": '"\\u2060"'}
EMPTY_SAID = 'the empty key "" has values but no column'


def _run(root: Path, keys: list[str]) -> None:
    with StepLogger(run_dir=root / "a", arm="a", console=False, alerts=False) as sl:
        for s in range(3):
            sl.log({"step": s, "loss": 0.5, **{k: 1.5 + i + s for i, k in enumerate(keys)}})


def _header(app: object) -> list[str]:
    """The words of the step table's header line on the screen."""
    return next([w for w in line.split() if w != "▕"] for line in screen_text(app).splitlines()  # type: ignore[arg-type]
                if line.split()[:1] == ["step"])


def _said(app: object, text: str) -> list[str]:
    return [str(n.message) for n in app._notifications if text in str(n.message)]  # type: ignore[attr-defined]


@pytest.mark.parametrize("key", ["\u200b", " ", "\t"])
async def test_the_watch_heads_a_key_without_a_visible_character_by_its_escapes(tmp_path: Path, key: str) -> None:
    _run(tmp_path, [key])
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await sync(pilot, follower)
        await sync(pilot, follower)
        assert _header(app) == ["step", "loss", NAMES[key]]


async def test_the_watch_says_once_that_the_empty_key_has_no_column(tmp_path: Path) -> None:
    _run(tmp_path, [""])
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await sync(pilot, follower)
        await sync(pilot, follower)
        with StepLogger(run_dir=tmp_path / "a", arm="a", console=False, alerts=False) as sl:  # (a resumed run)
            sl.log({"step": 3, "loss": 0.5, "": 2.0, "acc": 0.25})  # a new key: laid out again
        await sync(pilot, follower)
        assert "acc" in screen_text(app) and len(_said(app, EMPTY_SAID)) == 1


async def test_the_watch_tells_two_keys_without_a_visible_character_apart(tmp_path: Path) -> None:
    _run(tmp_path, ["\u200b", "\u2060"])
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await sync(pilot, follower)
        await sync(pilot, follower)
        assert sorted(_header(app)[2:]) == [NAMES["\u200b"], NAMES["\u2060"]]
