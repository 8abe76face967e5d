"""The ring buffer of recent scores behind RoutingMonitor's z-scores and Otsu split.

Its tensors are allocated once, on the device of the monitor's first step, and from then on only changed in
place: a captured CUDA graph reads and writes these very tensors, so ``clear`` and ``load`` must keep them.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from steptable.diagnostics._util import STAT_DTYPE


class ScoreRing:
    """float64 scores in a ring of ``capacity`` slots (plus a trash slot for masked-out writes), head and count.

    Before it is placed on a device the ring holds nothing, or the host copy of a loaded state that ``place``
    moves to the device once.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.device: torch.device | None = None  # None until placed
        self._host: tuple[Tensor, int, int] | None = None  # a loaded state (buffer, head, count) waiting for placement
        self._buf: Tensor | None = None  # [capacity + 1]: the last slot is a trash slot for masked-out writes
        self._head: Tensor | None = None  # 0-d int64: next slot to write
        self._count: Tensor | None = None  # 0-d int64: filled slots (saturates at capacity)
        self._slots: Tensor | None = None  # arange(capacity)

    def place(self, device: torch.device) -> torch.device:
        """Allocate the ring on ``device`` (the loaded host state, if any, is copied there); a no-op once placed."""
        if self.device is not None:
            return self.device
        if device.type == "cuda" and device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        # Normal tensors even when the first step runs under torch.inference_mode(): every later step (and reset)
        # changes them in place, which an inference tensor refuses outside that mode, for good.
        with torch.inference_mode(False):
            self._allocate(device)
        self.device = device
        return device

    def _allocate(self, device: torch.device) -> None:
        buf = torch.zeros(self.capacity + 1, dtype=STAT_DTYPE, device=device)
        head = count = 0
        if self._host is not None:
            saved, head, count = self._host
            if device.type == "cuda":
                saved = saved.pin_memory()  # so that the copy below does not wait for the device
            buf[: self.capacity].copy_(saved, non_blocking=device.type != "cpu")
            self._host = None
        self._buf = buf
        self._head = torch.full((), head, dtype=torch.int64, device=device)  # fill kernels, not host copies
        self._count = torch.full((), count, dtype=torch.int64, device=device)
        self._slots = torch.arange(self.capacity, device=device)

    def tensors(self) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """(buffer, head, count, slots); only once placed."""
        assert self._buf is not None and self._head is not None
        assert self._count is not None and self._slots is not None
        return self._buf, self._head, self._count, self._slots

    def clear(self) -> None:
        """Empty the ring, in place (no host sync)."""
        self._host = None
        if self.device is not None:
            buf, head, count, _ = self.tensors()
            buf.zero_()  # slots past ``count`` must hold exact zeros (see ``moments``)
            head.zero_()
            count.zero_()

    def load(self, buffer: Tensor, head: int, count: int) -> None:
        """Restore a saved state: copied in place once placed, else kept on the host until ``place``."""
        if tuple(buffer.shape) != (self.capacity,):
            raise ValueError(f"state buffer has shape {tuple(buffer.shape)}, expected ({self.capacity},)")
        if not (0 <= head < self.capacity and 0 <= count <= self.capacity):
            raise ValueError(f"state head={head}, count={count} out of range for capacity {self.capacity}")
        saved = buffer.detach().to(device="cpu", dtype=STAT_DTYPE, copy=True)  # never aliases the caller's state
        if self.device is None:
            self._host = (saved, head, count)
            return
        buf, h, c, _ = self.tensors()
        buf[: self.capacity].copy_(saved)
        buf[self.capacity] = 0.0
        h.fill_(head)
        c.fill_(count)

    def state(self) -> dict[str, Any]:
        """{"buffer", "head", "count"} as host values (syncs), or {} when the ring holds nothing."""
        if self._host is not None:
            saved, head, count = self._host
            return {"buffer": saved.clone(), "head": head, "count": count}
        if self.device is None:
            return {}
        buf, h, c, _ = self.tensors()
        # a copy even on the CPU: a checkpoint must not change as the monitor keeps stepping
        return {"buffer": buf[: self.capacity].to(device="cpu", copy=True), "head": int(h), "count": int(c)}

    def push(self, s: Tensor, use: Tensor) -> None:
        """Append ``s[use]`` (in order) with fixed shapes: unused rows go to the trash slot; when more than
        ``capacity`` rows are used, only the last ``capacity`` are written."""
        buf, head, count, _ = self.tensors()
        cap = self.capacity
        u = use.to(torch.int64)
        rank = torch.cumsum(u, 0) - 1
        n_new = u.sum()
        skip = (n_new - cap).clamp(min=0)
        r = rank - skip
        write = use & (r >= 0)
        pos = torch.where(write, torch.remainder(head + r, cap), cap)
        buf.scatter_(0, pos, s)
        written = n_new - skip
        # in place: a captured graph keeps reading and writing these very tensors
        head.copy_(torch.remainder(head + written, cap))
        count.copy_((count + written).clamp(max=cap))

    def moments(self) -> tuple[Tensor, Tensor]:
        """Mean and population std (ddof=0) of the buffered scores (nan when the ring is empty)."""
        buf, _, count, slots = self.tensors()
        return _moments(buf[: self.capacity], count, slots)

    def values(self, zscored: bool = False) -> Tensor:
        """The buffered scores, oldest first (z-scored with ``moments`` when asked). Syncs."""
        if self._host is not None:
            buf, h, c = self._host
            head, count = torch.tensor(h), torch.tensor(c)
            slots = torch.arange(self.capacity)
        elif self.device is not None:
            buf, head, count, slots = self.tensors()
            buf = buf[: self.capacity]
        else:
            return torch.empty(0, dtype=STAT_DTYPE)
        n = int(count)
        idx = (torch.arange(n, device=buf.device) + int(head) - n) % self.capacity
        vals = buf.index_select(0, idx)
        if zscored:
            mean, std = _moments(buf, count, slots)
            vals = (vals - mean) / std
        return vals


def _moments(buf: Tensor, count: Tensor, slots: Tensor) -> tuple[Tensor, Tensor]:
    nf = count.to(STAT_DTYPE)
    mean = buf.sum() / nf  # slots past ``count`` were never written: they hold exact zeros
    dev = (buf - mean) * (slots < count)
    std = torch.sqrt((dev * dev).sum() / nf)
    return mean, std
