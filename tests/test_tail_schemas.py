"""`steptable tail` output for every trainer format (golden files): detection, layout and derived columns end to end."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from steptable.cli.main import main

NAMES = ["routing", "retrain", "retrain_emergence", "verl", "tinyzero", "tinker", "trl", "maxent", "generic"]


@pytest.mark.parametrize("name", NAMES)
def test_tail_golden_per_format(
    name: str, every_trainer_log: dict[str, Path], capsys: pytest.CaptureFixture[str],
    golden: Callable[[str, str], None],
) -> None:
    rc = main(["tail", str(every_trainer_log[name]), "-n", "0", "--width", "160"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    root = str(every_trainer_log[name].parent)
    text = out.replace(root, "<dir>") + ("--stderr--\n" + err.replace(root, "<dir>") if err else "")
    golden(f"tail_{name}.txt", text)
    lines = out.splitlines()
    assert lines and all(len(line) == len(lines[0]) for line in lines if not line.startswith("──"))


def test_summary_uses_the_tables_short_headers(
    every_trainer_log: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(["summary", str(every_trainer_log["verl"])])
    out = capsys.readouterr().out
    assert rc == 0
    names = {line.split()[0] for line in out.splitlines()[2:] if line.strip()}
    assert "pg_loss" in names and not any("/" in n and n.startswith("actor") for n in names)
