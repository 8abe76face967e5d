"""RoutingMonitor: the per-step routing diagnostics of a gradient-routing RL run, computed where the tensors live.

    monitor = RoutingMonitor(capacity=65536, warmup=1024)
    for step in range(n_steps):
        ...
        row = monitor.step(act, v_act, hack, adv, g_keep=keep_grads, g_quar=quar_grads, refreshed=did_refresh)
        step_log.log({"step": step, **row})

``step`` returns the routing columns ``auroc cos qmass keep resid rout tlo thi stale`` as Python floats. All device
values of a step are packed into one float64 tensor and brought to the host by exactly one blocking copy at the
very end (``PendingStats.get``); nothing before it synchronises: no ``.item()``, no boolean indexing, no
``nonzero``/``unique``, no Python branch on a tensor value. ``step_async`` returns the packed values before that
copy, so the caller can decide when to pay for it. On CUDA, the fixed-shape part of the step is replayed from a
CUDA graph once a batch-size bucket repeats; capturing one synchronises once (see ``cuda_graph``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor

from steptable.diagnostics._dist import gather_rows, world_size
from steptable.diagnostics._grads import grad_sq_norms
from steptable.diagnostics._graphs import GraphedCompute, _Graph
from steptable.diagnostics._ring import ScoreRing
from steptable.diagnostics._util import (
    STAT_DTYPE,
    as_1d,
    as_stat,
    check_int,
    check_nan_policy,
    check_nbins,
    labels_to_bool,
    no_autocast,
    to_device,
)
from steptable.diagnostics.auc import auroc_core
from steptable.diagnostics.measures import cosine_mean_core, project, qmass_from_sq, shares_core
from steptable.diagnostics.otsu import otsu_core

__all__ = ["COLUMNS", "PendingStats", "RoutingMonitor"]

#: the routing columns, in the order of the routing schema (steptable.schemas.routing.DIAGNOSTIC_KEYS)
COLUMNS: tuple[str, ...] = ("auroc", "cos", "qmass", "keep", "resid", "rout", "tlo", "thi", "stale")
_DEVICE_COLUMNS = COLUMNS[:-1]  # "stale" is a host counter

# per-rollout table (float64 [5, N]) that is all-gathered across ranks in one collective
_N_ROWS = 5  # score, label (1/0, nan if not finite), adv > 0 (1/0, nan if not finite), cosine, valid (1/0)
_NAN = float("nan")
_INF = float("inf")


class PendingStats:
    """One step's diagnostics, still on the device. ``get()`` performs the step's single host transfer.

    values  float64 [8] device tensor in the order of ``COLUMNS`` without "stale".
    stale   the step's staleness (a host integer).
    """

    __slots__ = ("stale", "values")

    def __init__(self, values: Tensor, stale: int) -> None:
        self.values = values
        self.stale = stale

    def get(self) -> dict[str, float]:
        """The step's columns as Python floats (blocks until the device has computed them)."""
        # THE single device-to-host synchronisation of a monitor step: one blocking copy of the packed values.
        host = self.values.to(device="cpu", copy=True)
        floats: list[float] = host.tolist()  # host memory already: no further sync
        out = dict(zip(_DEVICE_COLUMNS, floats, strict=True))
        out["stale"] = float(self.stale)
        return out


