"""What importing the watch app loads: only what its first frame needs on the UI thread. Ingest (the feed's
read-ahead thread imports it), comparisons, seed means, the run list's digests, chart series and the alert engine
come in where they are used."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

NOT_AT_IMPORT = (
    "steptable.ingest",
    "steptable.compare",
    "steptable.summary",
    "steptable.alerts.engine",
    "steptable.app.seedmeans",
    "steptable.app.runrows",
    "steptable.app.charts.series",
)


def _loaded_by(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_importing_the_app_leaves_the_heavy_parts_out() -> None:
    loaded = _loaded_by("import steptable.app")
    assert "steptable.app.app" in loaded
    assert [m for m in NOT_AT_IMPORT if m in loaded] == []


def test_the_lazy_parts_still_import_where_used() -> None:
    # (the modules that now import them inside functions: each must resolve its names there)
    loaded = _loaded_by("import steptable.app\n"
                        "from steptable.app.widgets.panels import ChartPanel\n"
                        "assert ChartPanel().feeds is not None\n"
                        "from steptable.app.seek import regime_steps\n"
                        "class G:\n    store = None\n"
                        "regime_steps(G(), 'x')\n")
    assert "steptable.app.charts.series" in loaded
    assert {"steptable.ingest", "steptable.alerts.engine", "steptable.summary.trend"} <= loaded


def test_one_runs_read_ahead_leaves_the_alert_engine_and_the_run_list_out(tmp_path: Path) -> None:
    """The first frame waits for the read-ahead: for a run or a few (no run list), it imports neither the alert
    engine (a resume's alerts import it when one comes) nor the run list's index and digests."""
    for arm in ("a", "b"):
        (tmp_path / arm).mkdir()
        (tmp_path / arm / "metrics.jsonl").write_text("".join(json.dumps({"step": i, "loss": 1.0}) + "\n"
                                                              for i in range(50)))
    loaded = _loaded_by("import steptable.app\n"
                        "from steptable.app.feed import Feed\n"
                        f"feed = Feed([{str(tmp_path)!r}], preview_min_bytes=1)\n"
                        "feed.prepare()\n"
                        "runs = [m.run for m in feed.first_messages(wait=30)]\n"
                        "assert runs == ['a/metrics.jsonl', 'b/metrics.jsonl'], runs\n"
                        "assert feed.sweep is None\n")
    assert "steptable.ingest" in loaded
    assert [m for m in ("steptable.alerts.engine", "steptable.summary", "steptable.app.runrows") if m in loaded] == []
