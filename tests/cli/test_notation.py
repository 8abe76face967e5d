"""`steptable tail` writes each column's numbers in one notation (steptable.table.notation) in text and md, and a
live `tail -f` chooses it again, with a header, only when a new value leaves it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import emit, follow_tail
from tests.helpers import run_cli, write_rows

LOSSES = [-0.03, -0.00011, -5.5e-5, 0.00408]  # the column: four notations, per cell, before


def _cells(text: str, head: str) -> list[str]:
    lines = [x for x in text.splitlines() if x.strip()]
    names = lines[0].split()
    col = names.index(head)
    return [x.split()[col] for x in lines[1:] if x.split()[:1] != ["step"]]


def test_tail_text_and_md_write_the_loss_column_in_one_notation(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "metrics.jsonl"
    write_rows(path, [{"step": s, "loss": v, "gn": g} for s, (v, g) in enumerate(zip(LOSSES, [1.0, 1.2, 12.1, 1.05],
                                                                                    strict=True))])
    rc, out, _ = run_cli(["tail", "-n", "0", str(path)], capsys)
    assert rc == 0
    assert _cells(out, "loss") == ["-.0300", "-.0001", "-.0001", ".0041"]
    assert _cells(out, "gn") == ["1.0", "1.2", "12.1", "1.1"]  # the spike is one integer digit more
    rc, md, _ = run_cli(["tail", "-n", "0", "--format", "md", str(path)], capsys)
    assert rc == 0
    rows = [x.strip("|").split("|") for x in md.splitlines() if x.startswith("| ") and x[2].isdigit()]
    assert [r[1].strip() for r in rows] == ["-.0300", "-.0001", "-.0001", ".0041"]


def test_tail_f_chooses_the_notation_again_only_when_a_value_leaves_it(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    write_rows(path, [{"step": s, "gn": 0.4137 + s / 100} for s in range(3)])
    follower, tail, out, _ = follow_tail(path, [])
    emit(follower, tail)
    write_rows(path, [{"step": 3, "gn": 0.5123}])  # inside the notation: no header, the same form
    emit(follower, tail)
    first = out.getvalue().splitlines()
    assert [x.split()[0] for x in first] == ["step", "0", "1", "2", "3"] and first[-1].split()[1] == ".512"
    write_rows(path, [{"step": 4, "gn": 12.34}])  # a tenfold spike leaves it: chosen again, once, with a header
    emit(follower, tail)
    write_rows(path, [{"step": 5, "gn": 0.4444}])
    emit(follower, tail)
    lines = out.getvalue().splitlines()[len(first):]
    assert [x.split() for x in lines] == [["step", "gn"], ["4", "12.3"], ["5", ".4"]]