class RoutingMonitor(GraphedCompute):
    """Rolling routing diagnostics: AUROC, cosine, quarantine mass, Otsu thresholds, shares, staleness.

    capacity       size of the ring buffer of recent scores kept on the device (float64).
    warmup         number of buffered scores needed before the Otsu split is used (default ``min(1024,
                   capacity)``); until then ``tlo``/``thi`` are nan and every rollout counts as resid.
    device         where the buffer lives; default: the device of the first step's inputs (a state loaded
                   before that step waits on the host and moves there then). Inputs on another device are moved
                   there (a CPU -> GPU move is an extra copy; keep inputs on the device).
    nan_policy     "propagate" (default): a non-finite score, label or advantage makes the values that depend
                   on it nan for that step (auroc for a selected row or a non-finite advantage; keep/resid/rout
                   and tlo/thi for any score; cos for any cosine); "drop": those rows are left out (by masks, no
                   data-dependent shapes). Non-finite scores are never written into the buffer, so later steps
                   recover either way.
    nbins          Otsu histogram bins (skimage's default 256). The search holds every pair of bins at once on the
                   device: memory grows with nbins squared (4096 bins: about 0.7 GB a step, 8192: 2.6 GB on CPU).
    proj_dtype     precision of ``act @ v_act`` and of the norms; default float64 on CPU, float32 on GPUs
                   (bf16/fp16 activations are upcast first; autocast is disabled inside the monitor).
    distributed    None: gather across ranks when torch.distributed is initialised with world_size > 1;
                   False: always local; True: require an initialised process group. Gathering makes ``step`` a
                   collective: every rank of the group calls it, in the same order (a step on rank 0 alone waits
                   for the others until the process group's timeout); to measure one rank's rollouts only, False.
    group          process group for the gathers (default: the world).
    pad_to         static upper bound on rollouts per rank. Ranks may hold different N: rows are padded to a
                   common size with a validity row before the all_gather. Without ``pad_to`` that size is agreed
                   by one extra all_reduce(MAX) per step, run on a CPU tensor when the group has gloo, otherwise on
                   the device followed by a second host sync; give ``pad_to`` to keep one collective and one sync.
    sharded_grads  False (default): qmass uses this rank's gradients as given (with DDP they are already
                   all-reduced, so all ranks agree); True: the squared norms are summed across ranks (FSDP1/ZeRO
                   shards) in the same all_gather. DTensor gradients (FSDP2) are global either way: their norms
                   are reduced over their device mesh (see ``quarantine_mass``) and never summed again.
    cuda_graph     True (default): on a CUDA device, the fixed-shape part of the step (AUROC, buffer update,
                   moments, Otsu, shares: ~320 small kernels) runs as a CUDA graph, so a step costs a few dozen
                   launches instead of hundreds. Batches are padded with masked-out rows to a power-of-two size
                   bucket (as ranks are padded for the gather), so a loop whose rollout count varies uses a few
                   graphs; a bucket is captured the second time it is seen. Each capture synchronises once; at
                   most ``_MAX_GRAPHS`` buckets are kept (each with a workspace of a few buffer-sized float64
                   arrays) and ``_MAX_CAPTURES`` made. A capture that fails is reported once and the monitor
                   stays eager. False: always eager.

    Per step (``step``): scores ``s_i = act_i . v_act`` (or ``scores=``) are pushed into the buffer first, so the
    buffer statistics include the current step; the buffer is z-scored with its mean and population std
    (ddof=0); tlo < thi are ``multiotsu`` thresholds of the z-scored buffer; keep/resid/rout are the shares of
    this step's rollouts with z below tlo, in [tlo, thi), at/above thi. auroc uses the rollouts with
    ``adv > 0`` only; cos averages every rollout. Under torch.distributed every rank computes on the gathered
    rollouts (rank order) and returns the same global values (qmass aside, see ``sharded_grads``).
    """

    COLUMNS = COLUMNS

    def __init__(
        self,
        capacity: int = 65536,
        warmup: int | None = None,
        *,
        device: torch.device | str | None = None,
        nan_policy: str = "propagate",
        nbins: int = 256,
        proj_dtype: torch.dtype | None = None,
        distributed: bool | None = None,
        group: dist.ProcessGroup | None = None,
        pad_to: int | None = None,
        sharded_grads: bool = False,
        cuda_graph: bool = True,
    ) -> None:
        capacity = check_int(capacity, "capacity", 1)
        warm = min(1024, capacity) if warmup is None else check_int(warmup, "warmup", 0)
        if not 0 <= warm <= capacity:
            raise ValueError(f"warmup must be in [0, capacity={capacity}], got {warm}")
        nbins = check_nbins(nbins)
        pad_to = None if pad_to is None else check_int(pad_to, "pad_to", 0)
        self.capacity = capacity
        self.warmup = warm
        self.nan_policy = check_nan_policy(nan_policy)
        self.nbins = nbins
        self.proj_dtype = proj_dtype
        self.distributed = distributed
        self.group = group
        self.pad_to = pad_to
        self.sharded_grads = sharded_grads
        self.cuda_graph = cuda_graph
        # (batch size, settings the computation bakes in) -> graph (None: seen once)
        self._graphs: OrderedDict[tuple[Any, ...], _Graph | None] = OrderedDict()
        self._captures = 0  # over the monitor's life: graphs stay valid across reset/load_state_dict
        self._stale = 0
        self._steps = 0
        self._ring = ScoreRing(capacity)  # placed once; reset and load_state_dict change it in place
        if device is not None:
            self._ring.place(torch.device(device))

    # ------------------------------------------------------------------ state

    @property
    def device(self) -> torch.device | None:
        """Where the buffer lives (None until the first step when not given)."""
        return self._ring.device

    def _ensure(self, device: torch.device) -> torch.device:
        return self._ring.place(device)  # a no-op once placed

    def _st(self) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """(buffer, head, count, slots); only after ``_ensure``."""
        return self._ring.tensors()

    @property
    def stale(self) -> int:
        """Staleness the next step will report (0 right after a refresh)."""
        return self._stale

    @property
    def steps(self) -> int:
        """Number of steps taken."""
        return self._steps

    def mark_refreshed(self) -> None:
        """Record that v_act was re-extracted: the next step reports ``stale == 0``."""
        self._stale = 0

    def reset(self) -> None:
        """Empty the buffer and restart the step and staleness counters (keeps the device and, being done in
        place, the captured CUDA graphs)."""
        self._stale = 0
        self._steps = 0
        self._ring.clear()

    def state_dict(self) -> dict[str, Any]:
        """Checkpointable state (host copies; this synchronises, call it outside the hot loop)."""
        out: dict[str, Any] = {"capacity": self.capacity, "stale": self._stale, "steps": self._steps}
        out.update(self._ring.state())
        return out

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore ``state_dict()``. A monitor not yet placed keeps it on the host until its first step, which
        moves it to that step's device; a placed one copies it in place (its CUDA graphs stay valid)."""
        if state["capacity"] != self.capacity:
            raise ValueError(f"state has capacity {state['capacity']}, monitor has {self.capacity}")
        self._stale = int(state["stale"])
        self._steps = int(state["steps"])
        if "buffer" in state:
            self._ring.load(state["buffer"], int(state["head"]), int(state["count"]))
        else:
            self._ring.clear()  # saved before its first step: nothing buffered, whatever this monitor held

    def buffer(self, zscored: bool = False) -> Tensor:
        """The buffered scores, oldest first (z-scored as in ``step`` when asked). Inspection only: syncs."""
        return self._ring.values(zscored)

    # ------------------------------------------------------------------ public step

    def step(
        self,
        act: Tensor | None = None,
        v_act: Tensor | None = None,
        hack: Tensor | None = None,
        adv: Tensor | None = None,
        *,
        scores: Tensor | None = None,
        g_keep: Iterable[Tensor | None] | None = None,
        g_quar: Iterable[Tensor | None] | None = None,
        refreshed: bool = False,
    ) -> dict[str, float]:
        """Compute one step's routing columns; a dict of Python floats keyed by ``COLUMNS``.

        act        [N, D] activations of this step's rollouts (any float dtype); with v_act gives the scores
                   ``act @ v_act`` and the cosines. May be None when ``scores`` is given (cos is then nan).
        v_act      [D] current probe direction.
        hack       [N] hack labels: bool, or numbers (``!= 0`` is a hack). Required.
        adv        [N] advantages; auroc uses the rows with ``adv > 0``. None: every row.
        scores     [N] precomputed scores, used instead of ``act @ v_act``.
        g_keep     gradients of the kept (deployed) block, an iterable of tensors (None entries skipped);
        g_quar     and of the quarantine block. qmass is nan unless both are given.
        refreshed  v_act was refreshed for this step (same as calling ``mark_refreshed()`` before it).

        Exactly one host synchronisation (the final copy); see ``step_async`` to defer it.
        """
        return self.step_async(
            act, v_act, hack, adv, scores=scores, g_keep=g_keep, g_quar=g_quar, refreshed=refreshed
        ).get()

    def step_async(
        self,
        act: Tensor | None = None,
        v_act: Tensor | None = None,
        hack: Tensor | None = None,
        adv: Tensor | None = None,
        *,
        scores: Tensor | None = None,
        g_keep: Iterable[Tensor | None] | None = None,
        g_quar: Iterable[Tensor | None] | None = None,
        refreshed: bool = False,
    ) -> PendingStats:
        """Same as ``step`` without the host transfer: the values stay on the device until ``.get()``.

        The monitor's state (buffer, staleness) is updated immediately, so steps can be queued back to back.
        """
        if hack is None:
            raise TypeError("step() needs the hack labels")
        as_1d(hack, "hack")
        n = hack.shape[0]
        if scores is None and (act is None or v_act is None):
            raise TypeError("step() needs act and v_act, or scores=")
        if (act is None) != (v_act is None):
            raise TypeError("act and v_act go together")
        if refreshed:
            self._stale = 0
        like = scores if scores is not None else act
        assert like is not None
        dev = self._ensure(like.device)
        with no_autocast(dev):
            rows = self._local_rows(act, v_act, hack, adv, scores, n, dev)
            (keep, keep_whole), (quar, quar_whole) = self._grad_sq(g_keep, dev), self._grad_sq(g_quar, dev)
            sq = torch.stack([keep, quar])  # this rank's
            world = world_size(self.distributed, self.group)
            if world > 1:
                rows, sq_all = gather_rows(rows, sq, world, self.pad_to, self.group)
                if self.sharded_grads:
                    sq = sq_all.sum(0)
            sq = sq + torch.stack([keep_whole, quar_whole])  # DTensors' norms are global already
            values = self._compute_maybe_graphed(rows, sq)
        pending = PendingStats(values, self._stale)
        self._stale += 1
        self._steps += 1
        return pending

    # ------------------------------------------------------------------ internals

    def _local_rows(
        self,
        act: Tensor | None,
        v_act: Tensor | None,
        hack: Tensor,
        adv: Tensor | None,
        scores: Tensor | None,
        n: int,
        dev: torch.device,
    ) -> Tensor:
        """The float64 [5, N] per-rollout table (see ``_N_ROWS``)."""
        nan_row = torch.full((n,), _NAN, dtype=STAT_DTYPE, device=dev)
        if act is not None and v_act is not None:
            if act.ndim != 2 or act.shape[0] != n:
                raise ValueError(f"act must be [N={n}, D], got shape {tuple(act.shape)}")
            proj, cos = project(to_device(act, dev), to_device(v_act, dev), self.proj_dtype)
        else:
            proj, cos = nan_row, nan_row
        if scores is not None:
            as_1d(scores, "scores", n)
            s = as_stat(to_device(scores, dev))
        else:
            s = proj
        positive, label_ok = labels_to_bool(to_device(hack, dev))
        label = torch.where(label_ok, positive.to(STAT_DTYPE), _NAN)
        if adv is None:
            sel = torch.ones(n, dtype=STAT_DTYPE, device=dev)
        else:
            as_1d(adv, "adv", n)
            a = to_device(adv, dev)
            sel = (a > 0).to(STAT_DTYPE)
            if a.is_floating_point():
                sel = torch.where(torch.isfinite(a), sel, _NAN)
        valid = torch.ones(n, dtype=STAT_DTYPE, device=dev)
        return torch.stack([s, label, sel, cos, valid])

    @staticmethod
    def _grad_sq(grads: Iterable[Tensor | None] | None, dev: torch.device) -> tuple[Tensor, Tensor]:
        """(this rank's, global) squared norms; (nan, 0) when the gradients are not given."""
        if grads is None:
            return torch.full((), _NAN, dtype=STAT_DTYPE, device=dev), torch.zeros((), dtype=STAT_DTYPE, device=dev)
        return grad_sq_norms(grads, dev)

    def _compute(self, rows: Tensor, sq: Tensor) -> Tensor:
        s, label, sel, cos, valid_f = rows.unbind(0)
        valid = valid_f > 0.5
        score_ok = torch.isfinite(s)
        label_ok = torch.isfinite(label)
        adv_ok = torch.isfinite(sel)
        positive = label > 0.5
        selected = sel > 0.5  # nan > 0.5 is False
        propagate = self.nan_policy == "propagate"

        # auroc on the positively reinforced rollouts
        au = auroc_core(torch.where(score_ok, s, 0.0), positive, valid & selected & score_ok & label_ok)
        if propagate:
            bad = valid & (~adv_ok | (selected & ~(score_ok & label_ok)))
            au = torch.where(bad.any(), _NAN, au)

        cos_mean = cosine_mean_core(cos, valid, propagate)

        # ring buffer, z-scores, Otsu split
        use = valid & score_ok
        self._ring.push(s, use)
        buf, _, count, slots = self._st()
        mean, std = self._ring.moments()
        z_buf = (buf[: self.capacity] - mean) / std
        tlo, thi = otsu_core(z_buf, (slots < count) & torch.isfinite(z_buf), self.nbins)
        warm = count >= self.warmup
        z = (s - mean) / std
        share = shares_core(torch.where(use, z, 0.0), torch.where(warm, tlo, -_INF), torch.where(warm, thi, _INF), use)
        tlo = torch.where(warm, tlo, _NAN)
        thi = torch.where(warm, thi, _NAN)
        if propagate:
            bad_scores = (valid & ~score_ok).any()
            share = torch.where(bad_scores, _NAN, share)
            tlo = torch.where(bad_scores, _NAN, tlo)
            thi = torch.where(bad_scores, _NAN, thi)

        qmass = qmass_from_sq(sq[0], sq[1])
        return torch.cat([torch.stack([au, cos_mean, qmass]), share, torch.stack([tlo, thi])])
