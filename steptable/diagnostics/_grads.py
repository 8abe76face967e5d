"""Squared L2 norms of gradient lists for qmass: dense, sparse (COO, CSR/CSC/BSR/BSC) and DTensor (FSDP2) gradients.

No host sync: sparse gradients are merged with a sort and an index_add (``coalesce`` would sync on a GPU), and a
DTensor's shards are summed with one collective per (mesh, placements) group.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor

from steptable.diagnostics._util import STAT_DTYPE, to_device

_COMPRESSED = (torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc)


def grad_sq_norms(grads: Iterable[Tensor | None], device: torch.device) -> tuple[Tensor, Tensor]:
    """(rank, whole): summed squared L2 norms of ``grads`` (None entries skipped), 0-d float64 on ``device``.

    rank   the plain tensors, dense or sparse, as this rank holds them (with FSDP/ZeRO shards: this rank's share);
    whole  the DTensors, as the global tensors they stand for (their shards reduced over the device mesh), the
           same on every rank of the mesh.

    Each norm is taken on the tensor's device in float32 (float64 on CPU or for float64 grads), never in half
    precision; the results are combined in float64.
    """
    dtensor = _dtensor_type()
    parts: list[Tensor] = []
    groups: dict[tuple[Any, ...], list[Tensor]] = {}
    for g in [grads] if isinstance(grads, Tensor) else grads:  # (one flat tensor: one norm, not one per element)
        if g is None:
            continue
        if not isinstance(g, Tensor):  # a dict iterates over its names: say what was meant
            raise TypeError("gradients must be tensors or an iterable of them (e.g. [p.grad for p in params]), "
                            f"got an item of type {type(g).__name__}")
        g = g.detach()
        if dtensor is not None and isinstance(g, dtensor):
            mesh, sharded, local = _dtensor_local(g)
            groups.setdefault((mesh, sharded), []).append(_sq_norm(local))
        else:
            parts.append(to_device(_sq_norm(g), device))
    rank = torch.stack(parts).sum() if parts else torch.zeros((), dtype=STAT_DTYPE, device=device)
    whole = [to_device(_reduce(mesh, sharded, sq), device) for (mesh, sharded), sq in groups.items()]
    total = torch.stack(whole).sum() if whole else torch.zeros((), dtype=STAT_DTYPE, device=device)
    return rank, total


def grad_sq_norm(grads: Iterable[Tensor | None], device: torch.device) -> Tensor:
    """Sum of squared L2 norms of ``grads`` as a 0-d float64 tensor on ``device`` (DTensors: global norms)."""
    rank, whole = grad_sq_norms(grads, device)
    return rank + whole


def _sq_norm(g: Tensor) -> Tensor:
    """Squared L2 norm of one plain tensor (float64, 0-d, on its device)."""
    if g.layout in _COMPRESSED:
        g = g.to_sparse()  # COO (indices of compressed layouts are unique already; this is fixed-shape)
    if g.layout == torch.sparse_coo:
        g = _merged_values(g)
    dt = torch.float64 if (g.device.type == "cpu" or g.dtype == torch.float64) else torch.float32
    n: Tensor = torch.linalg.vector_norm(g, dtype=dt).to(STAT_DTYPE)
    return n * n


def _merged_values(g: Tensor) -> Tensor:
    """The values of a sparse COO tensor with duplicate indices summed (what ``coalesce()`` gives, without its
    data-dependent shape): [nnz, *dense dims], the merged sums first and zeros after."""
    values: Tensor = g._values()
    if g.is_coalesced():
        return values
    idx = g._indices()
    lin = torch.zeros(idx.shape[1], dtype=torch.int64, device=idx.device)
    for i in range(idx.shape[0]):  # row-major linear index over the sparse dims
        lin = lin * g.shape[i] + idx[i]
    lin, order = torch.sort(lin)
    new = torch.ones_like(lin, dtype=torch.bool)
    new[1:] = lin[1:] != lin[:-1]
    slot = torch.empty_like(order).scatter_(0, order, torch.cumsum(new, 0) - 1)  # duplicates share a slot
    dt = torch.float64 if (values.device.type == "cpu" or values.dtype == torch.float64) else torch.float32
    merged = torch.zeros(values.shape, dtype=dt, device=values.device)
    return merged.index_add_(0, slot, values.to(dt))  # in the values' own order: no gather of the rows


def _dtensor_type() -> type[Any] | None:
    """DTensor, if torch.distributed.tensor is loaded (no DTensor can exist otherwise; importing it costs ~1 s)."""
    mod = sys.modules.get("torch.distributed.tensor")
    cls = getattr(mod, "DTensor", None)
    return cls if isinstance(cls, type) else None


def _dtensor_local(g: Any) -> tuple[Any, tuple[bool, ...], Tensor]:
    """(mesh, which mesh dims shard it, local shard) of a DTensor; Partial placements are reduced first (their
    local tensors are addends of the value, not pieces of it)."""
    from torch.distributed.tensor import Replicate

    if any(p.is_partial() for p in g.placements):
        g = g.redistribute(g.device_mesh, [Replicate() if p.is_partial() else p for p in g.placements])
    local: Tensor = g.to_local()
    return g.device_mesh, tuple(p.is_shard() for p in g.placements), local


def _reduce(mesh: Any, sharded: tuple[bool, ...], sq: list[Tensor]) -> Tensor:
    """The global squared norm of a group: this rank's sum, summed over the sharding mesh dims (replicated dims
    hold copies: not summed)."""
    from torch.distributed.tensor import DTensor, Partial, Replicate

    local = torch.stack(sq).sum()
    if not any(sharded):
        return local
    partial = DTensor.from_local(local, mesh, [Partial() if s else Replicate() for s in sharded])
    out: Tensor = partial.full_tensor()
    return out
