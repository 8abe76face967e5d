"""The StepLoggers alive in this process, told of its forks and of its exit.

A child made by fork() (a DataLoader or pool worker) inherits the parent's loggers and must know it is not their
writer; a process that exits without close() (a script that never calls it, an exception that ends the loop) must
still say the alerts of rows waiting for their batch. Each logger is held weakly from :func:`track` on.
"""

from __future__ import annotations

import atexit
import mmap
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


#: one byte shared (an anonymous shared mapping) by this process and every process forked from it, a child's
#: children too: set by the first of them that says a notice meant for them all (a DataLoader forks its workers
#: again every epoch, and each new worker's own report_once would say it again)
_TOLD_IN_A_CHILD = mmap.mmap(-1, 1)


def first_child_to_tell() -> bool:
    """In a forked child: True the first time any child of this process (or of its children) asks, False after
    that (two children asking at the same instant may both get True). Never raises."""
    try:
        if _TOLD_IN_A_CHILD[0]:
            return False
        _TOLD_IN_A_CHILD[0] = 1
    except (ValueError, OSError):  # (a closed or missing mapping: say it, as before)
        pass
    return True


def _after_fork_in_child() -> None:
    for logger in list(_LIVE):
        logger.after_fork()


def _at_exit() -> None:
    for logger in list(_LIVE):
        logger.at_exit()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
