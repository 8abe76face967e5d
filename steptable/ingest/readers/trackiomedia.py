"""Media values in a trackio metrics row: no metrics. ``trackio.Image``, ``trackio.Table``, ``trackio.Histogram``...
are stored in the row's JSON as objects with their ``_type`` (``"trackio.image"``...) beside the metrics logged in
the same ``trackio.log`` call. They are left out of the row (their fields would read as columns), and each
``trackio.Table`` is named with its step, to be offered as the run's generations (its rows are read from the
database by the row's id: :func:`steptable.ingest.readers.trackiotraces.table_rows`).
"""

from __future__ import annotations

from typing import Any

#: a media value's type in a row's JSON text (compact, as trackio stores it): a table, an image...
MEDIA = b'"_type":"trackio.'
TABLE = "trackio.table"


def is_media(v: Any) -> bool:
    """A trackio media value (``trackio.Table``, ``trackio.Image``... as logged: an object with its ``_type``)."""
    return isinstance(v, dict) and isinstance(t := v.get("_type"), str) and t.startswith("trackio.")


def without_media(obj: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """``obj`` less its media values (in an object within it too, an object left empty by them dropped), and
    whether it held any (``obj`` itself, unchanged, where it held none)."""
    out: dict[str, Any] = {}
    dropped = False
    for k, v in obj.items():
        if is_media(v):
            dropped = True
            continue
        if isinstance(v, dict) and v:
            inner, had = without_media(v)
            if had:
                dropped = True
                if not inner:
                    continue
                v = inner
        out[k] = v
    return (out, True) if dropped else (obj, False)


def table_steps(obj: dict[str, Any], own: Any) -> list[tuple[str, int]]:
    """Each ``trackio.Table`` of a row's object (trackio keeps them at its top level) by key, with its step: the one
    step its rows name where they name one (TRL's completions do), else ``own`` (the row's); one with neither left
    out."""
    out: list[tuple[str, int]] = []
    for key, v in obj.items():
        if isinstance(v, dict) and v.get("_type") == TABLE:
            rows = v.get("_value")
            named = {x for r in (rows if isinstance(rows, list) else ())
                     if isinstance(r, dict) and type(x := r.get("step")) is int}
            step = named.pop() if len(named) == 1 else own
            if type(step) is int:
                out.append((key, step))
    return out
