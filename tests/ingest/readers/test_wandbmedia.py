"""steptable.ingest.readers.wandbmedia: the step of each wandb.Table a history record logs, and the values of a
damaged or hostile record that give none (the files real runs write: tests/app/test_sidefiles.py)."""

from __future__ import annotations

import pytest

from steptable.ingest.readers.wandbmedia import TableSteps

PATH = b'"media/table/completions_8_0a0a.table.json"'


def record(step: bytes | None, *, global_step: bytes | None = None, path: bytes = PATH) -> list[tuple[bytes, bytes]]:
    items = [(b"completions/_type", b'"table-file"'), (b"completions/path", path), (b"_timestamp", b"1.7e9")]
    if step is not None:
        items.append((b"_step", step))
    if global_step is not None:
        items.append((b"train/global_step", global_step))
    return items


def test_the_trainers_step_comes_before_wandbs_count() -> None:
    t = TableSteps()
    t.note(record(b"8", global_step=b"6"))
    t.note(record(b"3", path=b'"media/table/val/generations_2_ff.table.json"'))
    trl, verl = "media/table/completions_8_0a0a.table.json", "media/table/val/generations_2_ff.table.json"
    assert t.take() == {trl: 6, verl: 3}
    assert t.take() is None  # nothing new since
    t.note(record(b"9", global_step=b"7.0"))  # a float step that is whole
    assert t.take() == {trl: 7, verl: 3}


@pytest.mark.parametrize("step", [b"NaN", b"Infinity", b"true", b'"6"', b"6.5", b"1e400", b"{", b"[6]"])
def test_a_step_that_is_no_whole_number_notes_nothing(step: bytes) -> None:
    t = TableSteps()
    t.note(record(step))
    assert t.take() is None


@pytest.mark.parametrize("path", [b'"media/image/x.png"', b'7.table.json"', b'{"a": 1, ".table.json"'])
def test_a_value_that_is_no_tables_path_notes_nothing(path: bytes) -> None:
    t = TableSteps()
    t.note(record(b"3", path=path))
    assert t.take() is None
