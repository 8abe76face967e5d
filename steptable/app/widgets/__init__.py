"""Widgets of the watch app."""
