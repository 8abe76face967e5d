"""Alert lines of series fed to an AlertEngine, and the lines of a resumed engine against one fed straight."""

from __future__ import annotations

from collections.abc import Sequence

from steptable.alerts.engine import Alert, AlertConfig, AlertEngine, replay_spans

Series = list[tuple[int, float]]


def lines(key: str, xs: Sequence[float], config: AlertConfig | None = None) -> list[str]:
    """The alert lines of ``xs`` fed as ``key`` at steps 0, 1, ... (the flat detector off unless configured)."""
    eng = AlertEngine(config if config is not None else AlertConfig(flat_rows=0))
    return [a.line() for i, x in enumerate(xs) for a in eng.update(i, {key: x})]


def resumed(key: str, crashed: Series, kept: Series, new: Series) -> tuple[list[str], list[str]]:
    """The alert lines after a resume at ``new``'s first step: from an engine that replayed ``kept`` (the rows
    before it, bounded as a live reader does) and took the run-long values of the engine that read ``crashed``
    (kept, then the rows the resume replaced); and from one engine fed ``kept`` then ``new`` straight."""
    at = new[0][0]
    old = AlertEngine(AlertConfig(flat_rows=0))
    for s, x in crashed:
        old.update(s, {key: x})
    eng = AlertEngine(AlertConfig(flat_rows=0))
    for a, b in replay_spans(len(kept), eng.config):
        for s, x in kept[a:b]:
            eng.update(s, {key: x})
    eng.carry(old, at)
    eng.resumed()
    got: list[Alert] = [a for s, x in new for a in eng.update(s, {key: x})]
    ref = AlertEngine(AlertConfig(flat_rows=0))
    want = [a for s, x in kept + new for a in ref.update(s, {key: x}) if a.step >= at]
    return [a.line() for a in got], [a.line() for a in want]
