"""CUDA graphs for RoutingMonitor: the fixed-shape part of a step (``_compute``) captured per batch-size bucket and
replayed. A graph reads and writes the monitor's ring tensors by address, so those are only ever changed in place.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Any, NamedTuple, Protocol

import torch
from torch import Tensor

#: CUDA graphs kept per monitor (one per size bucket seen at least twice), least recently used dropped first
_MAX_GRAPHS = 8
#: captures per monitor at most (each one synchronises); past it, new buckets run eagerly
_MAX_CAPTURES = 16
#: the smallest size bucket: batches are padded with masked-out rows to a power of two at least this large
_MIN_BUCKET = 64


class _Graph(NamedTuple):
    """A captured ``_compute``: copy the step's rows and squared norms into ``rows``/``sq``, replay, read ``out``."""

    graph: Any  # torch.cuda.CUDAGraph
    rows: Tensor
    sq: Tensor
    out: Tensor


class _Monitor(Protocol):
    """What the graph code needs of the monitor."""

    cuda_graph: bool
    _captures: int

    @property
    def nan_policy(self) -> str: ...

    @property
    def warmup(self) -> int: ...

    @property
    def nbins(self) -> int: ...

    @property
    def _graphs(self) -> OrderedDict[tuple[Any, ...], _Graph | None]: ...

    def _compute(self, rows: Tensor, sq: Tensor) -> Tensor: ...

    def _st(self) -> tuple[Tensor, Tensor, Tensor, Tensor]: ...

    def _remember(self, key: tuple[Any, ...], g: _Graph | None) -> None: ...

    def _capture(self, rows: Tensor, sq: Tensor) -> _Graph | None: ...

    def _capture_now(self, rows: Tensor, sq: Tensor) -> _Graph | None: ...


class GraphedCompute:
    """Mixin of RoutingMonitor: ``_compute_maybe_graphed`` and its graph cache (``_graphs``, ``_captures``)."""

    def _compute_maybe_graphed(self: _Monitor, rows: Tensor, sq: Tensor) -> Tensor:
        """``_compute``, replayed from a CUDA graph once this size bucket has been seen before (see ``cuda_graph``)."""
        if not (self.cuda_graph and rows.is_cuda) or torch.cuda.is_current_stream_capturing():
            return self._compute(rows, sq)
        n = rows.shape[1]
        bucket = max(_MIN_BUCKET, 1 << max(n - 1, 0).bit_length())
        key = (bucket, self.nan_policy, self.warmup, self.nbins)  # public attributes a user may change
        g = self._graphs.get(key)
        if g is None and (key not in self._graphs or self._captures >= _MAX_CAPTURES):
            self._remember(key, None)  # first sighting (or no captures left): eager
            return self._compute(rows, sq)
        if bucket != n:  # zero columns are invalid rows (validity row 0): masked out like a rank's padding
            rows = torch.nn.functional.pad(rows, (0, bucket - n))
        if g is None:
            self._captures += 1
            g = self._capture(rows, sq)
            if g is None:
                return self._compute(rows, sq)
            self._remember(key, g)
        self._graphs.move_to_end(key)
        g.rows.copy_(rows)
        g.sq.copy_(sq)
        g.graph.replay()
        return g.out.clone()  # the graph rewrites ``out`` at every replay; a pending step keeps its own copy

    def _remember(self: _Monitor, key: tuple[Any, ...], g: _Graph | None) -> None:
        self._graphs[key] = g
        self._graphs.move_to_end(key)
        while len(self._graphs) > 2 * _MAX_GRAPHS or sum(v is not None for v in self._graphs.values()) > _MAX_GRAPHS:
            self._graphs.popitem(last=False)

    def _capture(self: _Monitor, rows: Tensor, sq: Tensor) -> _Graph | None:
        """Capture ``_compute`` for these (padded) rows; None (and the monitor stays eager) if capturing fails. Its
        static tensors are normal ones even under torch.inference_mode(): each replay copies into them."""
        with torch.inference_mode(False):
            return self._capture_now(rows, sq)

    def _capture_now(self: _Monitor, rows: Tensor, sq: Tensor) -> _Graph | None:
        buf, head, count, _ = self._st()
        saved = (buf.clone(), head.clone(), count.clone())

        def restore() -> None:
            buf.copy_(saved[0])
            head.copy_(saved[1])
            count.copy_(saved[2])

        static_rows, static_sq = rows.clone(), sq.clone()
        main = torch.cuda.current_stream(rows.device)
        side = torch.cuda.Stream(device=rows.device)  # type: ignore[no-untyped-call]
        try:
            # warm-up on a side stream (allocations, library handles), as CUDA graph capture requires; it updates
            # the buffer, so the state is put back before the capture records the real step
            side.wait_stream(main)
            with torch.cuda.device(rows.device), torch.cuda.stream(side):
                self._compute(static_rows, static_sq)
            main.wait_stream(side)
            restore()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.device(rows.device), torch.cuda.graph(graph, capture_error_mode="thread_local"):
                out = self._compute(static_rows, static_sq)
        except Exception as exc:  # an unsupported op or driver: the eager path computes the same values
            main.wait_stream(side)
            restore()
            self.cuda_graph = False
            self._graphs.clear()
            warnings.warn(f"RoutingMonitor: CUDA graph capture failed, running eagerly ({exc!r})", stacklevel=4)
            return None
        return _Graph(graph, static_rows, static_sq, out)
