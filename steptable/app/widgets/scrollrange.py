"""A scrolling widget's virtual size set without a layout pass of the screen."""

from __future__ import annotations

from textual.geometry import Size
from textual.scroll_view import ScrollView


def set_scroll_range(widget: ScrollView, size: Size) -> None:
    """Give ``widget`` (sized by its container, not by its content) the virtual ``size``: once it is on screen only
    its scrollbars are updated, rather than through the reactive, whose layout pass repaints the whole screen (a
    table's every append, a run list's every new run)."""
    if size == widget.virtual_size:
        return
    if widget.is_mounted and widget.size.height:
        widget.set_reactive(ScrollView.virtual_size, size)
        widget._scroll_update(size)
    else:
        widget.virtual_size = size
