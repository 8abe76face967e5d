"""The commands' argparse types, and their one read of the runs under the paths given."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest

from steptable.cli.reading import non_negative, positive, positive_seconds, read_runs
from tests.helpers import write_rows


@pytest.mark.parametrize(("fn", "ok", "bad"), [
    (non_negative, ["0", "7"], ["-1", "x", "1.5"]),
    (positive, ["1", "12"], ["0", "-3", "y"]),
    (positive_seconds, ["0.5", "3"], ["0", "-1", "nan", "inf", "z"]),
])
def test_argument_types_take_what_they_say(fn: object, ok: list[str], bad: list[str]) -> None:
    f = fn  # type: ignore[assignment]
    assert [f(x) for x in ok] == [type(f(ok[0]))(x) for x in ok]  # type: ignore[operator]
    for x in bad:
        with pytest.raises(argparse.ArgumentTypeError):
            f(x)  # type: ignore[operator]


def test_read_runs_gives_stores_in_name_order_and_says_the_followers_problems(tmp_path: Path) -> None:
    write_rows(tmp_path / "b" / "metrics.jsonl", [{"step": 0, "loss": 1.0}])
    write_rows(tmp_path / "a" / "metrics.jsonl", [{"step": 0, "loss": 1.0}])
    (tmp_path / "a" / "metrics.jsonl").write_text('{"step": 0, "loss": 1.0}\nnot json\n{"step": 1, "loss": 0.5}\n')
    err = io.StringIO()
    follower, stores = read_runs([str(tmp_path)], err)
    assert [s.run for s in stores] == ["a/metrics.jsonl", "b/metrics.jsonl"] and len(stores[0]) == 2
    assert "malformed JSON" in err.getvalue() and follower.stores.keys() == {s.run for s in stores}
