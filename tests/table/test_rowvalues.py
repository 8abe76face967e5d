"""steptable.table.rowvalues: what StepLogger keeps of a logged row (nested mappings spread once, a device's tensors
read with one transfer)."""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import Any

import pytest


def test_a_config_dict_that_holds_itself_is_spread_once() -> None:
    """{"x": d, "y": d, "z": d} with d that dict is spread once: spreading it 16 levels deep would be 3**16 paths
    (log() would hang)."""
    from steptable.table.rowvalues import MAX_LEAVES, flat

    d: dict[str, Any] = {"lr": 0.1}
    d["x"] = d
    d["y"] = d
    d["z"] = d
    assert flat({"step": 0, "cfg": d}) == {"step": 0, "cfg/lr": 0.1}
    shared: dict[str, Any] = {}  # no cycle, but one mapping down 2**40 paths
    for _ in range(40):
        shared = {"a": shared, "b": shared, "v": 1}
    assert len(flat({"deep": shared})) <= MAX_LEAVES
    big = {"counts": {str(i): i for i in range(20_000)}}  # a token histogram logged each step
    view = flat({"step": 1, **big})
    assert len(view) == 1 + MAX_LEAVES and view["counts/0"] == 0


def test_keys_that_are_not_text_are_named_as_the_jsonl_names_them() -> None:
    """A row's int or None key reads as its text, as the JSONL line writes it; one whose text another key has is
    kept under ``~2``, as the writer keeps it."""
    import json

    from steptable.logger.rowjson import json_line
    from steptable.table.rowvalues import flat

    row = {"step": 3, 0: 0.7, None: 1, "0": 0.1, "acc": {1: 0.5}}
    assert flat(row) == {"step": 3, "0": 0.7, "None": 1, "0~2": 0.1, "acc/1": 0.5}
    assert set(json.loads(json_line(row))) == {"step", "0", "None", "0~2", "acc"}


# A row's tensors on a device are read together: one host transfer a device. The dispatch-mode recorder of the
# diagnostics tests counts the reads (aten's scalar reads, copies to the CPU). CPU tensors take a device's path
# where the test empties READ_EACH (the device types read one tensor at a time, CPU by default).


@pytest.fixture
def torch() -> Any:
    return pytest.importorskip("torch")


