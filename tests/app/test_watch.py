"""steptable.app.watch: run_watch refuses bad paths and schema names, stops at a bad steptable.toml as tail
does, finds a named schema in the logs' steptable.toml, and a bad file found later is a notice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from steptable.app import run_watch
from steptable.app import watch as app_module
from steptable.app.session import Session
from tests.app.helpers import SIZE, make_runs, manual_app, screen_text, sync, write_rows

pytestmark = pytest.mark.anyio


def test_run_watch_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from steptable.app import run_watch

    assert run_watch([str(tmp_path / "nope")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert run_watch([str(tmp_path)], schema="no-such-schema") == 2
    assert "unknown schema" in capsys.readouterr().err


BAD_TOML = '[schema]\nname = "bad name"\n'


MINE_TOML = '[schema]\nname = "mine"\n[[columns]]\nkey = "my/loss"\nheader = "myl"\n'


def _my_run(root: Path) -> Path:
    write_rows(root / "r" / "metrics.jsonl", ({"step": s, "my/loss": 1 / (s + 1)} for s in range(10)))
    return root


async def test_a_bad_steptable_toml_below_the_watched_path_is_a_notice_not_a_crash(tmp_path: Path) -> None:
    """The file sits beside a run found under the watched directory (run_watch's start-up check cannot see it):
    a notice, with the directory name made inert, and the app goes on (no SchemaFileError traceback)."""
    run_dir = tmp_path / "exp\x1bc"
    make_runs(run_dir, arms=("a", "b"))
    (run_dir / "steptable.toml").write_text(BAD_TOML)
    app, follower, _ = manual_app(tmp_path)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await sync(pilot, follower)
        await sync(pilot, follower)
        assert app.is_running and app._exception is None
        said = [str(n.message) for n in app._notifications if "needs a name" in str(n.message)]
        assert len(said) == 1 and "\x1b" not in said[0] and "steptable.toml:2" in said[0]
        text = screen_text(app)
        assert "rew" in text and "\x1b" not in text  # the runs, with the built-in routing layout


def test_run_watch_stops_at_a_bad_steptable_toml_like_tail(tmp_path: Path, capsys: Any) -> None:
    root = _my_run(tmp_path / "logs\x1b]0;t\x07")
    (root / "steptable.toml").write_text(BAD_TOML)
    assert run_watch([str(root)]) == 2
    err = capsys.readouterr().err
    assert "steptable.toml:2" in err and "\x1b" not in err and "\x07" not in err


def test_run_watch_finds_a_named_schema_in_the_logs_steptable_toml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """`watch --schema mine` finds `mine` in the logs' steptable.toml, as `tail --schema mine` does."""
    root = _my_run(tmp_path / "logs")
    (root / "steptable.toml").write_text(MINE_TOML)
    started: list[Any] = []

    class Ran:
        return_code = 0

        def run(self) -> None:
            started.append(self)

    monkeypatch.setattr(app_module, "make_app", lambda *a, **kw: Ran())
    assert run_watch([str(root)], schema="mine") == 0 and started
    assert run_watch([str(root)], schema="nosuch") == 2 and "unknown schema 'nosuch'" in capsys.readouterr().err
    session = Session(schema_name="mine", near=str(root))
    assert session.schema().name == "mine"
