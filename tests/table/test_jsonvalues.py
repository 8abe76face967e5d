"""steptable.table.jsonvalues: a logged row's values as strict JSON, bounded in depth, size and work: where the
limits cut and what the cut leaves, subclasses, proxies, numpy and torch arrays, masked values."""

from __future__ import annotations

import enum
import json
import math
from typing import Any

import numpy as np
import pytest

from steptable.logger.rowjson import encode_row
from steptable.table.jsonvalues import jsonable


def _nest(value: Any, levels: int) -> Any:
    for _ in range(levels):
        value = [value]
    return value


def _inside(value: Any, levels: int) -> Any:
    for _ in range(levels):
        assert isinstance(value, list) and len(value) == 1, value
        value = value[0]
    return value


def test_nesting_is_cut_at_32_levels_into_a_short_text() -> None:
    """32 nested lists are still JSON; a 33rd is its bounded repr (3 levels, then "..."), not the full text."""
    assert _inside(jsonable(_nest(1, 32)), 32) == 1
    assert _inside(jsonable(_nest(1, 33)), 32) == "[1]"
    assert _inside(jsonable(_nest(1, 40)), 32) == "[[[[...]]]]"


def test_mappings_count_toward_the_depth_limit() -> None:
    """Nested dicts are cut like lists (a config nested 40 deep must not be written out in full)."""
    value: Any = 1
    for _ in range(40):
        value = {"k": value}
    out = jsonable(value)
    for _ in range(32):
        out = out["k"]
    assert out == "{'k': {'k': {'k': {...}}}}"


def test_a_long_part_of_a_cut_structure_is_shortened_to_200_characters() -> None:
    class Long:
        def __repr__(self) -> str:
            return "L" * 300

    text = _inside(jsonable(_nest([Long()], 32)), 32)
    assert text == "[" + "L" * 98 + "..." + "L" * 99 + "]"  # the object's 300 characters cut to 200


def test_an_arrays_rows_count_toward_the_depth_limit() -> None:
    """An array is one level and its list the next (as a 0-d one is, below): 2-D, 30 lists in, its rows are past the
    limit and written as text; 29 in, it is all numbers."""
    assert _inside(jsonable(_nest(np.zeros((2, 2)), 30)), 30) == ["[0.0, 0.0]", "[0.0, 0.0]"]
    assert _inside(jsonable(_nest(np.zeros((2, 2)), 29)), 29) == [[0.0, 0.0], [0.0, 0.0]]


def test_a_0d_object_array_is_one_level_like_a_list() -> None:
    """What a 0-d object array holds is one level below it (the array counts as one, not two)."""
    held = np.empty((), dtype=object)
    held[()] = [1, [2]]
    assert _inside(jsonable(_nest(held, 30)), 30) == [1, "[2]"]


def test_large_arrays_are_text_from_1025_numbers() -> None:
    assert jsonable({"a": np.arange(1024.0)})["a"] == [float(i) for i in range(1024)]
    assert isinstance(jsonable({"a": np.arange(1025.0)})["a"], str)


def test_past_the_container_budget_the_rest_is_omitted() -> None:
    """20 000 containers per row: a row holding 30 000 small lists writes the first ones and "<omitted>" for the rest
    (a row's work is bounded; nothing is silently dropped)."""
    out = jsonable([[] for _ in range(30_000)])
    assert out[:19_999] == [[]] * 19_999 and out[19_999:] == ["<omitted>"] * 10_001


def test_none_nested_in_a_row_is_null() -> None:
    assert jsonable({"a": None, "b": [None, 1], "c": {"d": None}}) == {"a": None, "b": [None, 1], "c": {"d": None}}


def test_float_subclasses_keep_their_value_nan_is_null_and_an_infinity_stays() -> None:
    class Half(float):
        pass

    row = {"a": np.float64(0.5), "b": [np.float64("nan"), np.float64(0.25)], "c": [Half(0.5), Half("-inf")]}
    got = jsonable(row)
    assert got == {"a": 0.5, "b": [None, 0.25], "c": [0.5, -math.inf]} and type(got["c"][1]) is float


def test_an_int_past_the_double_range_is_an_infinity_of_its_sign() -> None:
    """10**400 was written as null, which every reader takes for a value not measured (or a NaN): the value was lost
    unsaid, where a float past the range (an overflowed loss) is written as an infinity. An int written as a float
    (past 2**1000) within the range keeps its value."""
    assert jsonable({"a": 10**400, "b": [-(10**5000)], "c": 2**1001}) == {"a": math.inf, "b": [-math.inf],
                                                                          "c": float(2**1001)}
    assert json.loads(encode_row({"n": 10**400, "m": -(10**400)})) == {"n": math.inf, "m": -math.inf}


