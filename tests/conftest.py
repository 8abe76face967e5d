"""Fixtures every test folder uses: the hypothesis profile, the sinks a test set up removed after it, goldens,
captured log lines, a private schema directory, the follower's clock, every trainer's logs, and the runs the real
libraries write (each once a session, shared by every module)."""

from __future__ import annotations

import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from loguru import logger

import steptable.ingest.files.follow as follow_mod
import steptable.logger.setup as st_logging
import steptable.logger.sinks as st_sinks
from tests.helpers import check_golden
from tests.ingest.dumpwriters import (  # noqa: F401  (fixtures: found here, each written once a session)
    trl_preference_runs,
    trl_run,
    trl_trackio_run,
    trl_wandb_run,
    verl_tensorboard_run,
    verl_trackio_run,
    verl_wandb_run,
)
from tests.ingest.helpers import FollowerClock
from tests.ingest.writers import (  # noqa: F401  (fixtures: found here, each written once a session)
    hf_every_tracker,
    hf_tracked,
    ray_trials,
    torchtune_log,
    trackio_dir,
    wandb_crashed,
    wandb_resumed,
    wandb_run,
)
from tests.trainer_logs import write_all

# Property tests check values, not speed: on a loaded 2-core CI machine one slow draw (a GC pause, another process)
# failed a run with "input generation is slow" though every example passed.
settings.register_profile("steptable", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("steptable")


@pytest.fixture(autouse=True)
def own_sinks() -> Iterator[None]:
    """The sinks a test set up (setup_logging, or an adapter's console) go with it: they write to the sys.stdout of
    the moment, a test's fake one, and a later test's adapter leaves sinks in place alone (as a user's)."""
    yield
    for hid in st_logging._handler_ids:
        try:
            logger.remove(hid)
        except ValueError:
            pass
    st_logging._handler_ids.clear()
    st_logging._direct = None
    st_sinks._file_sink = None


@pytest.fixture
def golden():  # type: ignore[no-untyped-def]
    return check_golden


@pytest.fixture
def captured():  # type: ignore[no-untyped-def]
    """Route loguru to a list for the test (setup_logging is tested separately)."""
    from steptable.logger.setup import ICONS

    lines: list[str] = []
    # The icon from steptable's table, not {level.icon}: loguru's own icons stay until setup_logging runs, so the
    # lines would depend on which test ran before.
    hid = logger.add(lambda m: lines.append(str(m)), format=lambda r: ICONS.get(r["level"].name, "?") + " {message}\n",
                     level="DEBUG")
    yield lines
    logger.remove(hid)


@pytest.fixture
def xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The user's schema directory, empty and private to the test (XDG_CONFIG_HOME under tmp_path)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "steptable" / "schemas"


@pytest.fixture
def follower_clock(monkeypatch: pytest.MonkeyPatch) -> FollowerClock:
    """The Follower's monotonic clock, moved by the test (``follower_clock.t += seconds``)."""
    c = FollowerClock()
    monkeypatch.setattr(follow_mod, "time", types.SimpleNamespace(monotonic=c.monotonic))
    return c


@pytest.fixture(scope="module")
def every_trainer_log(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every trainer's log written once per test module: fixture name -> its metrics file."""
    return write_all(tmp_path_factory.mktemp("formats"))
