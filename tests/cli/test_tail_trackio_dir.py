"""``steptable tail DIR`` on the directory trackio writes to, as trackio leaves it (its database, WAL, lock and
media files): ``$TRACKIO_DIR``, and trackio's default location (``$HF_HOME/trackio``) when TRACKIO_DIR is unset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.helpers import Live
from tests.helpers import run_cli
from tests.ingest import writers

pytest.importorskip("trackio")


def _rows_by_arm(out: str) -> dict[str, list[dict[str, object]]]:
    by_arm: dict[str, list[dict[str, object]]] = {}
    for line in out.splitlines():
        rec = json.loads(line)
        by_arm.setdefault(str(rec["arm"]), []).append(rec)
    return by_arm


def test_tail_of_trackio_dir(trackio_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["tail", "-n", "0", "--format", "jsonl", str(trackio_dir)], capsys)
    assert code == 0, err
    by_arm = _rows_by_arm(out)
    assert sorted(by_arm) == ["run-a", "run-b"]
    assert [r["step"] for r in by_arm["run-a"]] == [0, 1, 2, 3, 4]
    assert [r["train/loss"] for r in by_arm["run-b"]] == pytest.approx([1.0, 0.5, 1 / 3])


def test_tail_of_trackios_default_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Without TRACKIO_DIR trackio writes under ``$HF_HOME/trackio`` (the installed trackio's utils); that
    directory, media folder and all, reads without flags."""
    monkeypatch.delenv("TRACKIO_DIR", raising=False)
    home = tmp_path / "hf"
    writers.run_writer("""
        import trackio
        trackio.init(project="defaults", name="plain")
        for i in range(3):
            trackio.log({"reward": float(i)})
        trackio.finish()
    """, {"HF_HOME": str(home)})
    default = home / "trackio"
    assert (default / "defaults.db").is_file()
    code, out, err = run_cli(["tail", "-n", "0", "--format", "jsonl", str(default)], capsys)
    assert code == 0, err
    assert [(r["step"], r["reward"]) for r in _rows_by_arm(out)["plain"]] == [(0, 0.0), (1, 1.0), (2, 2.0)]
    code, out, err = run_cli(["summary", str(home)], capsys)
    assert code == 0, err
    assert "plain:" in out


def test_tail_f_n_of_a_project_of_more_rows_than_a_read_takes_prints_its_last_rows_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``tail -f -n 2`` prints the last 2 rows of what is there when it starts, however many reads of the reader's
    BATCH rows that takes (the rows past the first read came with the next polls, each printed as new)."""
    from steptable.ingest.readers import trackio

    writers.run_writer("""
        import trackio
        trackio.init(project="p", name="big")
        for s in range(30):
            trackio.log({"loss": 1.0 / (s + 1)}, step=s)
        trackio.finish()
    """, {"TRACKIO_DIR": str(tmp_path)})
    monkeypatch.setattr(trackio, "BATCH", 7)
    live = Live(tmp_path, ["-n", "2", "--format", "jsonl"])
    for _ in range(4):
        live.step()
    assert [r["step"] for r in _rows_by_arm(live.out.getvalue())["big"]] == [28, 29]


def test_tail_f_of_a_run_renamed_while_followed_prints_no_resume_and_no_row_again(tmp_path: Path) -> None:
    """trackio's rename writes the run's rows again with new ids: tail -f printed "resumed at step 0" and every row
    again under the old name; now it prints nothing for it, and the rows logged after under the new name."""
    writers.trackio_rows(tmp_path, "before", range(4))
    live = Live(tmp_path, ["-n", "0"])
    live.step()
    shown = live.out.getvalue()
    assert [line.split()[0] for line in shown.splitlines()[-4:]] == ["0", "1", "2", "3"]
    writers.trackio_rename(tmp_path, "before", "after")
    live.step()
    assert live.out.getvalue() == shown and not live.err.getvalue()
    writers.trackio_rows(tmp_path, "after", range(4, 6), resume="must")
    live.step()
    new = live.out.getvalue()[len(shown):]
    assert "resumed" not in new and [line.split()[0] for line in new.splitlines()[-2:]] == ["4", "5"]
