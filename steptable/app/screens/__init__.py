"""Screens of the watch app."""
