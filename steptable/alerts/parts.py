"""A run's alert scan split by columns: scans that can run apart (in other processes) and one merge that gives the
alerts of :func:`steptable.alerts.history.scan` over every column, in the same order. Pure, stdlib only.

Why it holds: the detectors of one role read only that role's keys, and a single-key role binds to its first
candidate present, which only its own keys decide; the loss's flat test asks the grad norm's (the two stay
together), the hack test reads its two roles at the end of each row, and the clock (stalls) reads no column. Within
a row the engine says its alerts in role order (``DETECTORS``), then the hack test's, and a stall before a row is
said after the row before it. So with the parts in role order and the clock last, alerts sorted by (step, part,
their order in the part) are the serial ones, given steps that only go up; then a step's non-finite alerts are made
one line, as :meth:`AlertEngine.update` makes a row's (the parts are scanned with ``merge=False``). The detectors of
one column read it apart from each other too, and a row says them in the role's order: a part of one role may be
read as two scans (:func:`scans`), its last detectors (:data:`APART`) after the others.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import groupby
from operator import lt

from steptable.alerts.detectors import DETECTORS
from steptable.alerts.engine import merge_nonfinite
from steptable.alerts.levels import EntropyRise
from steptable.alerts.rules import Alert, AlertConfig
from steptable.alerts.window import Detector

#: roles scanned together: the loss's flat test asks the grad norm's flat detector (the engine's _GradStill)
_TIED = ("loss", "grad_norm")
#: the hack test, after every detector in a row (AlertEngine.update)
_LAST = ("hack", "auroc")
#: a role's last detectors, read in a scan apart from its others where the role is a part alone: an entropy's rise
#: and its collapse each keep a level window of their own, and the collapse's quiet bounds are most of the role's cost
APART: dict[str, tuple[type[Detector], ...]] = {"entropy": (EntropyRise,)}
assert all(DETECTORS[r][-len(d):] == d for r, d in APART.items())  # (said last in a row: after the others' part)

#: the detectors a scan makes (None: every one)
Detectors = tuple[type[Detector], ...] | None
#: a scan of a run: the keys it reads and the detectors that read them
Scan = tuple[tuple[str, ...], Detectors]


def _segments() -> list[list[str]]:
    segs: list[list[str]] = []
    for role in DETECTORS:
        if role in _TIED[1:] and segs and _TIED[0] in segs[-1]:
            segs[-1].append(role)
        else:
            segs.append([role])
    return [*segs, list(_LAST)]


def parts(keys: Iterable[str], config: AlertConfig | None = None) -> list[tuple[str, ...]]:
    """``keys`` (a run's, in its order) that ``config``'s roles watch, in groups a scan may read apart: each the
    keys of a stretch of roles in the engine's order, roles that share a candidate key in one stretch; only groups
    with a key of the run, in role order."""
    role_keys = (config or AlertConfig()).role_keys()
    cands = [{k for r in seg for k in role_keys.get(r, ())} for seg in _segments()]
    merged: list[set[str]] = []
    for seg_keys in cands:
        # a key of an earlier stretch: everything from there to here is one part (order within a row kept)
        joined = next((j for j, m in enumerate(merged) if m & seg_keys), None)
        if joined is None:
            merged.append(set(seg_keys))
        else:
            for m in merged[joined + 1:]:
                merged[joined] |= m
            del merged[joined + 1:]
            merged[joined] |= seg_keys
    keys = list(keys)
    out = [tuple(k for k in keys if k in m) for m in merged]
    return [p for p in out if p]


def scans(keys: Iterable[str], config: AlertConfig | None = None) -> list[Scan]:
    """:func:`parts`, each read by every detector, except that a part holding the keys of one role of
    :data:`APART` alone is read twice: by the role's other detectors, then by those apart."""
    role_keys = (config or AlertConfig()).role_keys()
    out: list[Scan] = []
    for part in parts(keys, config):
        roles = [r for r, ks in role_keys.items() if set(ks) & set(part)]
        apart = APART.get(roles[0]) if len(roles) == 1 else None
        if apart is None:
            out.append((part, None))
            continue
        out += [(part, tuple(c for c in DETECTORS[roles[0]] if c not in apart)), (part, apart)]
    return out


def increasing(steps: Sequence[int]) -> bool:
    """Every step above the one before (what :func:`merge` needs to place alerts by step)."""
    return all(map(lt, steps[:-1], steps[1:])) if len(steps) > 1 else True


def merge(found: Sequence[Sequence[Alert]]) -> list[Alert]:
    """The alerts of :func:`~steptable.alerts.history.scan` over a run whose steps only go up (:func:`increasing`),
    from ``found``: those of ``scan(..., merge=False)`` over the columns of each of :func:`parts` in order (or of
    each of :func:`scans`, by its detectors: ``only``), then of one over no column with the run's clock
    (``wall_times`` and ``now``), last."""
    tagged = sorted(((a.step, p, n, a) for p, got in enumerate(found) for n, a in enumerate(got)),
                    key=lambda t: t[:3])
    out: list[Alert] = []
    for _, same in groupby(tagged, key=lambda t: t[0]):
        row = [t[3] for t in same]
        out += merge_nonfinite(row) if len(row) > 1 else row
    return out