@pytest.fixture
def as_device(torch: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """CPU tensors are read as a device's (no device type read one tensor at a time)."""
    from steptable.table import rowvalues

    monkeypatch.setattr(rowvalues, "READ_EACH", frozenset(), raising=False)


def host_reads(fn: Callable[..., Any], *args: Any) -> tuple[Any, list[str]]:
    """``fn(*args)`` and the host-bound ops it ran, by name."""
    from tests.diagnostics.test_host_syncs import HostSyncRecorder

    with HostSyncRecorder() as rec:
        out = fn(*args)
    return out, [name for _, name in rec.host_bound]


def same(a: Any, b: Any) -> bool:
    """The same value of the same type; floats to the bit (NaN, -0.0), tuples item by item."""
    if type(a) is not type(b):
        return False
    if type(a) is tuple:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is float:
        return struct.pack("<d", a) == struct.pack("<d", b)
    return bool(a == b)


def test_a_rows_device_tensors_are_read_with_one_host_transfer(torch: Any, as_device: None) -> None:
    """A GRPO loop's row of 0-d tensors costs one transfer, not an .item() (a sync on a GPU) each."""
    from steptable.table.rowvalues import freeze

    loss, kl, ent = torch.tensor(0.75), torch.tensor(0.0125), torch.tensor(1.5, dtype=torch.bfloat16)
    row = {"step": 3, "loss": loss, "kl": kl, "entropy": ent, "tokens": torch.tensor(4096), "note": "ok", "lr": 1e-6}
    cells, reads = host_reads(freeze, row)
    assert reads == ["_to_copy"]
    assert cells == {"step": 3, "loss": 0.75, "kl": kl.item(), "entropy": 1.5, "tokens": 4096, "note": "ok", "lr": 1e-6}
    assert list(cells) == list(row) and type(cells["tokens"]) is int


def test_values_read_together_are_those_read_one_by_one_for_every_dtype(torch: Any, as_device: None) -> None:
    """fp16, bf16, fp32 and fp64 keep their exact value (NaN, inf, -0.0, subnormals), ints stay exact ints (int64
    past 2**53), bools bools; a one-element tensor of any shape is its number, a short 1-d one its numbers."""
    from steptable.table.rowvalues import freeze, frozen

    floats = [0.1, -0.0, 1 / 3, 65504.0, 6e-8, 1e-40, 3e38, 2.0**-149, math.nan, -math.nan, math.inf, -math.inf]
    row: dict[str, Any] = {}
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        row |= {f"{dtype}-{i}": torch.tensor(x, dtype=dtype) for i, x in enumerate(floats)}
    ints = {torch.int64: [2**53 + 1, -(2**63), 2**63 - 1, -1], torch.int32: [-(2**31), 2**31 - 1],
            torch.int16: [-(2**15), 2**15 - 1], torch.int8: [-128, 127], torch.uint8: [0, 255],
            torch.bool: [True, False]}
    for dtype, xs in ints.items():
        row |= {f"{dtype}-{i}": torch.tensor(x, dtype=dtype) for i, x in enumerate(xs)}
    row |= {"one": torch.tensor([0.1]), "one-int": torch.tensor([[2**62 + 1]]), "pair": torch.tensor([3, 16]),
            "bools": torch.tensor([True, False, True]), "halves": torch.tensor([0.1, math.nan], dtype=torch.bfloat16),
            "strided": torch.arange(10.0)[::3], "empty": torch.tensor([])}
    cells, reads = host_reads(freeze, row)
    assert reads == ["_to_copy"]
    for k, v in row.items():
        assert same(cells[k], frozen(v)), (k, cells[k], frozen(v))
    assert cells["torch.int64-0"] == 2**53 + 1 and cells["torch.bool-0"] is True and cells["pair"] == (3, 16)


def test_a_slice_or_broadcast_view_alone_in_its_dtype_is_read_with_the_others(torch: Any, as_device: None) -> None:
    """A 1-d slice (strided) or an expanded scalar, the only tensor of its dtype in the row: read in the same
    transfer, not left to be read on its own."""
    from steptable.table.rowvalues import freeze

    for view, numbers in ((torch.arange(10.0)[::3], (0.0, 3.0, 6.0, 9.0)), (torch.tensor(2.0).expand(3), (2.0,) * 3)):
        cells, reads = host_reads(freeze, {"n": torch.tensor(1), "v": view})
        assert reads == ["_to_copy"] and cells == {"n": 1, "v": numbers}


def test_values_of_other_kinds_are_read_as_before(torch: Any, as_device: None) -> None:
    """A complex number, a tensor subclass (a Parameter) and a device's lone tensor are read on their own; a 2-d
    tensor and a long 1-d one are not read (left for the writer to shorten), as before."""
    from steptable.table.rowvalues import freeze, frozen

    row = {"z": torch.tensor(1 + 2j), "p": torch.nn.Parameter(torch.tensor(0.5)), "m": torch.ones(2, 2),
           "long": torch.zeros(2000), "a": torch.tensor(1.0), "b": torch.tensor(2)}
    cells, reads = host_reads(freeze, row)
    assert sorted(reads) == ["_local_scalar_dense", "_local_scalar_dense", "_to_copy"]
    assert cells["z"] == 1 + 2j and type(cells["p"]) is float
    assert cells["m"] is row["m"] and cells["long"] is row["long"]
    assert all(same(cells[k], frozen(row[k])) for k in ("z", "p", "a", "b"))
    lone, reads = host_reads(freeze, {"loss": torch.tensor(0.5), "step": 1})
    assert lone == {"loss": 0.5, "step": 1} and reads == ["_local_scalar_dense"]  # (one tensor: one read either way)


def test_a_tensor_that_requires_grad_is_read_without_keeping_its_graph(torch: Any, as_device: None) -> None:
    """A loss logged before .detach(): read with the others, its graph left as the loop made it (backward still
    runs) and not kept alive by the row."""
    import gc
    import weakref

    from steptable.table.rowvalues import freeze

    w = torch.tensor([0.5, 2.0], requires_grad=True)
    h = w.exp()  # saved by its graph for backward: alive as long as the graph is
    row = {"loss": h.sum(), "kl": (w * w).mean(), "w0": w[0]}
    cells, reads = host_reads(freeze, row)
    assert reads == ["_to_copy"]
    assert cells == {k: v.item() for k, v in row.items()} and {type(v) for v in cells.values()} == {float}
    row["kl"].backward()
    assert w.grad is not None and w.grad.tolist() == [0.5, 2.0]
    graph = weakref.ref(h)
    del h, row
    gc.collect()
    assert graph() is None


def test_tensors_on_two_devices_cost_one_transfer_each(torch: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tensors are gathered on the device they are on: two GPUs' tensors, one transfer each; a device's lone tensor
    and CPU tensors (READ_EACH as shipped) are read one by one. CPU tensors stand in for the GPUs by a device
    attribute of their own (torch.Tensor.device and is_cpu replaced for the test)."""
    from steptable.table.rowvalues import freeze

    row = {"step": 9, "loss": torch.tensor(0.5), "kl": torch.tensor(0.25), "ent": torch.tensor([1.5]),
           "r1": torch.tensor(7), "n1": torch.tensor(2.0, dtype=torch.float16), "gap": torch.tensor(0.125),
           "host": torch.tensor(3.0), "host2": torch.tensor(4)}
    on = {"loss": "cuda:0", "kl": "cuda:0", "ent": "cuda:0", "r1": "cuda:1", "n1": "cuda:1", "gap": "cuda:2"}
    placed = {id(row[k]): torch.device(d) for k, d in on.items()}
    device, is_cpu = torch.Tensor.device, torch.Tensor.is_cpu
    monkeypatch.setattr(torch.Tensor, "device", property(lambda t: placed.get(id(t)) or device.__get__(t)))
    monkeypatch.setattr(torch.Tensor, "is_cpu", property(lambda t: id(t) not in placed and is_cpu.__get__(t)))
    cells, reads = host_reads(freeze, row)
    # cuda:0's three and cuda:1's two: a transfer each; cuda:2's one and the two CPU tensors: an .item() each
    assert sorted(reads) == ["_local_scalar_dense"] * 3 + ["_to_copy"] * 2
    assert cells == {"step": 9, "loss": 0.5, "kl": 0.25, "ent": 1.5, "r1": 7, "n1": 2.0, "gap": 0.125, "host": 3.0,
                     "host2": 4}


def test_a_device_that_cannot_gather_its_tensors_reads_each_as_before(torch: Any) -> None:
    """Tensors whose copy to the host fails (the meta device holds no data) keep the fallback: each read on its
    own, and one that cannot be read is kept for the writer to make text of; other values are read."""
    from steptable.table.rowvalues import freeze

    a, b = torch.empty((), device="meta"), torch.empty((), device="meta")
    cells = freeze({"a": a, "b": b, "c": torch.tensor(1.0)})
    assert cells["a"] is a and cells["b"] is b and cells["c"] == 1.0


def test_nested_mappings_are_copied_with_their_tensors_read_with_the_rows(torch: Any, as_device: None) -> None:
    """{"train": {"loss": t, ...}}: the nested tensors are read with the row's others, in one transfer, into a copy
    of the mapping (the loop's own dict, updated in place later, leaves the row as it was)."""
    from steptable.table.rowvalues import freeze

    train = {"loss": torch.tensor(0.5), "kl": torch.tensor(0.25), "lr": 1e-6,
             "per": {"reward": torch.tensor([1, 3]), "acc": torch.tensor(0.75, dtype=torch.float64)}}
    row = {"step": 2, "train": train, "entropy": torch.tensor(1.5), 3: {"x": torch.tensor(True)}}
    cells, reads = host_reads(freeze, row)
    assert reads == ["_to_copy"]
    assert cells == {"step": 2, "train": {"loss": 0.5, "kl": 0.25, "lr": 1e-6, "per": {"reward": (1, 3), "acc": 0.75}},
                     "entropy": 1.5, 3: {"x": True}}
    train["loss"], train["per"]["acc"] = torch.tensor(9.0), 0.0
    assert cells["train"]["loss"] == 0.5 and cells["train"]["per"]["acc"] == 0.75


def test_a_nested_mapping_too_big_or_holding_itself_is_left_as_it_is() -> None:
    """A mapping that holds itself, one of more than MAX_LEAVES items (a 20k-entry Counter logged each step) and one
    nested deeper than the JSONL writes are not copied: the writer and the row's view read them as before."""
    from collections import Counter

    from steptable.table.jsonvalues import MAX_DEPTH
    from steptable.table.rowvalues import MAX_LEAVES, freeze

    cyc: dict[str, Any] = {"lr": 0.1}
    cyc["self"] = cyc
    big = Counter({str(i): i for i in range(MAX_LEAVES + 1)})
    deep: dict[str, Any] = {"v": 1}
    for _ in range(MAX_DEPTH + 1):
        deep = {"d": deep}
    fits = {"a": {"b": [1, 2]}}
    cells = freeze({"cyc": cyc, "big": big, "deep": deep, "fits": fits})
    assert cells["cyc"] is cyc and cells["big"] is big and cells["deep"] is deep
    assert cells["fits"] == {"a": {"b": (1, 2)}} and cells["fits"] is not fits


def test_a_short_list_of_tensors_or_numpy_scalars_is_read_as_its_numbers(torch: Any) -> None:
    """``[loss_a, loss_b]`` of 0-d tensors was kept as the tensors: the console printed ``[tensor(0.5000), tensor…``
    where the JSONL has [0.5, 0.25] (``.5/.25`` in every reader), and a tensor updated in place later changed the
    row. Each is read now; a nested list, and a list too long to show as numbers, are left as they were."""
    import numpy as np

    from steptable.table.jsonvalues import MAX_ARRAY
    from steptable.table.rowvalues import freeze, frozen

    a, b = torch.tensor(0.5, requires_grad=True), torch.tensor(0.25)
    cells = freeze({"losses": [a, b], "pair": (np.int64(3), np.float32(0.5)), "nested": [[1, 2], (a,)]})
    b.fill_(9.0)
    assert same(cells["losses"], (0.5, 0.25)) and same(cells["pair"], (3, 0.5))
    assert cells["nested"] == ([1, 2], (a,))  # (a list in the list is left for the writer, as before)
    long = [torch.tensor(1.0)] * (MAX_ARRAY + 1)
    assert frozen(long) == tuple(long) and frozen([1, "x", None]) == (1, "x", None)
