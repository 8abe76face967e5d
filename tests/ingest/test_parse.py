"""steptable.ingest.parse: line decoding, non-finite literals, flattening, step keys, the number rule for text
cells, rows cut short."""

from __future__ import annotations

import math

import pytest

from steptable.ingest.jsonfix import quote_bignums, quote_nonfinite
from steptable.ingest.parse import MISSING, LineError, decode_line, flatten, number, step_of
from tests.ingest.helpers import NOT_NUMBERS, NUMBERS


def test_bare_nonfinite_literals_outside_strings_only() -> None:
    line = b'{"a": NaN, "b": Infinity, "c": -Infinity, "s": "NaN and Infinity", "d": [NaN, 1]}'
    obj = decode_line(line)
    assert obj is not None
    row = flatten(obj)
    assert math.isnan(row["a"]) and row["b"] == math.inf and row["c"] == -math.inf
    assert row["s"] == "NaN and Infinity"  # text inside a string is never touched
    assert quote_nonfinite(b'{"s": "x\\" NaN", "a": NaN}') == b'{"s": "x\\" NaN", "a": "NaN"}'


def test_nan_strings_and_null_are_values() -> None:
    obj = decode_line(b'{"a": "nan", "b": "inf", "c": null, "d": "-Infinity", "e": "hold"}')
    assert obj is not None
    row = flatten(obj)
    assert math.isnan(row["a"]) and row["b"] == math.inf and row["c"] is None and row["d"] == -math.inf
    assert row["e"] == "hold"


def test_number_out_of_range_reads_as_inf_with_warning() -> None:
    warnings: list[str] = []
    obj = decode_line(b'{"a": 1e999, "b": -2.5E+400, "c": 1e-999, "s": "x1e999"}', warnings.append)
    assert obj is not None
    row = flatten(obj)
    # (the out-of-range repair stays out of strings)
    assert row["a"] == math.inf and row["b"] == -math.inf and row["c"] == 0.0 and row["s"] == "x1e999"
    assert warnings == ["number out of range read as inf (row kept)"]
    assert quote_bignums(b"[1e308]") == b"[1e308]"


def test_invalid_utf8_replaced_and_bom_stripped() -> None:
    warnings: list[str] = []
    obj = decode_line(b'\xef\xbb\xbf{"a": 1, "s": "ab\xffc"}\r', warnings.append)
    assert obj == {"a": 1, "s": "ab\ufffdc"}
    assert len(warnings) == 2


@pytest.mark.parametrize(("line", "reason"), [
    (b'{"a": 1', "malformed JSON"),
    (b"[1, 2]", "not a JSON object (list)"),
    (b"3", "not a JSON object (int)"),
    (b'"text"', "not a JSON object (str)"),
])
def test_lines_without_a_row(line: bytes, reason: str) -> None:
    with pytest.raises(LineError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        decode_line(line)


def test_blank_line_is_no_row() -> None:
    assert decode_line(b"   \r") is None


def test_flatten_nested_and_verl_envelope() -> None:
    row = flatten({"step": 3, "data": {"actor/pg_loss": 0.5, "critic": {"score": {"mean": 1}}},
                   "kl": 2.0, "eval": {"acc": [[1, 2], [3, 4]]}, "gt_s": [3, 8], "flag": True})
    assert row == {"step": 3, "actor/pg_loss": 0.5, "critic/score/mean": 1, "kl": 2.0,
                   "eval/acc": [[1, 2], [3, 4]], "gt_s": (3, 8), "flag": True}


def test_step_of() -> None:
    assert [step_of(v) for v in (3, 4.0, "5", 2.5, True, None, "x")] == [3, 4, 5, None, None, None, None]


def test_missing_is_not_nan() -> None:
    assert MISSING is not None and repr(MISSING) == "MISSING"


def test_a_row_cut_right_after_a_nested_object_is_not_taken_for_a_glued_row() -> None:
    """{"step": 3, "loss": .4, "eval": {"step": 3, "loss": .9}  (killed before the last brace): the nested eval
    object names a step and runs to the line's end, but it is not the row (its loss .9 must not land in the train
    column)."""
    from steptable.ingest.parse import LineError, decode_line

    with pytest.raises(LineError, match="malformed JSON"):
        decode_line(b'{"step": 3, "loss": 0.4, "eval": {"step": 3, "loss": 0.9}')
    with pytest.raises(LineError, match="malformed JSON"):
        decode_line(b'{"step": 3, "a": {"b": {"step": 3, "loss": 0.9}}')
    told: list[str] = []  # a glued row is still found
    assert decode_line(b'{"step": 9, "rew": 0.{"step": 9, "rew": 0.7}', told.append) == {"step": 9, "rew": 0.7}
    assert told


def test_a_row_cut_after_a_colon_in_a_shared_file_keeps_the_next_arms_row() -> None:
    """Cut right after `"rew":` and another arm's row appended: the line also reads as one row cut after a nested
    object; the appended object names its arm, as a shared file's rows do, so it is kept."""
    from steptable.ingest.parse import decode_line

    told: list[str] = []
    line = b'{"step":6,"arm":"A","loss":0.5,"rew":{"step":6,"arm":"B","loss":0.6,"rew":0.2}'
    assert decode_line(line, told.append) == {"step": 6, "arm": "B", "loss": 0.6, "rew": 0.2} and told


def test_the_number_rule() -> None:
    """CSV cells: one strict rule for text that is a number (a CSV cell has no type but its text)."""
    for text, want in NUMBERS.items():
        got = number(text)
        assert got == want and type(got) is type(want), text
    for text in NOT_NUMBERS:
        assert number(text) is None, text


@pytest.mark.parametrize("text", ["1_0", "\u0663", "\uff13", "+-3", "--3", "", "-"])
def test_a_step_written_as_text_must_be_ascii_digits(text: str) -> None:
    from steptable.ingest.parse import step_of

    assert step_of(text) is None  # int() reads "1_0" as 10 and "٣" (Arabic-Indic) as 3
    assert step_of(" 12 ") == 12 and step_of("-3") == -3 and step_of("7") == 7


def test_the_missing_marker_survives_a_pickle() -> None:
    """(A chunk parsed in another process: its absent cells must still be the one marker tested by ``is``.)"""
    import pickle

    from steptable.ingest.parse import MISSING

    assert pickle.loads(pickle.dumps([MISSING, (MISSING,)]))[1][0] is MISSING
