"""Routing diagnostics computed with torch, on the device where the tensors live, without host syncs.

    from steptable.diagnostics import RoutingMonitor, auroc, multiotsu, shares, quarantine_mass, cosine_mean

This is the only part of steptable that uses torch, and nothing else in steptable imports it: torch is loaded
when one of the names below is first used (``import steptable.diagnostics`` alone stays light).

auroc(scores, labels, mask=None, *, nan_policy)        exact AUROC (sklearn's roc_auc_score, ties = 1/2)
multiotsu(values, nbins=256, mask=None, *, nan_policy) (tlo, thi) as skimage's threshold_multiotsu(classes=3)
shares(z, tlo, thi, mask=None, *, nan_policy)          [keep, resid, rout] shares
cosine_mean(act, v_act, mask=None, *, nan_policy)      mean cos(act_i, v_act)
quarantine_mass(g_keep, g_quar, *, device=None)        |g_quar| / (|g_keep| + |g_quar|)
RoutingMonitor(capacity, warmup, ...).step(...)        all routing columns of a step, one host sync
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = [
    "COLUMNS",
    "PendingStats",
    "RoutingMonitor",
    "auroc",
    "cosine_mean",
    "multiotsu",
    "quarantine_mass",
    "shares",
]

if TYPE_CHECKING:
    from steptable.diagnostics.auc import auroc
    from steptable.diagnostics.measures import cosine_mean, quarantine_mass, shares
    from steptable.diagnostics.monitor import COLUMNS, PendingStats, RoutingMonitor
    from steptable.diagnostics.otsu import multiotsu

_LAZY = {
    "auroc": "steptable.diagnostics.auc",
    "multiotsu": "steptable.diagnostics.otsu",
    "shares": "steptable.diagnostics.measures",
    "cosine_mean": "steptable.diagnostics.measures",
    "quarantine_mass": "steptable.diagnostics.measures",
    "COLUMNS": "steptable.diagnostics.monitor",
    "PendingStats": "steptable.diagnostics.monitor",
    "RoutingMonitor": "steptable.diagnostics.monitor",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'steptable.diagnostics' has no attribute {name!r}")
    import importlib

    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == "torch":
            raise ImportError("steptable.diagnostics needs torch: pip install 'steptable[torch]'") from exc
        raise
    return getattr(mod, name)


def __dir__() -> list[str]:
    return sorted(__all__)
