"""The app's keys: each action bound once, and every key the tables' screen takes explained in the help."""

from __future__ import annotations

from textual.binding import Binding

from steptable.app.bindings import BINDINGS, MAIN_ACTIONS, key_help


def test_every_binding_is_in_the_help_and_no_key_is_bound_twice() -> None:
    keys = [k for b in BINDINGS if isinstance(b, Binding) for k in b.key.split(",")]
    assert len(keys) == len(set(keys))
    help_lines = key_help("ctrl+p", lambda b: b.key)
    text = "\n".join(f"{k} {what}" for k, what in help_lines)
    for b in BINDINGS:
        if isinstance(b, Binding) and not b.action.startswith("toggle_arm("):
            assert b.key.split(",")[0] in text, b  # every key of the tables' screen is in the help
    assert "quit" not in MAIN_ACTIONS and "ctrl+p" in text  # the palette's key too
