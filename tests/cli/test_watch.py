"""steptable.cli.watch: without a terminal ``steptable watch`` says so and exits 2."""

from __future__ import annotations

import pytest

from tests.helpers import run_cli


@pytest.mark.parametrize("argv", [["watch", "."], ["demo"]])
def test_the_app_without_a_terminal_says_so(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """No terminal (a pipe, CI): a one-line reason and exit 2, not an app drawing into the pipe forever."""
    rc, out, err = run_cli(argv, capsys)
    assert rc == 2 and out == "" and "needs a terminal" in err
