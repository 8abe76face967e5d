"""steptable.logger.rowjson: a row's JSONL line is strict JSON on one line, the same text on msgspec's path and the
stdlib's, whatever the values (non-finite, huge ints, escapes, lone surrogates, numpy scalars and arrays, keys that
are not text or that read alike, objects that raise); an infinity is read back as one, by Python's json and ours."""

from __future__ import annotations

import json
import math
import struct
from typing import Any

import numpy as np
import pytest

from steptable.logger.rowjson import encode_row, json_line
from steptable.table.jsonvalues import jsonable
from tests.logger.helpers import strict_loads


def _dumped(record: dict[Any, Any]) -> bytes:
    """The line as json.dumps writes jsonable's copy, its bare ``Infinity`` spelt as strict JSON can (``1e999``; no
    text of the rows below holds the word)."""
    text = json.dumps(jsonable(record), ensure_ascii=False, separators=(",", ":")).replace("Infinity", "1e999")
    return text.encode("utf-8", "replace") + b"\n"


def _same(a: Any, b: Any) -> bool:
    """Equal JSON values, floats bit for bit (-0.0 is not 0.0), key order included."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return struct.pack("d", a) == struct.pack("d", b)
    return bool(a == b)



def test_odd_values_keep_the_row_a_json_object() -> None:
    class Proxy:  # a lazy proxy: every attribute look-up raises, and not AttributeError
        def __getattr__(self, name: str) -> object:
            raise RuntimeError(name)

    row = strict_loads(encode_row({"step": 1, "rew": 0.5, "x": Proxy()}).decode())
    assert isinstance(row, dict) and row["rew"] == 0.5 and str(row["x"]).startswith("<")



def test_keys_that_read_alike_are_all_kept() -> None:
    """3 and "3", None and "None": every value reaches the JSONL; a row's own arm is kept as it named it."""
    row = json.loads(encode_row({"step": 1, 3: "int", "3": "str", None: 1, "None": 2}))
    assert row == {"step": 1, "3": "int", "3~2": "str", "None": 1, "None~2": 2}



def test_numpy_longdouble_is_written_as_a_number() -> None:
    row = json.loads(encode_row({"lr": np.longdouble(3e-4), "x": np.longdouble("inf"), "y": np.float16(0.5)}))
    assert row == {"lr": pytest.approx(3e-4), "x": math.inf, "y": 0.5}


def test_an_infinity_is_written_as_a_number_past_the_double_range_and_nan_as_null() -> None:
    """Strict JSON has no infinity: ``1e999`` is one to every strict parser; a NaN (no value to compare) is null,
    on each path: a plain row (msgspec), a row of other values (the stdlib), nested values."""
    plain = encode_row({"loss": math.inf, "kl": -math.inf, "r": math.nan})
    other = encode_row({"loss": np.float32("inf"), "kl": [-math.inf, (math.nan,)], "r": math.nan})
    assert plain == b'{"loss":1e999,"kl":-1e999,"r":null}\n'
    assert other == b'{"loss":1e999,"kl":[-1e999,[null]],"r":null}\n'
    assert strict_loads(plain.decode())["loss"] == math.inf


def test_small_arrays_are_written_as_json_lists() -> None:
    row = json.loads(encode_row({"a": np.array([1, 2]), "m": np.array([[1.5, np.nan]]), "big": np.arange(5000.0)}))
    assert row["a"] == [1, 2] and row["m"] == [[1.5, None]]  # (not the text "[1 2]")
    assert isinstance(row["big"], str) and "..." in row["big"]  # a big one stays numpy's short summary



def test_a_plain_row_is_written_as_jsonable_and_json_dumps_write_it() -> None:
    """The plain-row paths (floats, ints, text, bools, None) give the line of the general one: json_line the very
    line, encode_row (msgspec) one of the same values, on random doubles of every magnitude, non-finite values, ints
    either side of the size written as a float, escapes, a lone surrogate, and rows they leave to the general path
    (lists, numpy scalars, a key that is not text)."""
    import random

    rng = random.Random(0)
    odd: list[Any] = [math.nan, math.inf, -math.inf, -0.0, 1e-05, 1e16, 1e300, 5e-324, 2**1000, 2**1000 - 1,
                      -(2**1000) + 1, -(2**1000), 10**400, 10**5000, True, False, None, "",
                      'a"\\\n\x00\x1f\x7f\u2028é\ud800', [1, math.nan], {"a": (1, 2)}, np.float32(0.25), np.int64(7),
                      3, -7]
    keys: list[Any] = ["step", 'q"uote', "é", "new\nline", "\ud800"]
    for i in range(20_000):
        row: dict[Any, Any] = {}
        for _ in range(rng.randint(0, 5)):
            double = struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0]
            row[rng.choice(keys)] = rng.choice([*odd, double, rng.random() * 10.0 ** rng.randint(-30, 30),
                                                rng.getrandbits(70) - 2**69])
        if i % 1000 == 0:
            row[3] = 1.0  # a key that is not text
        line = encode_row(row)
        assert line.endswith(b"\n") and b"\n" not in line[:-1], row
        assert _same(json.loads(line), json.loads(_dumped(row))), row
        assert json_line(row).encode("utf-8", "replace") == _dumped(row)
