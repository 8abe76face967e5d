"""Which distributed rank this process is. Never imports torch (only looks at it if the trainer already did)."""

from __future__ import annotations

import os
import sys

_RANK_VARS = ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK")


def global_rank() -> int:
    """Global rank: torch.distributed when initialised, else the launcher's environment, else 0."""
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            dist = torch.distributed
            if dist.is_available() and dist.is_initialized():
                return int(dist.get_rank())
        except Exception:  # a half-initialised torch must not stop logging
            pass
    for var in _RANK_VARS:
        value = os.environ.get(var, "").strip()
        if value.isascii() and value.isdigit():  # "²" and "٣" are digits to str.isdigit, not to a launcher
            return int(value)
    return 0
