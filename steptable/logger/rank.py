"""Which distributed rank this process is. Never imports torch (only looks at it if the trainer already did)."""

from __future__ import annotations

import os
import sys

_RANK_VARS = ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK")


def global_rank() -> int:
    """Global rank: torch.distributed when initialised, else the launcher's environment, else 0."""
    rank = known_rank()
    return 0 if rank is None else rank


def known_rank() -> int | None:
    """:func:`global_rank` where something says it; None where nothing does (yet: torch.multiprocessing.spawn sets
    no environment variable, and the process group may be made after the caller asked)."""
    rank = dist_rank()
    return env_rank() if rank is None else rank


def dist_rank() -> int | None:
    """torch.distributed's rank once the trainer initialised it; else None. A dictionary look-up where torch was
    never imported, so it may be asked once a row."""
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            dist = torch.distributed
            if dist.is_available() and dist.is_initialized():
                return int(dist.get_rank())
        except Exception:  # a half-initialised torch must not stop logging
            pass
    return None


def env_rank() -> int | None:
    """The rank a launcher (torchrun, SLURM, MPI) put in the environment; None where none did."""
    found = _env_rank_var()
    return None if found is None else int(os.environ[found].strip())


def _env_rank_var() -> str | None:
    """The variable :func:`env_rank` reads its rank from."""
    for var in _RANK_VARS:
        value = os.environ.get(var, "").strip()
        if value.isascii() and value.isdigit():  # "²" and "٣" are digits to str.isdigit, not to a launcher
            return var
    return None


class LazyRank:
    """The global rank: ``given``, else what a launcher or torch.distributed says; while nothing has said it, asked
    again (torch.distributed only: a dictionary look-up while torch is not imported) at each call. Set up before
    init_process_group (torch.multiprocessing.spawn sets no variable), a process reads 0 until its group exists;
    once known the rank does not change."""

    def __init__(self, given: int | None = None) -> None:
        known = known_rank() if given is None else int(given)  # (RANK from the environment is text: "0")
        self.value = 0 if known is None else known
        self.unknown = known is None
        self._noted = given is not None  # (a rank the caller gave is the caller's to know)

    def note(self) -> str | None:
        """Once, on a rank other than 0 that only a launcher's variable says (no process group: ``srun -n4`` of
        four independent seeds, a subprocess that inherited torchrun's RANK), the line that says this process
        writes no rows; None after that, and where a process group or the caller said the rank."""
        if self._noted:
            return None
        self._noted = True
        var = _env_rank_var()
        if var is None or dist_rank() is not None:
            return None
        return (f"steptable: this process is rank {self.value} ({var}={os.environ[var].strip()}) and only rank 0 "
                "prints and writes rows, so it writes none; a process of its own (a seed of a sweep) gives "
                "StepLogger(rank=0)")

    def __call__(self) -> int:
        if self.unknown and (found := dist_rank()) is not None:
            self.value, self.unknown = found, False
        return self.value
