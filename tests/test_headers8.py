"""Review 8: headers that look alike are alike.

Keys from files may differ only in characters a terminal does not draw (joiners, the grapheme joiner, variation
selectors, tag characters, Mongolian free variation selectors), in composed vs decomposed accents, or in which blank
they hold. Two columns must never read the same: such twins get ``~N`` like any other collision, while joiners and
selectors that do change the glyph (an emoji sequence, an emoji presentation) keep headers apart.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from steptable.schemas.headers import look
from tests.helpers import run_cli, write_rows
from tests.schemas.helpers import seen

#: the reviewer's keys: seven that read "loss", two that read "café", one homoglyph (Cyrillic dze)
LOSSES = ["loss", "loss\u200c", "loss\u034f", "loss\ufe00", "lo\u200dss", "loss\U000e0100", "loss\u180b"]
CAFES = ["caf\u00e9", "cafe\u0301"]
DZE = "los\u0455"


def test_tail_header_row_reads_each_column_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keys = [*LOSSES, *CAFES, DZE]
    write_rows(tmp_path / "r" / "metrics.jsonl", [{"step": s, **{k: i + s / 10 for i, k in enumerate(keys)}}
                                                  for s in range(3)])
    rc, out, _ = run_cli(["tail", str(tmp_path / "r")], capsys)
    assert rc == 0
    header = [seen(h) for h in out.splitlines()[0].split()]
    assert len(header) == 1 + len(keys) and len(set(header)) == len(header), header


def test_csv_column_names_are_told_apart_by_look_as_the_table_headers_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the CSV header compared raw strings: two "café" columns and a "loss" holding a joiner
    keys = ["loss", "lo\u200dss", "caf\u00e9", "cafe\u0301"]
    write_rows(tmp_path / "r" / "metrics.jsonl", [{"step": 0, **{k: i for i, k in enumerate(keys)}}])
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "csv"], capsys)
    header = next(csv.reader([out.splitlines()[0]]))
    assert rc == 0 and header[:3] == ["run", "arm", "step"], header
    shown = [look(h) for h in header[3:]]
    assert len(set(shown)) == len(shown) == 4, header
