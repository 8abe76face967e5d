"""Small shared helpers of the diagnostics: argument checks and dtype choices (host-side only, no syncs)."""

from __future__ import annotations

import contextlib
import numbers
from collections.abc import Iterator
from typing import Literal

import torch
from torch import Tensor

NanPolicy = Literal["propagate", "drop"]

#: dtype of every statistic (AUROC counts aside, which are int64): exactness matters more than speed here,
#: and the tensors involved are small (N rollouts, the ring buffer, a 256 x 256 grid).
STAT_DTYPE = torch.float64


def check_nan_policy(policy: str) -> NanPolicy:
    """``policy`` as a NanPolicy; ValueError unless it is "propagate" or "drop"."""
    if policy == "propagate":
        return "propagate"
    if policy == "drop":
        return "drop"
    raise ValueError(f"nan_policy must be 'propagate' or 'drop', got {policy!r}")


def check_int(value: int, name: str, least: int, why: str = "") -> int:
    """``value`` as an int >= ``least``: TypeError for any other type (a float size fails deep inside a later step,
    inside the training loop, in torch's words), ValueError below ``least``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < least:
        raise ValueError(f"{name} must be >= {least}{why}, got {value}")
    return int(value)


def check_nbins(nbins: int) -> int:
    """A histogram bin count as an int >= 3 (a float count would fail deep inside as an index error)."""
    return check_int(nbins, "nbins", 3, " for a 3-class split")


def as_1d(t: Tensor, name: str, n: int | None = None) -> Tensor:
    """Check that ``t`` is a 1-D tensor (of length ``n`` when given); shapes only, never values."""
    if not isinstance(t, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {tuple(t.shape)}")
    if n is not None and t.shape[0] != n:
        raise ValueError(f"{name} has length {t.shape[0]}, expected {n}")
    return t


def as_stat(t: Tensor) -> Tensor:
    """Upcast a floating (or integer/bool) tensor to the statistics dtype (float64)."""
    return t.to(STAT_DTYPE)


def as_order(t: Tensor) -> Tensor:
    """``t`` in a dtype that keeps its values' order exactly: integers (bool aside) as int64, whose values past
    2**53 float64 would round into ties, everything else as the statistics dtype (float64). uint64 values past
    int64's range have no such dtype in torch and go to float64."""
    integer = not (t.is_floating_point() or t.is_complex()) and t.dtype != torch.bool
    if integer and t.dtype != getattr(torch, "uint64", None):  # (torch.uint64: torch 2.3 on)
        return t.to(torch.int64)
    return as_stat(t)


def labels_to_bool(labels: Tensor) -> tuple[Tensor, Tensor]:
    """Return ``(positive, finite)`` for binary labels: bool as is, numbers ``!= 0`` are positive.

    ``finite`` is False where a floating label is nan/inf (such a label is never silently counted).
    """
    if labels.dtype == torch.bool:
        return labels, torch.ones_like(labels)
    if labels.is_floating_point():
        return labels != 0, torch.isfinite(labels)
    return labels != 0, torch.ones(labels.shape, dtype=torch.bool, device=labels.device)


def to_device(t: Tensor, device: torch.device, dtype: torch.dtype | None = None) -> Tensor:
    """``t`` on ``device`` (in ``dtype`` when given), as the monitor moves its inputs: non-blocking towards an
    accelerator (a blocking host-to-device copy synchronises the stream), blocking towards the host (a
    non-blocking copy to the host could be read before it lands)."""
    if t.device == device:
        return t if dtype is None else t.to(dtype)
    return t.to(device=device, dtype=dtype, non_blocking=device.type != "cpu")


def as_mask(mask: Tensor | None, n: int, device: torch.device, name: str = "mask") -> Tensor:
    """A bool selection mask of length ``n`` (all True when ``mask`` is None)."""
    if mask is None:
        return torch.ones(n, dtype=torch.bool, device=device)
    as_1d(mask, name, n)
    return to_device(mask, device, torch.bool)


def proj_dtype(t: Tensor, override: torch.dtype | None = None) -> torch.dtype:
    """Precision of projections and norms: float64 on CPU (and for float64 inputs), float32 elsewhere.

    bf16/fp16 activations are upcast before the dot products, so the reduction never runs in half precision.
    """
    if override is not None:
        return override
    if t.dtype == torch.float64 or t.device.type == "cpu":
        return torch.float64
    return torch.float32


def nan_like(t: Tensor) -> Tensor:
    """A 0-d nan of ``t``'s dtype on ``t``'s device."""
    return torch.full((), float("nan"), dtype=t.dtype, device=t.device)


@contextlib.contextmanager
def no_autocast(device: torch.device) -> Iterator[None]:
    """Disable autocast (it would run the projections in bf16/fp16) and autograd inside the diagnostics."""
    try:
        ctx: contextlib.AbstractContextManager[object] = torch.autocast(device_type=device.type, enabled=False)
    except RuntimeError:  # a device type without autocast support
        ctx = contextlib.nullcontext()
    with torch.no_grad(), ctx:
        yield
