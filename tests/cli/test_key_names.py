"""A key with no visible character ("", a zero-width space, a blank, a tab) named by its escapes in ``tail``,
``legend`` and ``summary`` of a JSONL that StepLogger wrote: its header was ``?`` (two such keys ``?`` and ``?~2``),
its legend line blank, its name in the summary blank."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable import StepLogger
from tests.helpers import run_cli

#: keys with no visible character, and the name each is shown by (its characters escaped, in double quotes)
NAMES = {"": '""', "\u200b": '"\\u200b"', " ": '"\\x20"', "\t": '"\\t"', "\u2060": '"\\u2060"'}


def _run(root: Path, keys: list[str]) -> Path:
    with StepLogger(run_dir=root / "a", arm="a", console=False, alerts=False) as sl:
        for s in range(3):
            sl.log({"step": s, "loss": 0.5, **{k: 1.5 + i + s for i, k in enumerate(keys)}})
    return root / "a"


def _no_mark_for_a_name(text: str) -> bool:
    return not [w for w in text.split() if w == "?" or w.startswith("?~")]


@pytest.mark.parametrize("key", ["", "\u200b", " ", "\t"])
def test_tail_legend_and_summary_name_a_key_without_a_visible_character_by_its_escapes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str) -> None:
    run = _run(tmp_path, [key])
    rc, out, err = run_cli(["tail", str(run)], capsys)
    assert rc == 0 and NAMES[key] in out + err and _no_mark_for_a_name(out)
    rc, out, _ = run_cli(["legend", str(run)], capsys)
    columns = out.split("\n\n")[0]
    assert rc == 0 and NAMES[key] in columns
    assert all(len(line.split()) >= 2 for line in columns.splitlines()[1:]), columns  # no blank meaning
    rc, out, _ = run_cli(["summary", str(run)], capsys)
    assert rc == 0 and NAMES[key] in out


def test_two_keys_without_a_visible_character_are_told_apart_by_tail_and_legend(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(tmp_path, ["\u200b", "\u2060"])
    rc, out, _ = run_cli(["tail", str(run)], capsys)
    assert rc == 0 and sorted(out.splitlines()[0].split()[2:]) == ['"\\u200b"', '"\\u2060"']
    rc, out, _ = run_cli(["legend", str(run)], capsys)
    assert rc == 0 and NAMES["\u200b"] in out and NAMES["\u2060"] in out and _no_mark_for_a_name(out.split("\n\n")[0])
