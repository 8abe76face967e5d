"""StepLogger with columns declared without a width: the header again each time one widens."""

from __future__ import annotations

from steptable.logger.steplogger import StepLogger
from steptable.table.columns import Col


def test_columns_without_widths_widen_with_their_header_printed_again() -> None:
    sl = StepLogger([Col("step", 4, "step", "d"), Col("loss")], header_every=0, alerts=False, console=False)
    emitted: list[str] = []
    sl._emit = lambda text, level="INFO": emitted.append(text)  # type: ignore[method-assign]
    lines = []
    for step, loss in enumerate([0.5, 0.25, -0.0123, 0.5, 1234.5]):
        lines.append(sl.log({"step": step, "loss": loss}))
    assert lines == ["   0   .5", "   1  .25", "   2 -.0123", "   3     .5", "   4   1234"]
    assert sl.header() == "step   loss"
    heads = [t for t in emitted if "loss" in t and "step" in t]
    assert heads == ["step loss", "step   loss"]  # the first, then at the widening (1234 fits: no more)
    assert emitted.index("step   loss") == emitted.index("   2 -.0123") - 1
    sl.close()