def test_int_subclasses_are_their_number() -> None:
    class Phase(enum.IntEnum):
        WARMUP = 1

    class Count(int):
        pass

    assert jsonable({"phase": Phase.WARMUP, "n": [Count(7)]}) == {"phase": 1, "n": [7]}


class _Proxy:
    """A transparent proxy (as wrapt or a lazy object would be): isinstance() sees the wrapped value's class."""

    def __init__(self, wrapped: Any) -> None:
        self._wrapped = wrapped

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return type(self._wrapped)

    def __bool__(self) -> bool:
        return bool(self._wrapped)

    def __int__(self) -> int:
        return int(self._wrapped)

    def __float__(self) -> float:
        return float(self._wrapped)


def test_a_proxy_of_a_bool_is_a_bool_not_a_number() -> None:
    assert jsonable({"done": _Proxy(True), "n": _Proxy(3)}) == {"done": True, "n": 3}
    assert jsonable({"done": _Proxy(True)})["done"] is True


def test_an_array_like_of_unknown_dtype_keeps_its_list_form() -> None:
    """Without a dtype that says "numbers", a one-element array-like is not unwrapped to its item: it may hold text."""

    class ArrayLike:
        ndim, size = 1, 1

        def tolist(self) -> list[str]:
            return ["abc"]

        def item(self) -> str:
            return "abc"

    assert jsonable({"a": ArrayLike()}) == {"a": ["abc"]}


def test_jsonable_stays_linear_on_cycles_and_shared_parts() -> None:
    loop: list[Any] = []
    loop.append(loop)
    loop.append(loop)
    assert jsonable({"x": loop}) == {"x": ["<cycle>", "<cycle>"]}
    shared: list[Any] = [1]
    for _ in range(60):  # 2**60 leaves if expanded
        shared = [shared, shared]
    line = encode_row({"step": 1, "loss": 0.5, "x": shared})
    assert len(line) < 5_000_000 and b'"<omitted>"' in line
    row = json.loads(line)
    assert row["loss"] == 0.5


def test_jsonable_keeps_what_it_used_to_write() -> None:
    import enum

    class Strategy(str, enum.Enum):  # HF's IntervalStrategy / SchedulerType are (str, Enum)
        STEPS = "steps"

    out = jsonable({"s": Strategy.STEPS, "k": {(1, 2, 3, 4, 5, 6, 7): 1, (1, 2, 3, 4, 5, 6, 8): 2},
                    "set": set(range(10)), "many": [np.float32(1)] * 25_000})  # fmt: skip
    assert out["s"] == "steps" and len(out["k"]) == 2 and out["set"] == str(set(range(10)))
    assert out["many"] == [1.0] * 25_000  # scalars are not containers: no budget spent on them


def test_torch_tensors_are_written_as_json_lists_one_element_as_its_number() -> None:
    torch = pytest.importorskip("torch")
    t = torch.tensor([0.25, 0.75])
    row = jsonable({"acc": t, "one": torch.tensor([0.5], requires_grad=True), "big": torch.zeros(5000)})
    assert row["acc"] == [0.25, 0.75] and row["one"] == 0.5  # one element: the number (alerts read it)
    assert isinstance(row["big"], str) and len(row["big"]) < 300  # a big tensor is its short text, not 5000 numbers


def test_a_two_element_array_stays_a_pair_and_a_nested_one_element_array_is_written_as_its_number() -> None:
    assert jsonable({"passed": np.array([3, 16]), "m": {"loss": np.array([[np.nan]]), "lr": np.array([1e-4])}}) == {
        "passed": [3, 16], "m": {"loss": None, "lr": 1e-4}}


def test_one_element_arrays_of_text_objects_or_masks_are_not_numbers() -> None:
    """jsonable takes .item() only of one-element arrays of numbers: ["abc"] stays a list, an object array's dict
    does not become a column of its own, and a masked-out value is no real-looking number."""
    np = pytest.importorskip("numpy")
    from steptable.table.jsonvalues import jsonable
    from steptable.table.rowvalues import frozen

    assert jsonable(np.array(["abc"])) == ["abc"]
    assert jsonable(np.array([{"a": 1}], dtype=object)) == [{"a": 1}]
    assert jsonable(np.ma.array([1.0], mask=[True])) is None and frozen(np.ma.array([1.0], mask=[True])) is None
    assert jsonable(np.ma.array([1.5], mask=[False])) == 1.5 and jsonable(np.array([[2.5]])) == 2.5


def test_a_fully_masked_value_is_no_zero() -> None:
    np = pytest.importorskip("numpy")
    from steptable.table.jsonvalues import jsonable
    from steptable.table.rowvalues import frozen

    empty = np.ma.masked_invalid(np.array([np.nan, np.inf])).mean()  # np.ma.masked: no value, not 0.0
    assert jsonable(empty) is None and frozen(empty) is None and jsonable(np.ma.masked) is None
