"""steptable.diagnostics._grads: qmass on the gradients real trainers hold: sparse (nn.Embedding(sparse=True),
compressed layouts) and DTensor (FSDP2 ``fully_shard``) gradients, against the dense tensors they stand for."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from steptable.diagnostics import RoutingMonitor, quarantine_mass

pytestmark = [
    pytest.mark.filterwarnings("ignore:Sparse:UserWarning"),  # torch's notes on beta layouts and invariant checks
]


def _qmass(keep: list[Any], quar: list[Any]) -> float:
    k = math.sqrt(sum(float((t.double() ** 2).sum()) for t in keep))
    q = math.sqrt(sum(float((t.double() ** 2).sum()) for t in quar))
    return q / (k + q)


def _step(mon: Any, keep: list[Any], quar: list[Any]) -> dict[str, float]:
    g = torch.Generator().manual_seed(0)
    act, v = torch.randn(40, 6, generator=g), torch.randn(6, generator=g)
    return mon.step(act, v, torch.rand(40, generator=g) < 0.3, g_keep=keep, g_quar=quar)  # type: ignore[no-any-return]


def test_sparse_embedding_gradient() -> None:
    """An embedding looked up with repeated ids leaves an uncoalesced COO gradient (one value row per lookup):
    the duplicates are summed before the norm, as in the dense gradient."""
    torch.manual_seed(1)
    emb = torch.nn.Embedding(10, 4, sparse=True)
    dense = torch.nn.Embedding(10, 4)
    dense.weight.data.copy_(emb.weight.data)
    ids = torch.tensor([1, 2, 1, 7, 2, 2])
    w = torch.randn(6, 4)
    (emb(ids) * w).sum().backward()
    (dense(ids) * w).sum().backward()
    grad = emb.weight.grad
    assert grad is not None and grad.is_sparse and not grad.is_coalesced() and grad._nnz() == 6
    head = torch.nn.Linear(4, 1)
    head(torch.ones(4)).sum().backward()
    want = _qmass([head.weight.grad], [grad.double().to_dense()])  # duplicates summed in float64
    assert want == pytest.approx(_qmass([head.weight.grad], [dense.weight.grad]), rel=1e-6)  # float32 sums
    assert quarantine_mass([head.weight.grad], [grad]).item() == pytest.approx(want, rel=1e-12)
    row = _step(RoutingMonitor(capacity=64, warmup=8), [head.weight.grad], [grad])
    assert row["qmass"] == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
def test_sparse_layouts_match_dense(dtype: Any) -> None:
    g = torch.Generator().manual_seed(2)
    full = torch.randn(6, 10, generator=g)
    full[torch.rand(6, 10, generator=g) < 0.6] = 0.0
    full = full.to(dtype)
    dense_keep = [torch.randn(5, generator=g)]
    want = _qmass(dense_keep, [full])
    # uncoalesced COO with duplicates whose sum is the dense tensor: every nonzero split in two, shuffled
    coo = full.to_sparse().coalesce()
    idx, val = coo.indices(), coo.values()
    perm = torch.randperm(2 * val.shape[0], generator=g)
    dup = torch.sparse_coo_tensor(
        torch.cat([idx, idx], 1)[:, perm], torch.cat([0.25 * val, 0.75 * val])[perm], full.shape
    )
    hybrid = full.to_sparse(sparse_dim=1)  # [nnz rows, 10] values
    halves = torch.cat([hybrid._values() / 2] * 2)
    hybrid_dup = torch.sparse_coo_tensor(torch.cat([hybrid._indices()] * 2, 1), halves, full.shape)
    layouts = [coo, dup, hybrid, hybrid_dup]
    if dtype != torch.bfloat16:  # compressed layouts of bf16 are not supported everywhere
        layouts += [full.to_sparse_csr(), full.to_sparse_csc(), full.to_sparse_bsr((2, 5)), full.to_sparse_bsc((3, 2))]
    for sp in layouts:
        got = quarantine_mass(dense_keep, [sp]).item()
        ref = _qmass(dense_keep, [sp.to(torch.float64).to_dense()])  # the halves add up exactly in float64
        assert got == pytest.approx(ref, rel=1e-12), (sp.layout, got, ref)
        assert got == pytest.approx(want, rel=1e-12 if dtype == torch.float64 else 1e-2), (sp.layout, got, want)


def test_sparse_empty_and_all_duplicates() -> None:
    empty = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.int64), torch.zeros(0), (3, 3))
    assert quarantine_mass([torch.ones(4)], [empty]).item() == 0.0
    same = torch.sparse_coo_tensor(torch.tensor([[1, 1, 1], [2, 2, 2]]), torch.tensor([1.0, 2.0, -6.0]), (3, 3))
    assert quarantine_mass([torch.full((9,), 1.0)], [same]).item() == pytest.approx(3 / (3 + 3), rel=1e-12)


@pytest.fixture
def gloo_world_of_one(tmp_path: Path) -> Iterator[Any]:
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available():
        pytest.skip("torch.distributed is not available")
    tensor = pytest.importorskip("torch.distributed.tensor")
    if dist.is_initialized():
        pytest.skip("a process group is already initialised")
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'init'}", rank=0, world_size=1)
    try:
        yield tensor
    finally:
        dist.destroy_process_group()


def test_dtensor_gradients(gloo_world_of_one: Any) -> None:
    """FSDP2 leaves DTensor gradients (Shard(0)); also Partial (unreduced) and 2-D (replicate x shard) ones: qmass
    is a plain float64 tensor with the norms of the full tensors, in the monitor too, with or without
    sharded_grads."""
    dt = gloo_world_of_one
    mesh = dt.init_device_mesh("cpu", (1,))
    mesh2 = dt.init_device_mesh("cpu", (1, 1), mesh_dim_names=("dp", "fsdp"))
    g = torch.Generator().manual_seed(3)
    a, b, c, d = (torch.randn(*s, generator=g) for s in ((7, 3), (4,), (5, 2), (6,)))
    keep = [dt.distribute_tensor(a, mesh, [dt.Shard(0)]), None, dt.DTensor.from_local(b, mesh, [dt.Partial()])]
    quar = [dt.distribute_tensor(c, mesh2, [dt.Replicate(), dt.Shard(0)]), d]  # mixed with a plain tensor
    want = _qmass([a, b], [c, d])
    got = quarantine_mass(keep, quar)
    assert type(got) is torch.Tensor and got.dtype == torch.float64 and got.shape == ()
    assert got.item() == pytest.approx(want, rel=1e-12)
    for sharded in (False, True):
        row = _step(RoutingMonitor(capacity=64, warmup=8, sharded_grads=sharded), keep, quar)
        assert row["qmass"] == pytest.approx(want, rel=1e-12)
