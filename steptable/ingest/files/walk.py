"""Walking a logs tree: every file under a root, directory links followed where they lead outside it. Pure."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

#: directories never walked (a run's tooling, caches, environments)
SKIP_DIRS: Final = frozenset({".git", "__pycache__", "node_modules", ".venv", "venv", ".mypy_cache", ".ruff_cache",
                              ".pytest_cache", ".hypothesis", "site-packages", ".ipynb_checkpoints"})

#: directory links are followed this many levels below a root (logs/<run> -> /scratch/run), not deeper (a run's
#: data -> /datasets would be walked on every discovery pass)
LINK_DEPTH = 2

OnError = Callable[[Path, OSError], None]
"""Told of a directory discovery could not list (it is skipped this time and tried again on the next pass)."""


def walk(root: Path, on_error: OnError | None = None) -> Iterator[tuple[Path, bool]]:
    """Every file under ``root``, and whether the way to it went through a directory link.

    The real tree is walked first; directory links met in its top ``LINK_DEPTH`` levels are walked after it, each
    once and only when it leads outside what was walked (``logs/exp42 -> /scratch/exp42``). So a link to a
    directory of the tree (wandb's ``latest-run``, ``exp1/latest -> ../exp2/run3``) never hides the real path,
    and a loop ends. A directory costs its listing only (scandir tells links apart)."""
    if not os.path.isdir(root):  # (os.path's never raise: Path's do for a parent the user may not enter)
        if os.path.isfile(root):
            yield root, False
        return

    def failed(e: OSError) -> None:
        if on_error is not None and not isinstance(e, FileNotFoundError):  # vanished mid-walk: nothing to say
            on_error(Path(e.filename) if e.filename else root, e)

    walked = {os.path.realpath(root)}  # real paths of the trees walked so far
    links: deque[tuple[str, int]] = deque()  # (a directory link met, its depth below the root)
    stack, via = [(str(root), 0)], False
    while True:
        while stack:  # depth first, in name order (os.walk's order); scandir tells links and directories apart
            top, depth = stack.pop()
            try:
                with os.scandir(top) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError as err:
                failed(err)
                continue
            subdirs = []
            for entry in entries:
                try:
                    if not entry.is_dir():  # (a link to a file, and a dangling link, are files here)
                        yield Path(entry.path), via
                    elif entry.name in SKIP_DIRS or entry.name.startswith("."):
                        continue
                    elif entry.is_symlink():
                        if depth < LINK_DEPTH:
                            links.append((entry.path, depth + 1))
                    else:
                        subdirs.append(entry.path)
                except OSError:  # vanished while listed
                    continue
            stack += [(d, depth + 1) for d in reversed(subdirs)]
        while links:
            link, depth = links.popleft()
            target = os.path.realpath(link)
            if not _walked(target, walked):
                break
        else:
            return
        walked.add(target)
        stack, via = [(link, depth)], True


def linked_back(path: Path, root: Path) -> bool:
    """Is ``path`` (at or under ``root``) reached through a directory link that leads back into ``root``'s tree
    (wandb's ``latest-run``)? :func:`walk` passes over such a link: what is under it is found by its real path."""
    real_root = os.path.realpath(root)
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    real = os.path.realpath(path)
    if rel == "." or real == os.path.normpath(os.path.join(real_root, rel)):
        return False  # (no link on the way down)
    return _walked(real, {real_root})


def _walked(target: str, trees: set[str]) -> bool:
    """Was the directory ``target`` walked: is it in one of ``trees`` (real paths), and no directory on the way
    down one a walk passes over (hidden, or in SKIP_DIRS)? A look-up per level, whatever the number of trees."""
    below: list[str] = []
    path = target
    while path not in trees:
        parent = os.path.dirname(path)
        if parent == path:
            return False
        below.append(os.path.basename(path))
        path = parent
    return not any(name in SKIP_DIRS or name.startswith(".") for name in below)
