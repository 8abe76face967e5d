"""Gathering the per-rollout table across ranks (torch.distributed), padded to a common size."""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import Tensor

from steptable.diagnostics._util import STAT_DTYPE


def world_size(mode: bool | None, group: dist.ProcessGroup | None) -> int:
    """1 unless torch.distributed is initialised (``mode`` None: auto; False: never; True: required)."""
    if mode is False:
        return 1
    if not (dist.is_available() and dist.is_initialized()):
        if mode:
            raise RuntimeError("RoutingMonitor(distributed=True) but torch.distributed is not initialised")
        return 1
    return int(dist.get_world_size(group))


def pad_size(n: int, pad_to: int | None, group: dist.ProcessGroup | None, device: torch.device) -> int:
    """The common per-rank row count: ``pad_to`` when given, else the max N over ranks.

    Agreeing on the max costs one extra collective (all_reduce MAX). With gloo in the group it runs on a CPU
    tensor (no device sync); on a device-only backend (nccl) reading its result is a second host sync of the
    step. Pass ``pad_to`` (a static bound on rollouts per rank) to avoid both.
    """
    if pad_to is not None:
        if n > pad_to:
            raise ValueError(f"{n} rollouts on this rank exceed pad_to={pad_to}")
        return pad_to
    if "gloo" in str(dist.get_backend(group)):
        t = torch.full((1,), n, dtype=torch.int64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)
        return int(t[0])
    t = torch.full((1,), n, dtype=torch.int64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)
    return int(t[0])  # host sync (device-only backend without pad_to)


def gather_rows(
    rows: Tensor, extra: Tensor, world: int, pad_to: int | None, group: dist.ProcessGroup | None
) -> tuple[Tensor, Tensor]:
    """All-gather a float64 [K, n] per-row table and a float64 [E] per-rank vector in ONE collective.

    Each rank's table is padded with zero columns to the common size (the caller's table must carry a validity
    row, 1 on real rows, so padding is masked out). Returns ([K, world * pad] in rank order, [world, E]).
    """
    k, n = rows.shape
    e = extra.shape[0]
    pad = pad_size(n, pad_to, group, rows.device)
    local = torch.zeros(k * pad + e, dtype=STAT_DTYPE, device=rows.device)
    local[: k * pad].view(k, pad)[:, :n] = rows
    local[k * pad :] = extra
    parts = [torch.empty_like(local) for _ in range(world)]
    dist.all_gather(parts, local, group=group)
    everything = torch.stack(parts)
    table = everything[:, : k * pad].reshape(world, k, pad).permute(1, 0, 2).reshape(k, world * pad)
    return table, everything[:, k * pad :]
