"""The StepLoggers alive in this process, told of its forks and of its exit.

A child made by fork() (a DataLoader or pool worker) inherits the parent's loggers and must know it is not their
writer; a process that exits without close() (a script that never calls it, an exception that ends the loop) must
still say the alerts of rows waiting for their batch. Each logger is held weakly from :func:`track` on.
"""

from __future__ import annotations

import atexit
import os
import weakref
from typing import Protocol


class ProcessBound(Protocol):
    def after_fork(self) -> None:
        """Called in the child after a fork(): the logger never prints or writes there."""

    def at_exit(self) -> None:
        """Called as the process exits; raises nothing."""


_LIVE: weakref.WeakSet[ProcessBound] = weakref.WeakSet()
_exit_hooked = False


def track(logger: ProcessBound) -> None:
    """Tell ``logger`` of this process's forks and of its exit, as long as it lives."""
    global _exit_hooked
    if not _exit_hooked:
        # (registered at the first logger, after loguru's own exit hook: atexit runs the last registered first, and
        # the alerts said at exit go through loguru's handlers)
        atexit.register(_at_exit)
        _exit_hooked = True
    _LIVE.add(logger)


def _after_fork_in_child() -> None:
    for logger in list(_LIVE):
        logger.after_fork()


def _at_exit() -> None:
    for logger in list(_LIVE):
        logger.at_exit()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
