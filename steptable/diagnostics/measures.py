"""Per-step routing measures: keep/resid/rout shares, mean cosine to v_act, quarantine gradient mass.

Every function returns device tensors and never synchronises with the host.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable

import torch
from torch import Tensor

from steptable.diagnostics._grads import grad_sq_norm
from steptable.diagnostics._util import (
    STAT_DTYPE,
    as_1d,
    as_mask,
    as_order,
    check_nan_policy,
    no_autocast,
    proj_dtype,
    to_device,
)

__all__ = ["cosine_mean", "quarantine_mass", "shares"]

_NAN = float("nan")
_CPU_CHUNK = 1 << 16  # elements per upcast chunk on the CPU (512 KiB of float64)
_ACCEL_CHUNK = 1 << 25  # and on an accelerator (128 MiB of float32; 4096 rollouts x D = 4096 is one chunk)


def shares_core(z: Tensor, tlo: Tensor, thi: Tensor, use: Tensor) -> Tensor:
    """[keep, resid, rout] shares of ``z[use]`` (float64 [3]): ``z < tlo``, ``tlo <= z < thi``, ``z >= thi``; ``z``
    float64 or int64 (compared exactly with int64 or float64 thresholds).

    The bins are ``numpy.digitize(z, [tlo, max(tlo, thi)])``: a ``thi`` below ``tlo`` acts as ``tlo`` (keep wins,
    resid is empty), so the three shares always partition the used rows. ``tlo = -inf, thi = +inf`` puts
    everything in resid; a nan threshold or an empty selection gives nan shares (never a silent "all resid").
    """
    keep = use & _below(z, tlo)
    rout = use & ~_below(z, thi) & ~keep  # by mask, not by a host-side check of tlo <= thi
    resid = use & ~keep & ~rout
    counts = torch.stack([keep.sum(), resid.sum(), rout.sum()]).to(STAT_DTYPE)
    out = counts / use.sum().to(STAT_DTYPE)
    return torch.where(torch.isnan(tlo) | torch.isnan(thi), _NAN, out)


def _below(z: Tensor, t: Tensor) -> Tensor:
    """``z < t``, exact for int64 ``z`` against a float64 ``t`` too (torch compares them as float64, where 2**53 + 1
    is 2**53). The float64 copy of ``z`` decides wherever it differs from ``t`` (it is within half a unit of ``z``,
    and ``t`` a float64 too); where they are equal ``t`` is a whole number, compared as an int64."""
    if z.dtype != torch.int64 or t.dtype == torch.int64:
        return z < t
    zf = z.to(STAT_DTYPE)
    huge = t >= 2.0**63  # (above every int64; its int64 cast would overflow)
    whole = torch.where(huge | ~torch.isfinite(t), 0.0, t).to(torch.int64)
    return (zf < t) | ((zf == t) & (huge | (z < whole)))


def shares(
    z: Tensor,
    tlo: Tensor | float,
    thi: Tensor | float,
    mask: Tensor | None = None,
    *,
    nan_policy: str = "propagate",
) -> Tensor:
    """Shares ``[keep, resid, rout]`` (float64 [3] tensor) of the selected ``z`` below ``tlo``, in
    ``[tlo, thi)`` and at/above ``thi``.

    tlo, thi    thresholds (0-d tensors or floats); nan thresholds give nan shares; ``-inf``/``+inf`` are allowed
                (``shares(z, -inf, inf)`` is the warmup convention: everything resid). ``thi < tlo`` acts as
                ``thi = tlo``: rows below tlo are keep, the others rout (each row counts once).
    mask        optional [N] bool selection.
    nan_policy  "propagate": a selected non-finite z makes the shares nan; "drop": it is left out.
    """
    policy = check_nan_policy(nan_policy)
    as_1d(z, "z")
    dev = z.device
    with no_autocast(dev):
        zz = as_order(z)  # (int64 z past 2**53: no ties made by float64)
        lo = _threshold(tlo, dev, zz.dtype)
        hi = _threshold(thi, dev, zz.dtype)
        sel = as_mask(mask, zz.shape[0], dev)
        ok = torch.isfinite(zz)
        out = shares_core(zz, lo, hi, sel & ok)
        if policy == "propagate":
            out = torch.where((sel & ~ok).any(), _NAN, out)
        return out


def _threshold(t: Tensor | float, device: torch.device, z_dtype: torch.dtype) -> Tensor:
    """A threshold as a 0-d tensor on ``device``: int64 where it is a whole number given as an integer and ``z`` is
    int64 (exact), else float64."""
    exact = z_dtype == torch.int64
    if isinstance(t, Tensor):
        whole = exact and as_order(t).dtype == torch.int64
        return to_device(t, device, torch.int64 if whole else STAT_DTYPE).reshape(())
    if exact and isinstance(t, numbers.Integral) and not isinstance(t, bool) and -(2**63) <= t < 2**63:
        return torch.full((), int(t), dtype=torch.int64, device=device)
    return torch.full((), float(t), dtype=STAT_DTYPE, device=device)  # a fill kernel, not a host copy


def project(act: Tensor, v_act: Tensor, dtype: torch.dtype | None = None) -> tuple[Tensor, Tensor]:
    """Scores ``act @ v_act`` and per-row cosines, both float64 [N], from an upcast of ``act`` (chunked on CPU).

    The products run in ``dtype`` (default: float64 on CPU, float32 elsewhere; see ``proj_dtype``). A zero row
    or a zero ``v_act`` gives a nan cosine (0/0), not a clamped 0.
    """
    if act.ndim != 2:
        raise ValueError(f"act must be [N, D], got shape {tuple(act.shape)}")
    as_1d(v_act, "v_act", act.shape[1])
    dt = proj_dtype(act, dtype)
    v = to_device(v_act, act.device, dt)
    v_norm = torch.linalg.vector_norm(v)
    n, d = act.shape
    # The upcast copy runs in row chunks: on the CPU small ones that stay in cache (one [N, D] float64 copy would
    # cost more than the products); on an accelerator large ones (one launch for a usual batch), so that a big
    # batch never asks a training job's GPU for a whole float32 copy (64k rollouts x D = 4096: 1 GiB).
    most = _CPU_CHUNK if act.device.type == "cpu" else _ACCEL_CHUNK
    step = max(1, n) if act.dtype == dt else max(1, most // max(d, 1))
    tmp = act.new_empty((min(step, n), d), dtype=dt) if step < n else None  # reused: no allocation per chunk
    dots, norms = [], []
    for lo in range(0, n, step):  # host-side shapes only
        chunk = act[lo : lo + step]
        a = chunk.to(dt) if tmp is None else tmp[: chunk.shape[0]].copy_(chunk)
        dots.append(torch.mv(a, v))
        norms.append(torch.linalg.vector_norm(a, dim=1))
    if not dots:
        empty = torch.zeros(0, dtype=STAT_DTYPE, device=act.device)
        return empty, empty
    dot = torch.cat(dots) if len(dots) > 1 else dots[0]
    norm = torch.cat(norms) if len(norms) > 1 else norms[0]
    return dot.to(STAT_DTYPE), (dot / (norm * v_norm)).to(STAT_DTYPE)


def cosine_mean(
    act: Tensor,
    v_act: Tensor,
    mask: Tensor | None = None,
    *,
    nan_policy: str = "propagate",
    dtype: torch.dtype | None = None,
) -> Tensor:
    """Mean over the selected rows of ``cos(act_i, v_act)`` (0-d float64 tensor; nan for an empty selection).

    act [N, D] and v_act [D] of any floating dtype (bf16/fp16 are upcast, see ``project``). nan_policy as in
    ``auroc``: a selected non-finite cosine (nan/inf activations, a zero row, a zero v_act) makes the mean nan,
    or is left out under "drop".
    """
    policy = check_nan_policy(nan_policy)
    with no_autocast(act.device):
        _, cos = project(act, v_act, dtype)
        sel = as_mask(mask, cos.shape[0], cos.device)
        return cosine_mean_core(cos, sel, policy == "propagate")


def cosine_mean_core(cos: Tensor, use: Tensor, propagate: bool) -> Tensor:
    """Mean of ``cos[use]`` over its finite values (0-d float64, nan when none); with ``propagate`` a used
    non-finite cosine makes it nan."""
    ok = torch.isfinite(cos)
    keep = use & ok
    mean = torch.where(keep, cos, 0.0).sum() / keep.sum().to(STAT_DTYPE)
    if propagate:
        mean = torch.where((use & ~ok).any(), _NAN, mean)
    return mean


def qmass_from_sq(keep_sq: Tensor, quar_sq: Tensor) -> Tensor:
    """``|g_quar| / (|g_keep| + |g_quar|)`` from squared norms; nan for 0/0 and for any non-finite norm."""
    k = torch.sqrt(keep_sq)
    q = torch.sqrt(quar_sq)
    ratio = q / (k + q)
    return torch.where(torch.isfinite(k) & torch.isfinite(q), ratio, _NAN)


def quarantine_mass(
    g_keep: Tensor | Iterable[Tensor | None],
    g_quar: Tensor | Iterable[Tensor | None],
    *,
    device: torch.device | str | None = None,
) -> Tensor:
    """Quarantine gradient mass ``||g_quar|| / (||g_keep|| + ||g_quar||)`` over two lists of gradient tensors.

    The norms are global L2 norms over each list (None entries, e.g. ``p.grad`` of frozen parameters, are
    skipped; an empty list has norm 0). 0-d float64 tensor on ``device`` (default: the first gradient's device,
    else CPU); nan when both norms are 0 or either is non-finite, a squared norm past float64's range (a norm
    above ~1e154) included: norms are summed as squares so that ranks can add them. Norms are of the tensors
    given, i.e. per rank: with DDP the gradients are already all-reduced after backward, so every rank gets the
    same value; with plain sharded gradients (FSDP1 flat shards, ZeRO) use ``RoutingMonitor(sharded_grads=True)``,
    which sums squared norms across ranks. DTensor gradients (FSDP2 ``fully_shard``, tensor parallel) count as
    the global tensors they stand for: their shards are reduced over the device mesh here (one collective per
    mesh and placement pattern). Sparse gradients (``nn.Embedding(sparse=True)``) count with duplicate indices
    summed.
    A bare tensor (an FSDP ``flat_param.grad``, a ``torch.cat`` of gradients) counts as one gradient.
    """
    keep = _grad_list(g_keep)
    quar = _grad_list(g_quar)
    if device is None:  # non-tensor items are left to grad_sq_norm's TypeError, which says what was meant
        first = next((g for g in [*keep, *quar] if isinstance(g, Tensor)), None)
        dev = first.device if first is not None else torch.device("cpu")
    else:
        dev = torch.device(device)
    with no_autocast(dev):
        return qmass_from_sq(grad_sq_norm(keep, dev), grad_sq_norm(quar, dev))


def _grad_list(grads: Tensor | Iterable[Tensor | None]) -> list[Tensor | None]:
    # iterating a tensor would split it into one 0-d tensor per element (and fail on a 0-d one)
    return [grads] if isinstance(grads, Tensor) else list(grads)
