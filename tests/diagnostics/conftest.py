"""The diagnostics tests need torch (the folder is skipped without it) and run with one torch thread."""

from __future__ import annotations

import importlib.util

import pytest

collect_ignore_glob = [] if importlib.util.find_spec("torch") else ["test_*.py"]


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():  # type: ignore[no-untyped-def]
    """Small tensors on a shared 2-core machine: intra-op threads only add OpenMP contention (restored after)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
