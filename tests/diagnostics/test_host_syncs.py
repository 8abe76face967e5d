"""The no-host-sync contract: the recorders catch every synchronising op and blocking copy, a monitor step makes
exactly one host transfer, the standalone functions and the sparse norm none, and host inputs go to the device
without blocking."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from steptable.diagnostics import COLUMNS, RoutingMonitor, auroc, cosine_mean, multiotsu, quarantine_mass, shares
from tests.diagnostics.helpers import CUDA, make_batch, same

# Ops that force (or imply) a device -> host synchronisation or a data-dependent output shape.
_SYNC_OPS = {
    "_local_scalar_dense",
    "item",
    "is_nonzero",
    "equal",
    "nonzero",
    "nonzero_static",
    "argwhere",
    "masked_select",
    "unique_consecutive",
    "unique_dim",
    "_unique",
    "_unique2",
    "bincount",
    "repeat_interleave",
    "masked_scatter",
}


class HostSyncRecorder(TorchDispatchMode):
    """Records every aten op and flags the host-bound ones: sync ops, boolean-mask indexing, copies to the CPU.

    On a CPU tensor a copy "to the host" is invisible unless it names the device, so the monitor's final
    transfer is an explicit ``.to(device="cpu", copy=True)``: it shows up here as ``_to_copy(device=cpu)``.
    """

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []
        self.host_bound: list[tuple[int, str]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        self.ops.append(name)
        flag = name in _SYNC_OPS
        if name in ("index", "index_put", "index_put_"):
            flag = any(isinstance(t, torch.Tensor) and t.dtype == torch.bool for t in (args[1] or []))
        if name == "_to_copy" and kwargs.get("device") is not None:
            flag = flag or torch.device(kwargs["device"]).type == "cpu"
        if name == "copy_":
            flag = flag or (args[0].device.type == "cpu" and args[1].device.type != "cpu")
        if flag:
            self.host_bound.append((len(self.ops) - 1, name))
        return func(*args, **kwargs)


def test_recorder_catches_syncs() -> None:
    """The recorder is not vacuous: .item(), float(), bool(), boolean-mask indexing, nonzero, .cpu-like copies."""
    x = torch.randn(8)
    for fn in (
        lambda: x.sum().item(),
        lambda: float(x.sum()),
        lambda: bool(x.sum() > 0),
        lambda: x[x > 0],
        lambda: torch.nonzero(x),
        lambda: torch.unique(x),
        lambda: x.to(device="cpu", copy=True),
    ):
        with HostSyncRecorder() as rec:
            fn()
        assert rec.host_bound, fn


@pytest.mark.parametrize("nan_policy", ["propagate", "drop"])
def test_monitor_step_has_exactly_one_host_transfer(nan_policy: str) -> None:
    g = torch.Generator().manual_seed(5)
    mon = RoutingMonitor(capacity=1024, warmup=200, nan_policy=nan_policy)
    mon.step(*make_batch(g, 300))  # lazy allocation happens outside the recorded step
    act, v, hack, adv = make_batch(g, 300, dtype=torch.bfloat16)
    grads = {"g_keep": [torch.randn(5, generator=g), None], "g_quar": [torch.randn(3, generator=g)]}
    with HostSyncRecorder() as rec:
        pending = mon.step_async(act, v, hack, adv, refreshed=True, **grads)
    assert rec.host_bound == [], rec.host_bound  # nothing inside the step touches the host
    with HostSyncRecorder() as rec:
        row = pending.get()
    assert [name for _, name in rec.host_bound] == ["_to_copy"]
    assert rec.host_bound[0][0] == len(rec.ops) - 1  # ... and it is the very last op
    assert not math.isnan(row["tlo"])  # past warmup: the full path (Otsu, shares) ran
    with HostSyncRecorder() as rec:
        mon.step(act, v, hack, adv, **grads)
    assert [name for _, name in rec.host_bound] == ["_to_copy"] and rec.host_bound[0][0] == len(rec.ops) - 1


def test_standalone_functions_do_not_sync() -> None:
    g = torch.Generator().manual_seed(8)
    act, v, hack, adv = make_batch(g, 500, dtype=torch.bfloat16)
    s = torch.randn(500, generator=g, dtype=torch.float64)
    with HostSyncRecorder() as rec:
        auroc(s, hack, adv > 0, nan_policy="drop")
        lo, hi = multiotsu(s, mask=adv > -1)
        shares(s, lo, hi)
        cosine_mean(act, v)
        quarantine_mass([act], [v])
        ints = torch.randint(2**60, 2**60 + 50, (500,), generator=g)  # (ranked and binned as int64)
        auroc(ints, hack)
        shares(ints, lo, 2**60 + 30)
    assert rec.host_bound == [] and len(rec.ops) > 50


@CUDA
def test_monitor_cuda_no_sync() -> None:
    dev = torch.device("cuda")
    g = torch.Generator().manual_seed(6)
    batches = [tuple(t.to(dev) for t in make_batch(g, 4096, d=256, dtype=torch.bfloat16)) for _ in range(4)]
    grads = [torch.randn(1000, device=dev)]
    default = RoutingMonitor(capacity=8192, warmup=1000, device=dev)  # float32 projections
    exact = RoutingMonitor(capacity=8192, warmup=1000, device=dev, proj_dtype=torch.float64)
    # the second step of a batch size captures its CUDA graph (a one-off synchronisation), outside the window
    pending = [exact.step_async(*b, g_keep=grads, g_quar=grads) for b in batches[:2]]
    for b in batches[:2]:
        default.step_async(*b, g_keep=grads, g_quar=grads)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")  # any synchronising call inside the steps raises
    try:
        for b in batches[2:]:
            default.step_async(*b, g_keep=grads, g_quar=grads)
            pending.append(exact.step_async(*b, g_keep=grads, g_quar=grads))
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert exact.cuda_graph and default.cuda_graph  # the steps in the window replayed graphs
    rows = [p.get() for p in pending]
    cpu = RoutingMonitor(capacity=8192, warmup=1000)
    for b, row in zip(batches, rows, strict=True):
        ref = cpu.step(*(t.cpu() for t in b), g_keep=[grads[0].cpu()], g_quar=[grads[0].cpu()])
        for k in COLUMNS:  # float64 on both sides; only reduction order differs
            assert same(row[k], ref[k], 1e-9), (k, row[k], ref[k])


def test_sparse_norm_has_no_host_sync() -> None:
    """Merging duplicate indices with ``coalesce()`` would sync on a GPU; the sort + index_add path does not."""
    ids = torch.tensor([[0, 3, 0, 5, 3]])
    sp = torch.sparse_coo_tensor(ids, torch.randn(5, 4), (8, 4))
    assert not sp.is_coalesced()
    with HostSyncRecorder() as rec:
        quarantine_mass([torch.randn(3)], [sp])
    assert rec.host_bound == [] and "sort" in rec.ops


class CopyRecorder(TorchDispatchMode):
    """Records every copy across devices as (source, destination, non_blocking)."""

    def __init__(self) -> None:
        super().__init__()
        self.copies: list[tuple[str, str, bool]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        if name == "_to_copy" and kwargs.get("device") is not None:
            dst = torch.device(kwargs["device"])
            if dst.type != args[0].device.type:
                self.copies.append((args[0].device.type, dst.type, bool(kwargs.get("non_blocking", False))))
        if name == "copy_" and args[0].device.type != args[1].device.type:
            blocking = bool(args[2]) if len(args) > 2 else bool(kwargs.get("non_blocking", False))
            self.copies.append((args[1].device.type, args[0].device.type, blocking))
        return func(*args, **kwargs)


def test_copy_recorder_sees_blocking_copies() -> None:
    with CopyRecorder() as rec:
        torch.ones(3).to("meta")
        torch.ones(3).to(device="meta", dtype=torch.float64, non_blocking=True)
    assert rec.copies == [("cpu", "meta", False), ("cpu", "meta", True)]


_HOST_MASK = torch.tensor([True, False] * 4)


_CALLS = {
    # the "meta" device stands in for an accelerator: the data is on it, the small inputs on the host
    "auroc": lambda: auroc(torch.randn(8, device="meta"), torch.tensor([0, 1] * 4), _HOST_MASK),
    "shares": lambda: shares(torch.randn(8, device="meta"), torch.tensor(-0.5), torch.tensor(0.5), _HOST_MASK),
    "multiotsu": lambda: multiotsu(torch.randn(8, device="meta"), mask=_HOST_MASK),
    "cosine_mean": lambda: cosine_mean(torch.randn(8, 4, device="meta"), torch.randn(4), _HOST_MASK),
}


@pytest.mark.parametrize("name", sorted(_CALLS))
def test_host_inputs_are_copied_to_the_device_without_blocking(name: str) -> None:
    """A blocking host-to-device copy synchronises a CUDA stream; auroc promises no host synchronisation."""
    with CopyRecorder() as rec:
        _CALLS[name]()
    assert rec.copies, "nothing was copied: the test would prove nothing"
    assert all(src == "cpu" and dst == "meta" and non_blocking for src, dst, non_blocking in rec.copies), rec.copies


def test_copies_to_the_host_stay_blocking() -> None:
    """The other way (scores on the host, labels elsewhere) a non-blocking copy could be read before it lands."""
    labels, scores = torch.tensor([0, 1, 1, 0], device="meta"), torch.randn(4)
    with CopyRecorder() as rec:
        # meta labels hold no data, so the copy is checked here, not the value
        with pytest.raises((NotImplementedError, RuntimeError)):
            auroc(scores, labels)
    assert rec.copies == [("meta", "cpu", False)]
