"""`steptable tail` (text) and the watch app's table show the same rows, and the same text in every cell, for every
trainer's fixture tree: the two consumers render through one code path (the schema's derived values included)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from steptable.app.widgets.arm import ArmPanel
from tests.app.helpers import manual_app, sync
from tests.helpers import run_cli
from tests.trainer_logs import write_all

pytestmark = pytest.mark.anyio

FIXTURES = ("routing", "retrain", "retrain_emergence", "verl", "tinyzero", "tinker", "trl", "maxent", "generic")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_all(tmp_path_factory.mktemp("views"))


def split_table(text: str) -> tuple[list[str], list[dict[str, str]]]:
    """A fixed-width table (header line, then rows) as its headers and each row's stripped cell per header.

    Columns are cut at a position in each gap between two headers where every line has a space: the separator is one
    such position, and any other is padding of the cells on its sides, so the stripped cells come out the same."""
    lines = text.splitlines()
    head = lines[0]
    width = max(len(line) for line in lines)
    lines = [line.ljust(width) for line in lines]
    tokens: list[tuple[int, int]] = []
    i = 0
    while i < len(head):
        if head[i] == " ":
            i += 1
            continue
        j = head.find(" ", i)
        j = len(head) if j < 0 else j
        tokens.append((i, j))
        i = j
    cuts = [0]
    for (_, end), (start, _) in itertools.pairwise(tokens):
        at = next(p for p in range(start - 1, end - 1, -1) if all(line[p] == " " for line in lines))
        cuts.append(at)
    cuts.append(width)
    names = [head[a:b].strip() for a, b in tokens]
    rows = [{n: line[a:b].strip() for n, a, b in zip(names, cuts[:-1], cuts[1:], strict=True)} for line in lines[1:]]
    return names, rows


@pytest.mark.parametrize("name", FIXTURES)
async def test_tail_and_the_app_show_the_same_cells(
    name: str, trees: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = trees[name]
    rc, out, _ = run_cli(["tail", "-n", "0", str(path)], capsys)
    assert rc == 0
    heads, tail_rows = split_table(out)
    app, follower, _ = manual_app(path)
    async with app.run_test(size=(200, 40)) as pilot:
        await sync(pilot, follower)
        (panel,) = app.main.query(ArmPanel)
        grid = panel.grid
        assert grid.rows == len(tail_rows), name
        app_heads = [c.header.strip() for c in grid.cols]
        # tail fits its columns to the terminal's width; the app scrolls sideways: every column tail shows is there
        assert set(heads) <= set(app_heads), (heads, app_heads)
        shared = heads
        for i, tail_row in enumerate(tail_rows):
            app_row = dict(zip(app_heads, (t.strip() for t in grid.texts(i)), strict=True))
            for h in shared:
                assert app_row[h] == tail_row[h], (name, i, h, app_row[h], tail_row[h])
