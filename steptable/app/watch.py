"""``steptable watch``: the app built over the watched paths, and run until the user quits."""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path

from steptable.app import heap
from steptable.app.app import Clock, StepTableApp
from steptable.app.armrule import group_refusal
from steptable.app.feed import Feed
from steptable.table.formatting import sanitize


def make_app(
    paths: list[str] | list[Path],
    poll: float | None = None,
    theme: str | None = None,
    schema: str | None = None,
    *,
    clock: Clock = time.time,
    feed: Feed | None = None,
    stacked: bool | None = None,
    tick: float = 1.0,
    group: str | None = None,
) -> StepTableApp:
    """The app over ``paths`` (files or directories of runs); ``group``: ``--group`` (steptable.app.armrule)."""
    feed = feed if feed is not None else Feed([str(p) for p in paths], poll=poll)
    feed.prepare()
    return StepTableApp(feed, theme=theme, schema=schema, clock=clock, stacked=stacked, tick=tick, group=group)


def run_watch(
    paths: list[str], poll: float | None = None, theme: str | None = None, schema: str | None = None,
    *, gc_paused: bool = False, wait: bool = False, group: str | None = None,
) -> int:
    """``steptable watch PATH...``: run the app until the user quits. Returns the exit code: 2 for a path that does
    not exist, unless ``wait`` (it is followed: the run is shown once its files appear). ``gc_paused``: the
    caller disabled garbage collection for the start (``steptable watch``): it is enabled again once the first rows
    are on screen, the objects made until then frozen (they live for the session: later collections skip them), and
    in any case before this returns."""
    try:
        return _run_watch(paths, poll, theme, schema, _resume_gc if gc_paused else None, wait, group)
    finally:
        if gc_paused and not gc.isenabled():
            gc.enable()


def schema_refusal(paths: list[str], schema: str | None = None) -> str | None:
    """What tail says before it starts, as inert text, or None: an unknown ``--schema`` name, a ``steptable.toml``
    near ``paths`` that cannot be used (``watch`` and ``serve`` refuse to start on it)."""
    from steptable.schemafiles.files import compare_settings
    from steptable.schemafiles.resolve import get_schema, user_schemas
    from steptable.schemas import SchemaFileError

    try:
        if schema is not None:
            get_schema(schema, near=paths)
        for p in paths:
            user_schemas(p)
            compare_settings(p)  # (its [compare] table: how the app groups seeds and starts its compare view)
    except SchemaFileError as e:
        return sanitize(str(e))
    except KeyError as e:
        return sanitize(str(e.args[0]))
    return None


def _resume_gc() -> None:
    if not gc.isenabled():
        heap.settle()  # (for the session: not released)
        gc.enable()


def _run_watch(paths: list[str], poll: float | None, theme: str | None, schema: str | None,
               first_rows: Callable[[], None] | None, wait: bool, group: str | None = None) -> int:
    missing = [p for p in paths if not Path(p).exists()]
    if missing and not wait:
        print(f"steptable watch: no such file or directory: {sanitize(', '.join(missing))}", file=sys.stderr)
        return 2
    if (bad := group_refusal(group)) is not None:
        print(f"steptable watch: {sanitize(bad)}", file=sys.stderr)
        return 2
    # built first: the app starts reading the runs' tails in a thread, which the checks below overlap
    app = make_app(paths, poll=poll, theme=theme, schema=schema, group=group)
    if first_rows is not None:
        app.first_rows.add(first_rows)
    if (refused := schema_refusal(paths, schema)) is not None:
        print(f"steptable watch: {refused}", file=sys.stderr)
        return 2
    from steptable.app.signals import run_until_quit

    return run_until_quit(app)
